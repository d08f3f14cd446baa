//! `dbdelta bisect`: the first target of a lab's ordered targets whose metric left the first
//! target's level, found by measuring O(log n) of them: the first, then a binary search of
//! the others for the first changed one (it assumes the sequence changes at most once, for
//! good). Each probe is one target's cells added to ONE stored run ([`Grown`]), so `dbdelta
//! report` renders it like any run.
//!
//! Owns the search, which metric decides and the answer's words. The verdicts are the
//! report's: instructions/op against its counting passes' spread, server CPU/op and QPS from
//! paired repeats. Must not: time anything, choose the steps (the plan's `--only` selection
//! did), or change how a cell runs.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use super::{Cells, Grown, StartServer};
use crate::plan::{RunPlan, TargetPlan};
use crate::progress::Progress;
use crate::results::{Metric, RunData};
use crate::store::{RunLabel, Store};

/// The metric whose verdict decides whether a target changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// Instructions/op of the counting pass (deterministic; its verdict from the passes'
    /// spread).
    Instructions,
    /// Server CPU/op, judged over paired repeats.
    ServerCpu,
    /// QPS, judged over paired repeats.
    Qps,
}

impl Decider {
    /// The metric's name in the answer.
    pub fn words(self) -> &'static str {
        match self {
            Decider::Instructions => "instructions/op",
            Decider::ServerCpu => "server CPU/op",
            Decider::Qps => "QPS",
        }
    }

    /// The `--metric` value (what the store keeps).
    pub fn id(self) -> &'static str {
        match self {
            Decider::Instructions => "instructions",
            Decider::ServerCpu => "cpu",
            Decider::Qps => "qps",
        }
    }

    /// (ratio target / base, verdict) of one relative row, when the row has a verdict.
    fn of(self, r: &crate::report::model::Relative) -> Option<(f64, String)> {
        match self {
            Decider::Instructions => {
                (r.tests.spread(Metric::ServerInstr)).map(|t| (t.ratio, t.verdict.clone()))
            }
            Decider::ServerCpu => {
                let t = r.tests.get(Metric::ServerCpu)?;
                Some((
                    r.ratio(Metric::ServerCpu).unwrap_or(t.geo_mean),
                    t.verdict.clone(),
                ))
            }
            Decider::Qps => {
                let t = r.qps_test.as_ref()?;
                Some((t.geo_mean, t.verdict.clone()))
            }
        }
    }
}

/// What a binary search measured and found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// Positions measured, in order (position 0 first).
    pub probes: Vec<usize>,
    /// The first position that changed; `None`: none of 1..n did.
    pub first_changed: Option<usize>,
}

/// Measure position 0, then binary-search positions 1..n for the first one `changed` says
/// left position 0's level (at most one change, for good: every later position changed too).
/// `changed(0)` measures the base; what it returns is not used. At most 1 + ⌈log2 n⌉ calls.
pub fn search<E>(n: usize, mut changed: impl FnMut(usize) -> Result<bool, E>) -> Result<Search, E> {
    let mut probes = vec![0];
    changed(0)?;
    let (mut lo, mut hi) = (1, n.max(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        probes.push(mid);
        match changed(mid)? {
            true => hi = mid,
            false => lo = mid + 1,
        }
    }
    Ok(Search {
        probes,
        first_changed: (lo < n).then_some(lo),
    })
}

/// One target judged against another on the decisive metric: the step that moved most (of
/// the changed ones, when some did).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub step: String,
    pub clients: u32,
    pub ratio: f64,
    pub verdict: String,
}

impl Judged {
    pub fn changed(&self) -> bool {
        matches!(self.verdict.as_str(), "regression" | "improvement")
    }
}

/// `target` against `base` in the stored run `data`, by the report's verdicts on `by` over
/// every step of the run; an error when no step has a verdict (a failed or missing side).
pub fn judge(data: &RunData, base: &str, target: &str, by: Decider) -> Result<Judged> {
    let model = crate::report::build(data, Some(base))?;
    let mut rows: Vec<Judged> = (model.relative.iter())
        .filter(|r| r.target == target && r.base == base)
        .filter_map(|r| {
            by.of(r).map(|(ratio, verdict)| Judged {
                step: r.step.clone(),
                clients: r.clients,
                ratio,
                verdict,
            })
        })
        .collect();
    // Changed rows first, then the largest move.
    rows.sort_by(|a, b| {
        (b.changed().cmp(&a.changed())).then(b.ratio.ln().abs().total_cmp(&a.ratio.ln().abs()))
    });
    rows.into_iter().next().ok_or_else(|| {
        anyhow!(
            "bisect: {target} has no {} verdict against {base} (a failed step or a cost below \
             its counter's resolution; `dbdelta report {}` shows which)",
            by.words(),
            data.run.id
        )
    })
}

/// What one bisection needs besides the plan and the store.
pub struct Bisect<'a> {
    pub by: Decider,
    /// Why `by` decides, in a few words (printed with the answer).
    pub why: String,
    pub progress: &'a Progress,
    pub interrupt: &'a Arc<AtomicBool>,
    /// The command-line options as stored with the run (JSON).
    pub options: String,
    pub label: RunLabel,
    pub start: StartServer,
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub run_id: String,
    /// The answer in one line (also stored with the run); `None`: interrupted.
    pub text: Option<String>,
}

/// Bisect `plan`'s targets (not yet prepared: each is fetched or built when probed) into one
/// new run of `store`; the answer is stored with the run.
pub fn bisect(plan: &RunPlan, store: &mut Store, b: &Bisect<'_>) -> Result<Answer> {
    let started = Instant::now();
    let mut plan = plan.clone();
    let mut run = Grown::begin(&plan, store, b.progress, &b.options, &b.label, b.start)?;
    let run_id = run.run_id().to_string();
    let steps: Vec<&str> = plan.steps().map(|s| s.label.as_str()).collect();
    store.begin_bisection(&run_id, b.by.id(), &steps.join(","))?;
    b.progress
        .line(&format!("bisect: deciding by {}: {}", b.by.words(), b.why));
    let n = plan.targets.len();
    let mut interrupted = false;
    let found = search(n, |i| {
        probe(&mut plan, i, &mut run, store, b, &mut interrupted)
    });
    run.finish(&plan, store, !interrupted)?;
    let found = match found {
        Ok(found) => found,
        Err(_) if interrupted => {
            return Ok(Answer { run_id, text: None });
        }
        Err(e) => return Err(e.context(format!("bisect: run {run_id} stopped"))),
    };
    let data = store.load_run(&run_id)?;
    let text = answer(&plan, &data, &found, b.by, started.elapsed())?;
    store.set_bisection_answer(&run_id, &text)?;
    Ok(Answer {
        run_id,
        text: Some(text),
    })
}

/// Measure target `i` (prepared first: its fetch or build) in the run and judge it against
/// the first target: whether it changed. A failed target stops the bisection.
fn probe(
    plan: &mut RunPlan,
    i: usize,
    run: &mut Grown,
    store: &mut Store,
    b: &Bisect<'_>,
    interrupted: &mut bool,
) -> Result<bool> {
    let mut one = plan.clone();
    one.targets = vec![plan.targets[i].clone()];
    let prepared = crate::plan::prepare(one, b.progress)?;
    plan.targets[i] = prepared.targets[0].clone();
    let name = plan.targets[i].name.clone();
    let n = plan.targets.len();
    b.progress.line(&format!(
        "bisect: measuring {name} (position {} of {n})",
        i + 1
    ));
    let outcome = run.add(
        plan,
        (i, Cells::TimedThenCounted),
        store,
        b.progress,
        b.interrupt,
    )?;
    if outcome.interrupted {
        *interrupted = true;
        return Err(anyhow!("interrupted"));
    }
    if let Some(f) = outcome.failures.first() {
        return Err(anyhow!(
            "{f}; a failed target cannot be judged, fix it and bisect again"
        ));
    }
    if i == 0 {
        return Ok(false);
    }
    let base = &plan.targets[0];
    let data = store.load_run(run.run_id())?;
    let j = judge(&data, &base.name, &name, b.by)?;
    b.progress.line(&format!(
        "bisect: {}: {} {:.3}x {}, {} → {}",
        shown(&plan.targets[i]),
        b.by.words(),
        j.ratio,
        shown(base),
        j.verdict,
        if j.changed() { "changed" } else { "unchanged" }
    ));
    Ok(j.changed())
}

/// A target with what distinguishes it, when known: `t3 (os)`, `t5 (-O1)` (a custom build's
/// flags), `pg16 (16.4)`.
fn shown(t: &TargetPlan) -> String {
    let built = |b: &crate::results::BuildInfo| match b.variant.as_str() {
        "custom" => b.cflags.clone(),
        v => v.to_string(),
    };
    let what = (t.version.clone())
        .or_else(|| t.built.as_ref().map(built))
        .or_else(|| t.config_name.clone())
        .filter(|w| *w != t.name);
    match what {
        Some(w) => format!("{} ({w})", t.name),
        None => t.name.clone(),
    }
}

/// The answer line: the pair that brackets the change with its ratio and verdict (or that
/// nothing changed, naming the last target measured), the probes, how many were measured and
/// the time.
fn answer(
    plan: &RunPlan,
    data: &RunData,
    found: &Search,
    by: Decider,
    took: std::time::Duration,
) -> Result<String> {
    let t = &plan.targets;
    let head = match found.first_changed {
        Some(k) => {
            let j = judge(data, &t[k - 1].name, &t[k].name, by)
                .with_context(|| format!("judging {} against {}", t[k].name, t[k - 1].name))?;
            format!(
                "first changed: {}: {} {:.3}x {} on {} (c={}), {}",
                shown(&t[k]),
                by.words(),
                j.ratio,
                shown(&t[k - 1]),
                j.step,
                j.clients,
                j.verdict
            )
        }
        None => {
            let last = *found.probes.last().unwrap_or(&0);
            let j = judge(data, &t[0].name, &t[last].name, by)?;
            format!(
                "no change: {}, the last target measured, is {:.3}x {} on {} ({})",
                shown(&t[last]),
                j.ratio,
                shown(&t[0]),
                by.words(),
                j.verdict
            )
        }
    };
    let probes: Vec<&str> = found.probes.iter().map(|&i| t[i].name.as_str()).collect();
    Ok(format!(
        "{head}; probes: {}; {} of {} measured; {}",
        probes.join(", "),
        found.probes.len(),
        t.len(),
        crate::progress::duration(took)
    ))
}

#[cfg(test)]
mod tests {
    use super::{Decider, judge, search};
    use crate::results::Metric;

    /// Probes of a search over `n` positions whose first changed one is `at` (`n`: none).
    fn probes(n: usize, at: usize) -> super::Search {
        search::<()>(n, |i| Ok(i >= at)).unwrap()
    }

    #[test]
    fn finds_every_change_position_within_the_log_bound() {
        for n in [1usize, 2, 3, 8, 13] {
            let bound = 1 + (n as f64).log2().ceil() as usize;
            // Changed from position `at` on (0: every target differs from the first, so
            // position 1 is the first changed; n: none changed).
            for at in 0..=n {
                let s = probes(n, at);
                let want = (at.max(1) < n).then_some(at.max(1));
                assert_eq!(s.first_changed, want, "n={n} at={at}: {s:?}");
                assert!(s.probes.len() <= bound, "n={n} at={at}: {s:?} > {bound}");
                assert_eq!(s.probes[0], 0, "the base is measured first");
                let mut unique = s.probes.clone();
                unique.sort();
                unique.dedup();
                assert_eq!(unique.len(), s.probes.len(), "no position twice: {s:?}");
                // The bracketing pair was measured: the changed one and the one before it.
                if let Some(k) = s.first_changed {
                    assert!(
                        s.probes.contains(&k) && s.probes.contains(&(k - 1)),
                        "{s:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn eight_targets_changing_at_three_take_four_probes() {
        // Eight targets changing at 3: 0, then 4 (changed), 2 (not), 3 (changed).
        let s = probes(8, 3);
        assert_eq!(s.probes, vec![0, 4, 2, 3]);
        assert_eq!(s.first_changed, Some(3));
        // No change at all: the last target is the last one measured.
        let none = probes(8, 8);
        assert_eq!(none.probes, vec![0, 4, 6, 7]);
        assert_eq!(none.first_changed, None);
    }

    #[test]
    fn one_target_is_only_measured() {
        assert_eq!(
            probes(1, 1),
            super::Search {
                probes: vec![0],
                first_changed: None
            }
        );
    }

    /// A run of targets a (the base), b and c, one repeat of steps s1 and s2 at one client,
    /// with instructions/op `a`'s times each target's factor per step (spread ±0.1%).
    fn counted(factors: &[(&str, [f64; 2])]) -> crate::results::RunData {
        use crate::results::{Measurement, RunData, RunInfo, TargetInfo, Values};
        let mut data = RunData {
            run: RunInfo {
                id: "r".into(),
                min_effect: Some(0.02),
                ..Default::default()
            },
            ..Default::default()
        };
        for (target, f) in factors {
            (data.targets).push(TargetInfo {
                name: target.to_string(),
                engine: "sqlite".into(),
                ..Default::default()
            });
            for (i, step) in ["s1", "s2"].into_iter().enumerate() {
                let v = 10_000.0 * f[i];
                data.measurements.push(Measurement {
                    target: target.to_string(),
                    suite: "sysbench".into(),
                    step: step.into(),
                    group: "point".into(),
                    clients: 1,
                    repeat: 1,
                    ops: 1000,
                    qps: Some(1000.0),
                    values: Values::default().with(&[
                        (Metric::ServerInstr, v),
                        (Metric::ServerInstrSpread, v / 1e3),
                    ]),
                    ..Default::default()
                });
            }
        }
        data
    }

    #[test]
    fn a_target_changed_when_one_step_did_and_the_answer_is_that_step() {
        let data = counted(&[
            ("a", [1.0, 1.0]),
            ("b", [1.001, 1.3]),
            ("c", [1.001, 0.999]),
        ]);
        let b = judge(&data, "a", "b", Decider::Instructions).unwrap();
        assert_eq!((b.step.as_str(), b.verdict.as_str()), ("s2", "regression"));
        assert!(b.changed() && (b.ratio - 1.3).abs() < 1e-9, "{b:?}");
        // 1.001 and 0.999 with ±0.1% spreads: the whole range within ±2%, unchanged.
        let c = judge(&data, "a", "c", Decider::Instructions).unwrap();
        assert_eq!(c.verdict, "unchanged");
        assert!(!c.changed());
        // Against another base: c is cheaper than b on s2.
        let c_b = judge(&data, "b", "c", Decider::Instructions).unwrap();
        assert_eq!(
            (c_b.step.as_str(), c_b.verdict.as_str()),
            ("s2", "improvement")
        );
        // One repeat gives server CPU/op no verdict: an error naming the metric, not a guess.
        let e = judge(&data, "a", "b", Decider::ServerCpu).unwrap_err();
        assert!(e.to_string().contains("no server CPU/op verdict"), "{e}");
    }

    #[test]
    fn an_error_stops_the_search() {
        let mut calls = 0;
        let r = search(8, |i| {
            calls += 1;
            if i == 4 { Err("failed") } else { Ok(false) }
        });
        assert_eq!((r, calls), (Err("failed"), 2));
    }
}
