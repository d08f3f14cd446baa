//! A metric's test as one table cell: its verdict with what qualifies it (no change of the
//! minimum effect, the change it could not see, repeats that disagree, unstable, uneven load),
//! toned by the verdict. Must not: compute statistics or emit a format's markup.

use crate::report::doc::{Cell, Tone};
use crate::report::fmt::{interval, percent, rough_percent};
use crate::report::model::MetricTest;

pub(super) fn verdict_cell(t: &MetricTest, min_effect: f64) -> Cell {
    let mut text = t.verdict.clone();
    if t.verdict == "unchanged" {
        text.push_str(&format!(" (no change of {} or more)", percent(min_effect)));
    } else if t.may_be_below_min_effect {
        text.push_str(&format!(" (may be < {})", percent(min_effect)));
    } else if t.verdict == "within noise" && beyond_detectable(t) {
        // Said of its own numbers: a ratio as large as the detectable change that was not
        // called is one the repeats disagree on, never "a change that could not be seen".
        text.push_str(&format!(
            " (the repeats disagree: its interval {} includes 1, no change)",
            interval(t.ci)
        ));
    } else if t.verdict == "within noise" {
        text.push_str(&format!(
            " (a change below {} could not be seen)",
            rough_percent(t.detectable)
        ));
    }
    if t.unstable {
        text.push_str(", unstable");
    }
    if t.uneven_load {
        text.push_str(", uneven load");
    }
    let tone = match t.verdict.as_str() {
        "regression" => Tone::Worse,
        "improvement" => Tone::Better,
        _ => Tone::Plain,
    };
    Cell { text, tone }
}

/// The step's ratio moved at least as far as the change it could have seen, or that change is
/// 10× or more: either way its repeats disagree, and "a change below D could not be seen" would
/// contradict the ratio beside it.
fn beyond_detectable(t: &MetricTest) -> bool {
    t.detectable >= 9.0 || t.geo_mean.ln().abs() >= (1.0 + t.detectable).ln()
}
