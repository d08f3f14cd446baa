//! Verdicts: for each family (one compared target × client count × metric, over all its steps),
//! the per-step tests of paired ratios, Benjamini–Hochberg over the family, the minimum effect
//! and the adjusted intervals, written into the model's `relative` rows.
//!
//! Owns which ratios form a family and how a `stats::Verdict` becomes a [`MetricTest`]. The
//! arithmetic lives in `stats`; this module must not format anything or do I/O.

pub(super) mod resolution;

use std::collections::BTreeMap;

use super::model::{MetricTest, OpSpreadTest, Relative, ReportModel, SpreadTest};
use crate::results::floors::StepFloor;
use crate::results::metrics::METRICS;
use crate::results::{InstructionPairs, Measurement, Metric};
use crate::stats;

/// What a verdict is on: QPS (higher is better) or a metric of the table with a verdict (a cost:
/// lower is better).
#[derive(Clone, Copy)]
enum Tested {
    Qps,
    Cost(Metric),
}

impl Tested {
    /// QPS, then the table's metrics with a verdict from paired repeats, in table order.
    fn all() -> impl Iterator<Item = Tested> {
        let costs = METRICS
            .iter()
            .filter(|d| d.verdict.is_some() && d.spread.is_none());
        std::iter::once(Tested::Qps).chain(costs.map(|d| Tested::Cost(d.metric)))
    }

    /// The field name (`qps`, the metric's id).
    fn name(self) -> &'static str {
        match self {
            Tested::Qps => "qps",
            Tested::Cost(m) => m.id(),
        }
    }

    fn get(self, m: &Measurement) -> Option<f64> {
        match self {
            Tested::Qps => m.qps,
            Tested::Cost(metric) => m.values.get(metric),
        }
    }
}

/// Per-repeat ratios target / base of `get` for one step, paired by repeat number, over the
/// non-failed repeats of both; and whether the two sides of some pair ran under load from
/// other processes that differed by more than [`UNEVEN_LOAD_CORES`].
fn paired_ratios(ms: &[Measurement], r: Pair<'_>, tested: Tested) -> (Vec<f64>, bool) {
    let values = |target: &str| -> BTreeMap<u32, (f64, Option<f64>)> {
        ms.iter()
            .filter(|m| m.target == target && m.step == r.step && m.clients == r.clients)
            .filter(|m| !m.failed)
            .filter_map(|m| tested.get(m).map(|v| (m.repeat, (v, others_cores(m)))))
            .collect()
    };
    let base = values(r.base);
    let mut uneven = false;
    let ratios = (values(r.target).into_iter())
        .filter_map(|(repeat, (t, load))| {
            let (b, base_load) = base.get(&repeat).copied()?;
            if let (Some(x), Some(y)) = (load, base_load) {
                uneven |= (x - y).abs() > UNEVEN_LOAD_CORES;
            }
            stats::ratio(Some(t), Some(b))
        })
        .collect();
    (ratios, uneven)
}

/// Why a step's timed ratios are unmeasurable: the repeats of either side that completed no
/// event in their measured period (their QPS and per-op costs are `None`, so a mean or a
/// paired test would stand on the other repeats alone and disagree with each other). `None`
/// when every non-failed repeat completed some.
fn no_event(ms: &[Measurement], r: Pair<'_>) -> Option<String> {
    let empty: Vec<String> = (ms.iter())
        .filter(|m| m.step == r.step && m.clients == r.clients && !m.failed)
        .filter(|m| m.target == r.base || m.target == r.target)
        .filter(|m| m.qps.is_none())
        .map(|m| {
            format!(
                "{} repeat {} completed no event in its {:.1} s ({} errors)",
                m.target,
                m.repeat,
                m.seconds,
                m.errors.total()
            )
        })
        .collect();
    (!empty.is_empty()).then(|| empty.join("; "))
}

/// A per-op (or per-event) cost of the timed repeats: what a repeat without a completed event
/// leaves without a value. Instructions come from the counting passes and stay.
fn timed_per_op(metric: Metric) -> bool {
    use crate::results::metrics::Per;
    let counted = [
        Metric::ServerInstr,
        Metric::ServerInstrSpread,
        Metric::ServerBgInstr,
        Metric::ClientInstr,
    ];
    metric.def().per != Per::Step && !counted.contains(&metric)
}

/// Which two sides a relative row compares: target and base, step and client count.
#[derive(Clone, Copy)]
struct Pair<'a> {
    target: &'a str,
    base: &'a str,
    step: &'a str,
    clients: u32,
}

impl<'a> Pair<'a> {
    fn of(r: &'a Relative) -> Pair<'a> {
        Pair {
            target: &r.target,
            base: &r.base,
            step: &r.step,
            clients: r.clients,
        }
    }
}

/// Two sides of a pair whose other processes' CPU differed by more than this many cores ran
/// under unequal conditions: such a step is judged on its own variance, not its group's (the
/// moderated test assumes a step's noise is like its group's and independent of the sides).
/// On the 2-core development machine, A/A runs at 3 repeats called 1 step in 21 runs without
/// it and none with it (docs/verdicts.md); at 0.25 cores nearly every step of a busy host was
/// flagged and the moderated test lost its power.
pub(super) const UNEVEN_LOAD_CORES: f64 = 1.0;

/// CPU of processes other than the server and dbdelta's clients during the step, in cores:
/// (host − server − client) CPU per op × QPS. `None` when the host's or server's is unknown.
fn others_cores(m: &Measurement) -> Option<f64> {
    let host = m.values.get(Metric::HostCpu)?;
    let ours = m.values.get(Metric::ServerCpu)? + m.values.get(Metric::ClientCpu).unwrap_or(0.0);
    Some(((host - ours) * m.qps? / 1e6).max(0.0))
}

/// The tests of one family (`rows` of the model, one metric): the noise is pooled within a
/// report group (reads with reads, writes with writes), and a step whose sides ran under
/// uneven load is a stratum of its own. Returns each row's paired repeats and test.
fn family_tests(
    model: &ReportModel,
    ms: &[Measurement],
    rows: &[usize],
    tested: Tested,
) -> Vec<(usize, Option<MetricTest>)> {
    let (metric, higher) = (tested.name(), matches!(tested, Tested::Qps));
    let (sets, uneven): (Vec<Vec<f64>>, Vec<bool>) = (rows.iter())
        .map(|&i| {
            let r = &model.relative[i];
            match r.below_resolution.iter().any(|f| f == metric) {
                true => (Vec::new(), false),
                false => paired_ratios(ms, Pair::of(r), tested),
            }
        })
        .unzip();
    let strata: Vec<String> = (rows.iter().zip(&uneven))
        .map(|(&i, &u)| match u {
            false => model.relative[i].group.clone(),
            true => format!("uneven load: {}", model.relative[i].step),
        })
        .collect();
    let strata: Vec<&str> = strata.iter().map(String::as_str).collect();
    let verdicts = stats::family_verdicts(&sets, &strata, model.method.rule(higher));
    (sets.iter().zip(verdicts).zip(&uneven))
        .map(|((set, v), &u)| {
            let test = v.map(|v| MetricTest {
                uneven_load: u,
                ..metric_test(metric, higher, set.len(), &v)
            });
            (set.len(), test)
        })
        .collect()
}

pub(super) fn metric_test(
    metric: &str,
    higher: bool,
    repeats: usize,
    v: &stats::Verdict,
) -> MetricTest {
    MetricTest {
        metric: metric.to_string(),
        higher_is_better: higher,
        paired_repeats: repeats as u32,
        geo_mean: v.test.geo_mean(),
        p: v.test.p,
        df: v.test.df,
        detectable: v.detectable,
        q: v.q,
        selected: v.selected,
        family_size: v.family_size as u32,
        family_selected: v.family_selected as u32,
        ci: v.ci,
        ci_level: v.ci_level,
        ci95: v.ci95,
        verdict: v.change.as_str().to_string(),
        may_be_below_min_effect: v.may_be_below_min_effect,
        unstable: v.unstable,
        uneven_load: false,
    }
}

/// How far instructions/op and CPU/op ratios may differ before the report says so.
const DISAGREEMENT: f64 = 1.25;

/// Pairs that can be matched: at least two, every value finite.
fn usable(p: &InstructionPairs) -> Option<&InstructionPairs> {
    Some(p).filter(|p| p.per_op.len() >= 2 && p.per_op.iter().all(|v| v.is_finite()))
}

/// The foreground instructions/op of each pair of passes of `target`'s counted row.
fn instruction_pairs<'a>(
    ms: &'a [Measurement],
    r: &Relative,
    target: &str,
) -> Option<&'a InstructionPairs> {
    (ms.iter())
        .find(|m| m.target == target && m.step == r.step && m.clients == r.clients)
        .and_then(|m| m.instruction_pairs.as_ref())
        .and_then(usable)
}

/// The seed-matched pairs of passes of two sides, as their ratios (target / base) with the
/// server start that counted each.
struct PairRange {
    range: [f64; 2],
    pairs: u32,
    /// Half the range of the starts' mean ratios over their mean, where pairs were counted
    /// on two or more starts and the starts disagree more than the pairs within a start.
    between_starts: Option<f64>,
}

/// The lowest and highest ratio of the seed-matched pairs of passes (the k-th of the target
/// over the k-th of the base, as far as both counted: a side whose first pairs disagreed
/// counted more), and how many; `None` when the two ran different numbers of events (then
/// their pairs touched different rows). Where the starts' mean ratios disagree more than the
/// pairs within a start (`between starts`), the range is the mean ratio moved by the starts'
/// whole range either way, as a side's spread moves it: two starts of one server differ by
/// that much, and the pairs of one start cannot show it.
fn pair_range(b: &InstructionPairs, t: &InstructionPairs) -> Option<PairRange> {
    if b.events != t.events {
        return None;
    }
    let ratios: Vec<(u32, f64)> = (0..t.per_op.len())
        .filter_map(|i| {
            let base = b.by_seed(t.seed(i))?;
            Some((
                t.start(i),
                if base > 0.0 { t.per_op[i] / base } else { 0.0 },
            ))
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let (lo, hi) = (ratios.iter()).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), (_, x)| {
        (l.min(*x), h.max(*x))
    });
    let mut out = PairRange {
        range: [lo, hi],
        pairs: ratios.len() as u32,
        between_starts: None,
    };
    if let Some(between) = starts_disagree(&ratios) {
        let mean = ratios.iter().map(|r| r.1).sum::<f64>() / ratios.len() as f64;
        out.range = [
            lo.min(mean / (1.0 + 2.0 * between)),
            hi.max(mean * (1.0 + 2.0 * between)),
        ];
        out.between_starts = Some(between);
    }
    Some(out)
}

/// The disagreement between starts below which they agree, whatever the pairs do: a tenth
/// of a percent (two identical SQLite targets' starts differed by less than 0.005% on
/// `update-index`, where their pairs agreed to the instruction).
const STARTS_RESOLUTION: f64 = 0.001;

/// Half the range of the starts' mean ratios over their mean, when two or more starts
/// counted pairs and that is more than the widest half-range of the ratios within one start
/// and than [`STARTS_RESOLUTION`].
fn starts_disagree(ratios: &[(u32, f64)]) -> Option<f64> {
    let mut starts: Vec<u32> = ratios.iter().map(|r| r.0).collect();
    starts.sort_unstable();
    starts.dedup();
    if starts.len() < 2 {
        return None;
    }
    let per_start: Vec<Vec<f64>> = (starts.iter())
        .map(|s| ratios.iter().filter(|r| r.0 == *s).map(|r| r.1).collect())
        .collect();
    let relative = |v: &[f64]| {
        crate::results::pairs::summary(v).map_or(0.0, |(m, h)| if m > 0.0 { h / m } else { 0.0 })
    };
    let means: Vec<f64> = (per_start.iter())
        .filter_map(|v| crate::results::pairs::summary(v).map(|s| s.0))
        .collect();
    let between = relative(&means);
    let within = per_start.iter().map(|v| relative(v)).fold(0.0, f64::max);
    (between > within && between >= STARTS_RESOLUTION).then_some(between)
}

/// Whether seed-matched pairs may be judged by their own range: pairing removed most of what
/// varies from pair to pair (their ratios' half-range at most half of either side's own
/// half-range), or the sides hardly vary anyway (both within half the minimum effect). When
/// the pairs' ratios vary as much as the sides do, what varies is not the rows a pair touched
/// but the server's state (on MariaDB, how far purge has got), which differs between two
/// servers as a whole: the pairs prove nothing, and the sides' spreads judge.
fn pairing_explains([low, high]: [f64; 2], sides: [f64; 2], min_effect: f64) -> bool {
    let half = (high - low) / (high + low);
    let (least, most) = (sides[0].min(sides[1]), sides[0].max(sides[1]));
    half <= least / 2.0 || most <= min_effect / 2.0
}

/// A counted cost's verdict from its ratio and range: a change when 1 lies outside the range
/// and the ratio is beyond ±`min_effect`; `unchanged` when the whole range lies within it;
/// `unmeasurable` when the range reaches zero (the passes disagree by more than half).
pub(super) fn range_verdict(ratio: f64, [low, high]: [f64; 2], min_effect: f64) -> &'static str {
    let band = min_effect.ln_1p();
    if low <= 0.0 || !ratio.is_finite() {
        "unmeasurable"
    } else if low > 1.0 && ratio.ln() >= band {
        "regression"
    } else if high < 1.0 && -ratio.ln() >= band {
        "improvement"
    } else if low.ln() > -band && high.ln() < band {
        "unchanged"
    } else {
        "within noise"
    }
}

/// The verdict on `metric` (judged against its `spread` metric) of one relative row, from the
/// two sides' aggregates: the ratio, and the range of the seed-matched pass pairs' ratios (or,
/// without pairs, the range the sides' spreads allow).
fn spread_test(
    model: &ReportModel,
    (ms, floors): (&[Measurement], &[StepFloor]),
    r: &Relative,
    metric: Metric,
    spread: Metric,
) -> Option<SpreadTest> {
    let side = |target: &str| {
        let a = model.aggregate(target, &r.step, r.clients)?;
        Some((a.get(metric)?, a.get(spread).unwrap_or(0.0)))
    };
    let counted = (metric == Metric::ServerInstr)
        .then(|| {
            Some((
                instruction_pairs(ms, r, &r.base)?,
                instruction_pairs(ms, r, &r.target)?,
            ))
        })
        .flatten();
    let pairs = counted.and_then(|(b, t)| pair_range(b, t));
    let values = counted.map(|(b, t)| (b.per_op.as_slice(), t.per_op.as_slice()));
    let sides = (side(&r.base)?, side(&r.target)?);
    let cpu_ratio = r.ratio(Metric::ServerCpu);
    let floor = (metric == Metric::ServerInstr)
        .then(|| floor_of(floors, r))
        .flatten();
    judge(
        metric,
        sides,
        (pairs, values),
        (model.method.min_effect, floor),
        cpu_ratio,
    )
}

/// The step's floor for this pair of targets: the larger of the two builds' floors where
/// either was calibrated (`dbdelta calibrate`); `None`: neither was.
fn floor_of(floors: &[StepFloor], r: &Relative) -> Option<f64> {
    (floors.iter())
        .filter(|f| f.step == r.step && f.clients == r.clients)
        .filter(|f| f.target == r.base || f.target == r.target)
        .map(|f| f.floor)
        .reduce(f64::max)
}

/// A change's verdict held back where the range does not clear the step's floor either way:
/// identical servers of the build moved that far, so the change must pass it as well as the
/// minimum effect.
fn under_floor(verdict: &'static str, [low, high]: [f64; 2], floor: Option<f64>) -> &'static str {
    match (verdict, floor) {
        ("regression" | "improvement", Some(f)) if low <= 1.0 + f && high >= 1.0 / (1.0 + f) => {
            "within noise"
        }
        _ => verdict,
    }
}

/// The foreground instructions/op of each pair of passes, base's and target's.
type SideValues<'a> = (&'a [f64], &'a [f64]);

/// Pairs of passes on a side from which the range is a 95% interval over the pairs (Welch's,
/// [`stats::welch_ratio_interval`]) rather than the sides' ranges moved by their whole width:
/// the counting pass counts this many and more where three disagreed (7,
/// `runner::count::WIDE_PAIRS`).
const INTERVAL_PAIRS: usize = 5;

/// The range of a counted cost's ratio when seed-matched pairs do not explain the sides'
/// variation: a 95% interval over the pairs where a side counted [`INTERVAL_PAIRS`] or more
/// (with how many each side counted), otherwise each side moved by its whole range (twice its
/// half-range) against the change.
fn sides_range(
    ((b, sb), (t, st)): ((f64, f64), (f64, f64)),
    values: Option<SideValues<'_>>,
) -> ([f64; 2], Option<[u32; 2]>) {
    let many = values.filter(|(b, t)| b.len().max(t.len()) >= INTERVAL_PAIRS);
    if let Some((bv, tv)) = many
        && let Some(range) = stats::welch_ratio_interval(bv, tv, 0.95)
    {
        return (range, Some([bv.len() as u32, tv.len() as u32]));
    }
    let low = (t - 2.0 * st) / (b + 2.0 * sb);
    let high = match b - 2.0 * sb {
        d if d > 0.0 => (t + 2.0 * st) / d,
        _ => f64::INFINITY,
    };
    ([low, high], None)
}

/// A counted cost's test from both sides' (value, half-range) and, where pairing explains
/// their variation, the range of their seed-matched pairs; otherwise [`sides_range`] over
/// the sides' pairs' `values`.
fn judge(
    metric: Metric,
    ((b, sb), (t, st)): ((f64, f64), (f64, f64)),
    (pairs, values): (Option<PairRange>, Option<SideValues<'_>>),
    (min_effect, floor): (f64, Option<f64>),
    cpu_ratio: Option<f64>,
) -> Option<SpreadTest> {
    if b <= 0.0 || t <= 0.0 {
        return None;
    }
    let ratio = t / b;
    let sides = [sb / b, st / t];
    let between_starts = pairs.as_ref().and_then(|p| p.between_starts);
    let paired = pairs.filter(|p| pairing_explains(p.range, sides, min_effect));
    let (range, pairs, interval) = match paired {
        Some(p) => (p.range, p.pairs, None),
        None => {
            let (range, interval) = sides_range(((b, sb), (t, st)), values);
            (range, 0, interval)
        }
    };
    let verdict = under_floor(range_verdict(ratio, range, min_effect), range, floor);
    Some(SpreadTest {
        metric: metric.id().into(),
        ratio,
        range,
        base_spread: sb / b,
        target_spread: st / t,
        paired: pairs,
        interval,
        between_starts,
        floor,
        verdict: verdict.into(),
        cpu_ratio,
        cpu_disagrees: cpu_ratio.is_some_and(|c| (c / ratio).ln().abs() > DISAGREEMENT.ln()),
    })
}

/// The instructions verdicts of `r`'s operation types counted on their own: each of the
/// base's first-repeat rows with a count against the target's row of the same role and type.
fn op_tests(ms: &[Measurement], r: &Relative, min_effect: f64) -> Vec<OpSpreadTest> {
    let ops = |target: &str| {
        (ms.iter())
            .filter(|m| m.target == target && m.step == r.step && m.clients == r.clients)
            .min_by_key(|m| m.repeat)
            .map(|m| m.operations.as_slice())
            .unwrap_or_default()
    };
    let targets = ops(&r.target);
    (ops(&r.base).iter())
        .filter_map(|b| {
            let bi = b.instructions.as_ref()?;
            let t = (targets.iter()).find(|t| t.role == b.role && t.op == b.op)?;
            let ti = t.instructions.as_ref()?;
            let (bp, tp) = (usable(&bi.pairs)?, usable(&ti.pairs)?);
            let values = Some((bp.per_op.as_slice(), tp.per_op.as_slice()));
            let sides = ((bi.server, bi.spread), (ti.server, ti.spread));
            let counted = (pair_range(bp, tp), values);
            let test = judge(
                Metric::ServerInstr,
                sides,
                counted,
                (min_effect, None),
                None,
            )?;
            Some(OpSpreadTest {
                role: b.role.clone(),
                op: b.op.clone(),
                base: bi.server,
                value: ti.server,
                test,
            })
        })
        .collect()
}

/// Fills the verdicts of metrics judged against their own spread (one repeat suffices), and
/// those of operation types counted on their own.
fn apply_spread(model: &mut ReportModel, (ms, floors): (&[Measurement], &[StepFloor])) {
    for i in 0..model.relative.len() {
        for d in METRICS.iter().filter(|d| d.verdict.is_some()) {
            let Some(spread) = d.spread else { continue };
            let test = spread_test(model, (ms, floors), &model.relative[i], d.metric, spread);
            model.relative[i].tests.set_spread(d.metric, test);
        }
        model.relative[i].counted_ops = op_tests(ms, &model.relative[i], model.method.min_effect);
    }
}

/// Fills `qps_test`, the cost verdicts (`tests`: `server_cpu_test`) and the QPS summary fields (`paired_repeats`,
/// `geo_mean`, `ci95`, `verdict`, `unstable`) of every relative row. A step whose server CPU
/// is below resolution on both sides is left out of the CPU family.
pub(super) fn apply(model: &mut ReportModel, (ms, floors): (&[Measurement], &[StepFloor])) {
    apply_spread(model, (ms, floors));
    for r in model.relative.iter_mut() {
        r.unmeasurable = no_event(ms, Pair::of(r));
        if r.unmeasurable.is_some() {
            r.qps = None;
            for d in METRICS
                .iter()
                .filter(|d| d.relative && timed_per_op(d.metric))
            {
                r.ratios.0.set(d.metric, None);
            }
        }
    }
    if model.method.test == "none" {
        return; // separate runs: their repeats are not pairs (`compare`)
    }
    let mut families: BTreeMap<(String, u32), Vec<usize>> = BTreeMap::new();
    for (i, r) in model.relative.iter().enumerate() {
        if r.unmeasurable.is_some() {
            continue; // no timed test: its ratio would stand on the other repeats alone
        }
        families
            .entry((r.target.clone(), r.clients))
            .or_default()
            .push(i);
    }
    for rows in families.values() {
        for tested in Tested::all() {
            for (&i, (n, test)) in rows.iter().zip(family_tests(model, ms, rows, tested)) {
                let r = &mut model.relative[i];
                // One truth per number: where a test judged the step, its ratio is the
                // step's ratio in every table (not the ratio of the means beside it).
                match tested {
                    Tested::Cost(cost) => {
                        if let Some(t) = &test {
                            r.ratios.0.set(cost, Some(t.geo_mean));
                        }
                        r.tests.set(cost, test)
                    }
                    Tested::Qps => {
                        if let Some(t) = &test {
                            r.qps = Some(t.geo_mean);
                        }
                        r.paired_repeats = n as u32;
                        r.geo_mean = test.as_ref().map(|t| t.geo_mean);
                        r.ci95 = test.as_ref().map(|t| t.ci95);
                        r.verdict = test.as_ref().map(|t| t.verdict.clone());
                        r.unstable = test.as_ref().is_some_and(|t| t.unstable);
                        r.qps_test = test;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Values;

    fn m(target: &str, repeat: u32, qps: f64, host: f64, server: f64) -> Measurement {
        Measurement {
            target: target.into(),
            step: "s".into(),
            clients: 1,
            repeat,
            qps: Some(qps),
            values: Values::default().with(&[(Metric::HostCpu, host), (Metric::ServerCpu, server)]),
            ..Default::default()
        }
    }

    #[test]
    fn uneven_load_is_other_processes_cpu_differing_by_more_than_a_core() {
        // 10,000 ops/s: (host − server) µs/op × QPS / 1e6 = cores used by other processes.
        let a = m("a", 1, 10_000.0, 50.0, 40.0);
        assert_eq!(others_cores(&a), Some(0.1));
        let r = Pair {
            target: "b",
            base: "a",
            step: "s",
            clients: 1,
        };
        // Side b: 0.1 + 1.0 cores of others → not more than a core apart; 0.1 + 1.2 → uneven.
        let even = [a.clone(), m("b", 1, 10_000.0, 150.0, 40.0)];
        let (ratios, uneven) = paired_ratios(&even, r, Tested::Qps);
        assert_eq!((ratios, uneven), (vec![1.0], false));
        let busy = [a.clone(), m("b", 1, 10_000.0, 170.0, 40.0)];
        assert!(paired_ratios(&busy, r, Tested::Qps).1);
        // Unknown host CPU: nothing to judge by.
        let mut blind = m("b", 1, 10_000.0, 170.0, 40.0);
        blind.values.set(Metric::HostCpu, None);
        assert!(!paired_ratios(&[a, blind], r, Tested::Qps).1);
    }
}
