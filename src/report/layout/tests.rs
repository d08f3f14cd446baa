//! Tests of the report's layout.

use crate::report::doc::{Tone, mb, micros, rate, rel_cell, thousands};
use crate::report::fmt::interval;

#[test]
fn unbounded_intervals_are_capped() {
    assert_eq!(interval([0.88, 0.94]), "0.88–0.94");
    assert_eq!(interval([1.0e-9, 4.2e40]), "<0.01–>100");
    assert_eq!(interval([0.011, 99.0]), "0.01–99.00");
}

#[test]
fn relative_cells_are_coloured_only_by_a_verdict() {
    let worse = rel_cell(Some(0.91), Some("regression"));
    assert_eq!((worse.text.as_str(), worse.tone), ("0.91-", Tone::Worse));
    // A cost that fell: below 1, and better.
    let cheaper = rel_cell(Some(0.30), Some("improvement"));
    assert_eq!(
        (cheaper.text.as_str(), cheaper.tone),
        ("0.30-", Tone::Better)
    );
    let faster = rel_cell(Some(1.03), Some("improvement"));
    assert_eq!((faster.text.as_str(), faster.tone), ("1.03+", Tone::Better));
    // Large ratios without a called change are plain and unmarked.
    for verdict in [None, Some("within noise")] {
        let c = rel_cell(Some(8.48), verdict);
        assert_eq!((c.text.as_str(), c.tone), ("8.48", Tone::Plain));
    }
    assert_eq!(rel_cell(None, Some("improvement")).tone, Tone::Plain);
    assert_eq!(rel_cell(Some(0.9504), Some("regression")).text, "0.95-");
    assert_eq!(rel_cell(None, None).text, "n/a");
}

#[test]
fn number_formats() {
    assert_eq!(thousands(1234567.4), "1,234,567");
    assert_eq!(thousands(999.0), "999");
    assert_eq!(rate(Some(12345.6)), "12,346");
    assert_eq!(rate(Some(42.25)), "42.2");
    assert_eq!(rate(None), "n/a");
    assert_eq!(micros(850.2), "850");
    assert_eq!(micros(12345.0), "12k");
    assert_eq!(micros(2500.0), "2.5k");
    assert_eq!(micros(1_500_000.0), "1.5M");
    assert_eq!(mb(Some(52_428_800)), "52.4");
}
