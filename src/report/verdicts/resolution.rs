//! What a single measurement can resolve: the noise inside a step (its per-second QPS series),
//! counter totals too coarse for a ratio and costs whose sample could not cover their step
//! (`~` cells), and whether device IO is the engine's.
//!
//! Owns those judgements, from the stored records and the method's parameters. It must not
//! judge between repeats (that is `verdict`), format anything, or do I/O.

use std::collections::BTreeMap;

use super::super::model::WithinStep;
use crate::results::metrics::{METRICS, Resolution};
use crate::results::{Measurement, Metric, SecondSample};
use crate::stats::{self, CLOCK_TICK_US, MIN_STEP_SECONDS, RESOLUTION_UNITS};

/// (target, step, clients, repeat) of a stored series.
type SeriesKey = (String, String, u32, u32);

/// Per-second ops of every stored series, by (target, step, clients, repeat), in second order.
pub(in crate::report) type SeriesIndex = BTreeMap<SeriesKey, Vec<f64>>;

pub(in crate::report) fn series_index(series: &[SecondSample]) -> SeriesIndex {
    let mut points: BTreeMap<SeriesKey, Vec<(u32, f64)>> = BTreeMap::new();
    for s in series {
        points
            .entry((s.target.clone(), s.step.clone(), s.clients, s.repeat))
            .or_default()
            .push((s.second, s.ops as f64));
    }
    points
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by_key(|p| p.0);
            (k, v.into_iter().map(|p| p.1).collect())
        })
        .collect()
}

/// The per-second ops of measurement `m` (empty when none was stored: a step under a second).
pub(in crate::report) fn series_of<'a>(index: &'a SeriesIndex, m: &Measurement) -> &'a [f64] {
    index
        .get(&(m.target.clone(), m.step.clone(), m.clients, m.repeat))
        .map_or(&[], Vec::as_slice)
}

/// Relative half-width of the 95% interval of the mean per-second QPS: `None` with fewer than
/// 3 seconds, infinite with fewer than 2 effectively independent ones.
fn precision_of(ops: &[f64]) -> (Option<f64>, Option<f64>) {
    match stats::series_precision(ops) {
        Some(p) => (Some(p.cv), Some(p.half_width)),
        None => (None, None),
    }
}

fn judged(seconds: usize, cv: Option<f64>, precision: Option<f64>, min_effect: f64) -> WithinStep {
    let too_short = seconds < MIN_STEP_SECONDS;
    WithinStep {
        seconds: seconds as u32,
        cv,
        precision: precision.filter(|p| p.is_finite()),
        too_short,
        too_noisy: !too_short && !matches!(precision, Some(p) if p <= min_effect),
    }
}

/// Within-step noise of one repeat from its per-second ops.
pub(in crate::report) fn within_step(ops: &[f64], min_effect: f64) -> WithinStep {
    let (cv, precision) = precision_of(ops);
    judged(ops.len(), cv, precision, min_effect)
}

/// Within-step noise over repeats (each repeat's per-second ops): the fewest seconds, the
/// median CV and the median precision (a repeat whose precision cannot be bounded counts as
/// infinitely wide); flagged from those. `None` without repeats.
pub(in crate::report) fn within_step_over(
    repeats: &[&[f64]],
    min_effect: f64,
) -> Option<WithinStep> {
    let seconds = repeats.iter().map(|r| r.len()).min()?;
    let (mut cvs, mut precisions) = (Vec::new(), Vec::new());
    for ops in repeats {
        let (cv, precision) = precision_of(ops);
        cvs.extend(cv);
        precisions.push(precision.unwrap_or(f64::INFINITY));
    }
    Some(judged(
        seconds,
        stats::median(&cvs),
        stats::median(&precisions),
        min_effect,
    ))
}

/// The size of one unit of the counter behind `rule`'s metric (µs, or 1 for counts), given the
/// target's engine: a server's CPU comes from `/proc/PID/stat` in clock ticks, an in-process
/// engine's (SQLite: dbdelta's own process) from `getrusage`, in µs.
fn unit_of(rule: Resolution, in_process: bool) -> f64 {
    match rule {
        Resolution::Cpu { ticks: true } if !in_process => CLOCK_TICK_US,
        _ => 1.0,
    }
}

/// The metric whose total counts `metric`'s resolution units (KB read/written are judged by the
/// number of device reads/writes behind them).
fn counter_of(metric: Metric, rule: Resolution) -> Metric {
    match rule {
        Resolution::CountOf(other) => other,
        _ => metric,
    }
}

/// Mean over the repeats of `ms` that have it of the total behind a per-op value (per-op ×
/// ops), in units; `None` when no repeat has it.
fn total_units(ms: &[&Measurement], per_op: Metric, unit: f64) -> Option<f64> {
    let totals: Vec<f64> = (ms.iter())
        .filter_map(|m| Some(m.values.get(per_op)? * m.ops as f64 / unit))
        .collect();
    (!totals.is_empty()).then(|| totals.iter().sum::<f64>() / totals.len() as f64)
}

/// Whether `metric` of measurement `m` was stored below resolution: its step's counters could
/// not cover it (`sampler::CpuWindow`), so it holds no number.
pub(in crate::report) fn unresolved(m: &Measurement, metric: Metric) -> bool {
    m.below_resolution.iter().any(|id| id == metric.id())
}

/// A side none of whose repeats has `metric`, some because it was below resolution: the side
/// has no value to compare, and not for want of a counter.
fn none_resolved(side: &Side, metric: Metric) -> bool {
    side.repeats.iter().any(|m| unresolved(m, metric))
        && side.repeats.iter().all(|m| m.values.get(metric).is_none())
}

/// One side of a ratio: the non-failed repeats of a target × step × clients, and its engine.
pub(in crate::report) struct Side<'a> {
    pub repeats: Vec<&'a Measurement>,
    /// The target's engine runs inside dbdelta's process (its CPU comes from `getrusage`).
    pub in_process: bool,
}

/// Metrics with a ratio that cannot have one: their totals are below [`RESOLUTION_UNITS`] on
/// both sides (the ratio is counting noise), or a side has no repeat whose sample covered its
/// step (every value there was below resolution when measured).
pub(in crate::report) fn below_resolution(target: &Side, base: &Side) -> Vec<String> {
    METRICS
        .iter()
        .filter(|d| d.relative)
        .filter(|d| {
            let coarse = |side: &Side| {
                d.resolution.is_some_and(|rule| {
                    let counter = counter_of(d.metric, rule);
                    total_units(&side.repeats, counter, unit_of(rule, side.in_process))
                        .is_some_and(|t| t < RESOLUTION_UNITS)
                })
            };
            let unmeasured = |side: &Side| none_resolved(side, d.metric);
            (coarse(target) && coarse(base)) || unmeasured(target) || unmeasured(base)
        })
        .map(|d| d.id.to_string())
        .collect()
}

/// Whether the engine's own IO confirms the device's: both known and within a factor of 2 of
/// each other (both 0 agrees).
pub(in crate::report) fn confirmed(device_kb: Option<f64>, engine_kb: Option<f64>) -> Option<bool> {
    let (d, e) = (device_kb?, engine_kb?);
    Some(if d <= 0.0 || e <= 0.0 {
        d <= 0.0 && e <= 0.0
    } else {
        (0.5..=2.0).contains(&(e / d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Values;

    #[test]
    fn within_step_flags() {
        // 0.3 s steps store no whole second: too short, nothing to estimate.
        let w = within_step(&[], 0.02);
        assert_eq!((w.seconds, w.cv, w.precision), (0, None, None));
        assert!(w.too_short && !w.too_noisy);
        // 8 steady seconds (the series of stats' tests): ±1.67% < 2%: fine.
        let steady = [100.0, 102.0, 98.0, 101.0, 99.0, 103.0, 97.0, 100.0];
        let w = within_step(&steady, 0.02);
        assert!((w.precision.unwrap() - 0.01672041843).abs() < 1e-9, "{w:?}");
        assert!((w.cv.unwrap() - 0.02).abs() < 1e-12);
        assert!(!w.too_short && !w.too_noisy);
        assert!(within_step(&steady, 0.01).too_noisy, "±1.67% > 1%");
        // A level shift leaves fewer than 2 effective seconds: unbounded, so too noisy.
        let w = within_step(&[1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0, 9.0], 0.02);
        assert_eq!(w.precision, None);
        assert!(w.too_noisy && !w.too_short);
    }

    #[test]
    fn within_step_over_repeats_takes_fewest_seconds_and_medians() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0, 103.0, 97.0, 100.0];
        let b = [100.0, 100.0, 100.0, 100.0, 100.0];
        let c = [100.0, 101.0, 99.0, 100.0, 100.0, 101.0];
        let w = within_step_over(&[&a, &b, &c], 0.02).unwrap();
        assert_eq!(w.seconds, 5);
        let cvs: Vec<f64> = [&a[..], &b, &c]
            .iter()
            .map(|r| stats::series_precision(r).unwrap().cv)
            .collect();
        assert_eq!(w.cv, stats::median(&cvs));
        assert!(!w.too_short && !w.too_noisy, "{w:?}");
        let short = [100.0, 100.0];
        let w = within_step_over(&[&a, &short], 0.02).unwrap();
        assert!(w.too_short, "one short repeat makes the step too short");
        assert_eq!(within_step_over(&[], 0.02), None);
    }

    fn m(ops: u64, cpu: f64, cs: f64, reads: f64) -> Measurement {
        Measurement {
            ops,
            values: Values::default().with(&[
                (Metric::ServerCpu, cpu),
                (Metric::Cs, cs),
                (Metric::Reads, reads),
                (Metric::ReadKb, reads * 4.0),
            ]),
            ..Default::default()
        }
    }

    fn side<'a>(repeats: &[&'a Measurement]) -> Side<'a> {
        Side {
            repeats: repeats.to_vec(),
            in_process: false,
        }
    }

    #[test]
    fn coarse_totals_on_both_sides_are_below_resolution() {
        // 10,000 ops: CPU 5 µs/op = 50 ms = 5 ticks (coarse) vs 50 µs/op = 50 ticks; context
        // switches 0.0002/op = 2 vs 0.0005/op = 5 (both coarse); 0 reads on both sides.
        let t = m(10_000, 5.0, 0.0002, 0.0);
        let b = m(10_000, 50.0, 0.0005, 0.0);
        assert_eq!(
            below_resolution(&side(&[&t]), &side(&[&b])),
            ["cs_per_op", "reads_per_op", "read_kb_per_op"],
            "one coarse side is still a finding: 5 ticks against 50"
        );
        let t2 = m(10_000, 9.0, 0.0002, 0.0);
        let b2 = m(10_000, 9.9, 0.002, 0.0);
        assert_eq!(
            below_resolution(&side(&[&t2]), &side(&[&b2])),
            ["server_cpu_us_per_op", "reads_per_op", "read_kb_per_op"],
            "9 and 9.9 ticks are coarse; 20 switches are not"
        );
        // The mean over repeats decides: 8 and 14 ticks average 11.
        let r1 = m(10_000, 8.0, 1.0, 1.0);
        let r2 = m(10_000, 14.0, 1.0, 1.0);
        assert!(below_resolution(&side(&[&r1, &r2]), &side(&[&r1, &r2])).is_empty());
        // Unknown on a side (SQLite has no client CPU) is not "below".
        let mut u = m(10_000, 1.0, 0.0, 0.0);
        u.values.set(Metric::ServerCpu, None);
        let coarse = below_resolution(&side(&[&u]), &side(&[&u]));
        assert!(!coarse.contains(&"server_cpu_us_per_op".into()));
        // SQLite's CPU is dbdelta's getrusage, in µs: 9 ms is 9,000 units, not 0.9 ticks.
        let lite = |ms| Side {
            in_process: true,
            ..side(ms)
        };
        let coarse = below_resolution(&lite(&[&t2]), &lite(&[&b2]));
        assert!(
            !coarse.contains(&"server_cpu_us_per_op".into()),
            "{coarse:?}"
        );
    }

    #[test]
    fn a_side_whose_every_repeat_was_below_resolution_has_no_ratio() {
        // 10,000 ops at 50 µs/op: 50 ticks, a fine total.
        let fine = m(10_000, 50.0, 1.0, 1.0);
        // The CPU window missed the operations; stored as no number, and flagged.
        let mut missed = m(10_000, 0.0, 1.0, 1.0);
        missed.values.set(Metric::ServerCpu, None);
        missed.below_resolution = vec!["server_cpu_us_per_op".into(), "host_cpu_us_per_op".into()];
        let cpu = ["server_cpu_us_per_op"];
        assert_eq!(below_resolution(&side(&[&missed]), &side(&[&fine])), cpu);
        assert_eq!(
            below_resolution(&side(&[&fine, &fine]), &side(&[&missed, &missed])),
            cpu,
            "on the base's side too"
        );
        // One repeat of two missed it: the other's value stands (and the ratio with it).
        assert!(below_resolution(&side(&[&missed, &fine]), &side(&[&fine])).is_empty());
        // What was measured is still judged by its total: 5 ticks on both sides.
        let coarse = m(10_000, 5.0, 1.0, 1.0);
        assert_eq!(
            below_resolution(&side(&[&missed, &coarse]), &side(&[&coarse])),
            cpu
        );
        // A value that is merely unknown (no counter) is n/a, not below resolution.
        let mut unknown = fine.clone();
        unknown.values.set(Metric::ServerCpu, None);
        assert!(below_resolution(&side(&[&unknown]), &side(&[&fine])).is_empty());
    }

    #[test]
    fn device_io_is_confirmed_by_the_engines_own_io() {
        assert_eq!(confirmed(Some(8.0), Some(6.0)), Some(true));
        assert_eq!(
            confirmed(Some(8.0), Some(3.0)),
            Some(false),
            "other processes"
        );
        assert_eq!(
            confirmed(Some(8.0), Some(20.0)),
            Some(false),
            "not yet on the device"
        );
        assert_eq!(confirmed(Some(0.0), Some(0.0)), Some(true));
        assert_eq!(confirmed(Some(0.5), Some(0.0)), Some(false));
        assert_eq!(confirmed(None, Some(1.0)), None);
    }
}
