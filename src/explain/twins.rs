//! Counting the twins of an explanation: each twin's spec (T's with some settings at the
//! base's values), T counted again beside them, the whole twin (again without the settings T's
//! server refused, when its start names them) and, when the whole twin explains a change, the
//! halving search ([`super::search`]), all in one run of their own.
//!
//! Owns the twins' run and what counting them gave ([`Counts`]). Must not: time anything (the
//! counting cells do), or store an explanation (`explain` does, from [`Counts`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, anyhow};

use super::carry::{self, Carried};
use super::{Asked, search};
use crate::plan::{RunPlan, TargetPlan};
use crate::progress::Progress;
use crate::results::Metric;
use crate::runner::{Cells, Grown};
use crate::store::{RunLabel, Store};

/// A twin of `t`: its spec with `settings` at the base's values (lines appended, so they win).
fn twin(t: &TargetPlan, number: usize, settings: &[&Carried]) -> TargetPlan {
    let mut twin = t.clone();
    twin.name = crate::results::twin_name(&t.name, Some(number));
    (twin.settings).extend(
        settings
            .iter()
            .map(|c| t.engine.setting_line(&c.key, &c.base)),
    );
    twin
}

/// What one explanation shares while it counts twins.
struct Twins<'a> {
    plan: RunPlan,
    /// T's spec, prepared (its build fetched or made).
    target: TargetPlan,
    run: Grown,
    store: &'a mut Store,
    asked: &'a Asked,
    progress: &'a Progress,
    interrupt: &'a Arc<AtomicBool>,
    counted: u32,
    /// T counted again beside its twins, per explained step.
    again: Vec<PerOp>,
    /// Carried settings T's server refused the base's value of (it failed to start naming
    /// them), left out of every later twin.
    refused: Vec<usize>,
}

impl Twins<'_> {
    /// Count T again, with nothing changed, beside its twins (the same dbdelta, the same host
    /// at the same time): the count each twin is judged against. Per explained step, its
    /// instructions/op and their half range.
    fn again(&mut self) -> Result<Vec<PerOp>> {
        let mut t = self.target.clone();
        t.name = crate::results::twin_name(&t.name, None);
        (self.progress).line(&format!(
            "explain: counting {} again beside its twins ({})",
            self.asked.target, t.name
        ));
        let counts = self
            .count(t)
            .map_err(|e| match e.downcast::<TwinFailed>() {
                Ok(f) => anyhow!("{}; counted again with nothing changed", f.failure),
                Err(e) => e,
            })?;
        for (c, PerOp { value: v, .. }) in self.asked.steps.iter().zip(&counts) {
            (self.progress).line(&format!(
                "explain: {}: {} counted again {:.0}/op (in the run {:.0}/op: {:.3}x)",
                c.step,
                self.asked.target,
                v,
                c.target,
                v / c.target
            ));
        }
        Ok(counts)
    }

    /// Count a twin with the carried settings `which` at the base's values: per explained
    /// step, `ln(T again / twin)` and its noise.
    fn effect(&mut self, which: &[usize]) -> Result<search::Effect> {
        let settings: Vec<&Carried> = which.iter().map(|&i| &self.asked.carried[i]).collect();
        let number = self.plan.targets.len();
        let t = twin(&self.target, number, &settings);
        let keys: Vec<&str> = settings.iter().map(|c| c.key.as_str()).collect();
        self.progress.line(&format!(
            "explain: counting twin {number} ({}): {} with the base's {}",
            t.name,
            self.asked.target,
            shown_keys(&keys)
        ));
        let name = t.name.clone();
        let counts = self
            .count(t)
            .map_err(|e| match e.downcast::<TwinFailed>() {
                Ok(f) => TwinFailed {
                    keys: shown_keys(&keys),
                    ..f
                }
                .into(),
                Err(e) => e,
            })?;
        let mut effect = search::Effect::default();
        for (twin, again) in counts.iter().zip(&self.again) {
            effect.log.push((again.value / twin.value).ln());
            effect
                .noise
                .push(again.relative_half_range() + twin.relative_half_range());
        }
        let ratios: Vec<String> = (effect.log.iter().zip(&effect.noise))
            .map(|(e, n)| format!("{:.3}x (noise ±{:.1}%)", e.exp(), n * 100.0))
            .collect();
        (self.progress).line(&format!("explain: {name} explains {}", ratios.join(", ")));
        Ok(effect)
    }

    /// Count target `t` (a twin or T again) in the twins' run: per explained step, its
    /// instructions/op and their half range.
    fn count(&mut self, t: TargetPlan) -> Result<Vec<PerOp>> {
        let name = t.name.clone();
        self.plan.targets.push(t);
        let i = self.plan.targets.len() - 1;
        let outcome = (self.run).add(
            &self.plan,
            (i, Cells::CountedOnly),
            self.store,
            self.progress,
            self.interrupt,
        )?;
        self.counted += 1;
        // A twin runs T's build: its record names that build as T's does.
        let (run_id, asked) = (self.run.run_id().to_string(), self.asked);
        (self.store).copy_target_build(&run_id, &name, (&asked.run_id, &asked.target))?;
        let signalled = self.interrupt.load(std::sync::atomic::Ordering::Relaxed);
        if outcome.interrupted || signalled {
            return Err(anyhow!("interrupted while counting twin {name}"));
        }
        if let Some(f) = outcome.failures.first() {
            return Err(TwinFailed {
                failure: f.clone(),
                target: self.asked.target.clone(),
                keys: String::new(),
            }
            .into());
        }
        let data = self.store.load_run(self.run.run_id())?;
        (self.asked.steps.iter())
            .map(|c| {
                (data.measurements.iter())
                    .find(|m| m.target == name && m.step == c.step && m.clients == c.clients)
                    .and_then(|m| {
                        Some(PerOp {
                            value: m.values.get(Metric::ServerInstr)?,
                            half_range: m.values.get(Metric::ServerInstrSpread).unwrap_or(0.0),
                        })
                    })
                    .filter(|p| p.value > 0.0)
                    .ok_or_else(|| anyhow!("{name}: step {} was not counted", c.step))
            })
            .collect()
    }
}

/// A step's count: instructions/op and the half range of its pass pairs.
#[derive(Debug, Clone, Copy)]
pub(super) struct PerOp {
    pub(super) value: f64,
    pub(super) half_range: f64,
}

impl PerOp {
    pub(super) fn relative_half_range(&self) -> f64 {
        self.half_range / self.value
    }
}

/// A twin that failed (its start, its load or its count), with what the runner recorded.
#[derive(Debug, thiserror::Error)]
#[error(
    "{failure}; the twin takes {target}'s spec with the base's values of {keys}: one of them may \
     not be accepted by {target} (its log says which)"
)]
struct TwinFailed {
    failure: String,
    target: String,
    keys: String,
}

/// "a, b, c" or "a, b and 10 more".
fn shown_keys(keys: &[&str]) -> String {
    match keys.len() {
        0..=4 => keys.join(", "),
        n => format!("{} and {} more", keys[..3].join(", "), n - 3),
    }
}

/// What counting the twins gave.
#[derive(Default)]
pub(super) struct Counts {
    /// The whole twin's effect per step.
    pub(super) whole: search::Effect,
    /// The settings found.
    pub(super) found: Vec<search::Found>,
    /// The twins counted, and the run that holds their counts.
    pub(super) twins: u32,
    pub(super) twin_run: String,
    /// The settings T refused, as `key (why)`.
    pub(super) refused: Vec<String>,
    /// T counted again beside the twins, per step.
    pub(super) again: Vec<PerOp>,
}

/// Begin the twins' run from T's prepared spec, count the whole twin and, when it explains a
/// change, bisect; the twins' run is finished (complete only when the search ended).
pub(super) fn count_twins(
    (plan, options, target): (&RunPlan, &str, TargetPlan),
    store: &mut Store,
    asked: &Asked,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
) -> Result<Counts> {
    let mut empty = plan.clone();
    empty.targets.clear();
    let label = RunLabel {
        explains: Some(asked.run_id.clone()),
        ..RunLabel::default()
    };
    let run = Grown::begin(
        &empty,
        store,
        progress,
        options,
        &label,
        crate::remote::start,
    )?;
    let twin_run = run.run_id().to_string();
    let mut twins = Twins {
        plan: empty,
        target,
        run,
        store,
        asked,
        progress,
        interrupt,
        counted: 0,
        again: Vec::new(),
        refused: Vec::new(),
    };
    let found = find(&mut twins);
    let refused: Vec<String> = (twins.refused.iter())
        .map(|&i| {
            let c = &asked.carried[i];
            format!(
                "{} (the target refused the base's value {:?})",
                c.key, c.base
            )
        })
        .collect();
    let Twins {
        plan,
        run,
        store,
        counted,
        again,
        ..
    } = twins;
    run.finish(&plan, store, found.is_ok())?;
    let (whole, found) =
        found.with_context(|| format!("explain: twins' run {twin_run} stopped"))?;
    Ok(Counts {
        whole,
        found,
        twins: counted,
        twin_run,
        refused,
        again,
    })
}

/// Count T again, then the whole twin (again without the settings T refuses, when its start
/// fails naming some), then bisect when it explains at least the threshold, out of its noise,
/// on a step.
fn find(twins: &mut Twins<'_>) -> Result<(search::Effect, Vec<search::Found>)> {
    twins.again = twins.again()?;
    let mut all: Vec<usize> = (0..twins.asked.carried.len()).collect();
    let whole = loop {
        let e = match twins.effect(&all) {
            Ok(whole) => break whole,
            Err(e) => e,
        };
        let failure = e.downcast_ref::<TwinFailed>().map(|f| f.failure.as_str());
        let refused = named_in(failure.unwrap_or(""), &twins.asked.carried, &all);
        let signalled = twins.interrupt.load(std::sync::atomic::Ordering::Relaxed);
        if refused.is_empty() || signalled || twins.refused.len() >= MAX_REFUSED {
            return Err(e);
        }
        let keys: Vec<&str> = (refused.iter())
            .map(|&i| twins.asked.carried[i].key.as_str())
            .collect();
        twins.progress.line(&format!(
            "explain: {} refused the base's {} (its log names them): left out, counting the \
             twin again",
            twins.asked.target,
            shown_keys(&keys)
        ));
        all.retain(|i| !refused.contains(i));
        twins.refused.extend(refused);
    };
    let threshold = twins.asked.threshold;
    let found = match whole.explains(threshold) {
        true => search::narrow(&all, whole.clone(), threshold, &mut |half| {
            twins.effect(half)
        })?,
        false => Vec::new(),
    };
    Ok((whole, found))
}

/// How many refused settings `find` leaves out, one failed start each at most, before it
/// gives up.
const MAX_REFUSED: usize = 8;

/// The settings of `among` whose names the error lines of a failed twin's message name (a
/// line or `;`-separated part that says `error` or `fatal`: a deprecation warning naming a
/// setting is no refusal), as servers write them (`innodb-flush-method` or
/// `innodb_flush_method`, any case), as whole names.
pub(super) fn named_in(message: &str, carried: &[Carried], among: &[usize]) -> Vec<usize> {
    let lower = message.to_ascii_lowercase().replace('-', "_");
    let errors: Vec<&str> = (lower.split(['\n', ';']))
        .filter(|part| part.contains("error") || part.contains("fatal"))
        .collect();
    let text = errors.join("\n");
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let whole = |key: &str| {
        (text.match_indices(key)).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + key.len()..].chars().next();
            !before.is_some_and(word) && !after.is_some_and(word)
        })
    };
    (among.iter().copied())
        .filter(|&i| whole(&carry::normal(&carried[i].key)))
        .collect()
}
