//! The numbers of chart axes: the y range of a relative-QPS chart (zero-based, truncated or
//! logarithmic, and when), round axis ends, tick labels, and the log2 x positions of client
//! counts.
//!
//! Pure arithmetic on values the chart kinds pass in: must not draw (no `plotters`) or read the
//! report model.

/// A y range; linear unless `log`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct YAxis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) log: bool,
}

impl YAxis {
    /// A linear axis that leaves out the part below its lower end.
    pub(super) fn truncated(&self) -> bool {
        !self.log && self.lo > 0.0
    }

    /// Where bars start: 1.0 on a log axis (up is faster, down slower), else the bottom.
    pub(super) fn bar_origin(&self) -> f64 {
        if self.log { 1.0 } else { self.lo }
    }
}

/// Values spanning more than this factor get a logarithmic axis (on a linear one a 200×
/// bar flattens every bar near 1).
pub(super) const LOG_SPAN: f64 = 20.0;

/// The y axis of a relative-QPS chart; it always shows 1.0. Values spanning more than
/// [`LOG_SPAN`] get a log axis over whole decades. Otherwise it is linear from 0, unless every
/// bar is so close to the others that a zero-based axis would hide the differences (all
/// values above 0.6 of the largest): then it starts just below the smallest and says so.
pub(super) fn relative_axis(values: &[f64]) -> YAxis {
    let positive = values.iter().copied().filter(|v| *v > 0.0);
    let lo_v = positive.clone().fold(1.0f64, f64::min);
    let hi_v = positive.fold(1.0f64, f64::max);
    if hi_v / lo_v > LOG_SPAN {
        return YAxis {
            // A hair under the decade, so float rounding cannot drop its tick.
            lo: 10f64.powf((lo_v * 0.95).log10().floor()) * 0.999,
            hi: 10f64.powf((hi_v * 1.05).log10().ceil()),
            log: true,
        };
    }
    let lo_v = values.iter().copied().fold(lo_v, f64::min);
    let hi = nice_ceil(hi_v * 1.08);
    let pad = ((hi_v - lo_v) * 0.15).max(0.03);
    let lo = ((lo_v - pad) / 0.05).floor() * 0.05;
    if lo_v <= 0.6 * hi_v || lo < 0.3 {
        YAxis {
            lo: 0.0,
            hi,
            log: false,
        }
    } else {
        YAxis { lo, hi, log: false }
    }
}

/// A y tick label: no more decimals than the value needs (0.1, 0.25, 1, 2.5, 300).
pub(super) fn tick(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Rounds up to the coarsest round number (a multiple of 1, 0.5, 0.25, 0.2 or 0.1 times a
/// power of ten) that adds less than 25%, so axis ends are round numbers.
pub(super) fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for step in [1.0, 0.5, 0.25, 0.2, 0.1] {
        let unit = magnitude * step;
        let c = (v / unit).ceil() * unit;
        if c / v < 1.25 {
            return c;
        }
    }
    (v / magnitude).ceil() * magnitude
}

/// Where a client count sits on the x axis: log2, so doubling the clients is one step.
pub(super) fn log2_x(clients: u32) -> f64 {
    f64::from(clients).log2()
}

/// The x range around the client counts' log2 positions, with a margin each side.
pub(super) fn log2_range(clients: &[u32]) -> (f64, f64) {
    let lo = clients.first().map_or(0.0, |c| log2_x(*c));
    let hi = clients.last().map_or(1.0, |c| log2_x(*c));
    let pad = ((hi - lo) * 0.06).max(0.25);
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_based_axis_unless_bars_are_close() {
        let a = relative_axis(&[0.2, 1.4]);
        assert_eq!(a.lo, 0.0);
        assert!(!a.truncated());
        assert!(a.hi >= 1.4 * 1.08 - 1e-9);
        let a = relative_axis(&[0.92, 1.07, 1.01]);
        assert!(a.truncated(), "{a:?}");
        assert!(a.lo < 0.92 && a.lo > 0.6, "{a:?}");
        assert!(a.hi > 1.07, "{a:?}");
        // 1.0 is always on the axis, even when every bar is above it.
        let a = relative_axis(&[1.6, 1.7]);
        assert!(a.lo <= 1.0 && a.hi >= 1.7, "{a:?}");
    }

    #[test]
    fn wide_spans_get_a_log_axis_over_whole_decades() {
        let a = relative_axis(&[0.14, 2.5, 209.0]);
        assert!(a.log && !a.truncated(), "{a:?}");
        assert!((a.lo - 0.1).abs() < 0.001 && a.lo <= 0.1, "{a:?}");
        assert_eq!(a.hi, 1000.0);
        assert_eq!(a.bar_origin(), 1.0);
        let a = relative_axis(&[0.5, 9.0]);
        assert!(!a.log, "an 18× span stays linear: {a:?}");
        assert_eq!(a.bar_origin(), 0.0);
    }

    #[test]
    fn tick_labels_drop_needless_zeros() {
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(300.0), "300");
        assert_eq!(tick(0.1), "0.1");
    }

    #[test]
    fn nice_ends() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(close(nice_ceil(1.17), 1.25), "{}", nice_ceil(1.17));
        assert!(close(nice_ceil(3.1), 3.5), "{}", nice_ceil(3.1));
        assert!(close(nice_ceil(9.3), 10.0), "{}", nice_ceil(9.3));
        assert!(
            close(nice_ceil(48_000.0), 50_000.0),
            "{}",
            nice_ceil(48_000.0)
        );
        assert_eq!(nice_ceil(0.0), 1.0);
    }
}
