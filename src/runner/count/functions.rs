//! A counted step's per-function instructions per operation, from the per-function callgrind
//! costs of its pairs of passes (`counter::functions`), computed as the step's totals are: the
//! foreground's long pass minus the short one over the operations between them (start-up and
//! connections cancel), the background's the long pass's own over its operations (it follows
//! the clock). Keeps every function at or above [`StepFunctions::SHARE`] of the step's
//! instructions by its self cost or [`StepFunctions::INCLUSIVE_SHARE`] by its inclusive cost,
//! and sums the rest of the self costs into `(other)`; keeps the foreground's calls between
//! functions at or above [`StepFunctions::SHARE`] by their inclusive cost.
//! Must not: run passes, read dumps or store anything (`count.rs` does).

use std::collections::{BTreeMap, HashMap};

use crate::counter::SplitFunctions;
use crate::counter::functions::Functions;
use crate::results::{CallCost, FunctionCost, StepFunctions};

/// One pair of passes' per-function costs and its operations.
pub(super) struct PairFunctions {
    pub short: SplitFunctions,
    pub long: SplitFunctions,
    /// The long pass's operations minus the short one's.
    pub units: f64,
    /// The long pass's operations.
    pub long_units: f64,
}

/// Self and inclusive instructions per operation, by function, of one pair.
type PerOp = HashMap<String, (f64, f64)>;

/// The step's function tables (no background for an in-process engine).
pub(super) fn step_functions(pairs: &[PairFunctions], embedded: bool) -> StepFunctions {
    let foreground: Vec<PerOp> = (pairs.iter())
        .map(|p| per_op(&p.long.foreground, Some(&p.short.foreground), p.units))
        .collect();
    let background: Vec<PerOp> = match embedded {
        true => Vec::new(),
        false => (pairs.iter())
            .map(|p| per_op(&p.long.background, None, p.long_units))
            .collect(),
    };
    let foreground = table(&foreground);
    let total: f64 = foreground.iter().map(|r| r.own).sum();
    StepFunctions {
        calls: calls(pairs, StepFunctions::SHARE * total.abs()),
        foreground,
        background: table(&background),
    }
}

/// The foreground's calls per operation (long minus short), means over the pairs, those of at
/// least `least` instructions/op, largest first.
fn calls(pairs: &[PairFunctions], least: f64) -> Vec<CallCost> {
    let n = pairs.len().max(1) as f64;
    let mut sum: HashMap<&(String, String), f64> = HashMap::new();
    for p in pairs {
        let units = p.units.max(1.0);
        for (key, c) in &p.long.foreground.calls {
            *sum.entry(key).or_default() += *c as f64 / units / n;
        }
        for (key, c) in &p.short.foreground.calls {
            *sum.entry(key).or_default() -= *c as f64 / units / n;
        }
    }
    let mut out: Vec<CallCost> = (sum.into_iter())
        .filter(|(_, v)| *v >= least && *v > 0.0)
        .map(|((caller, callee), inclusive)| CallCost {
            caller: caller.clone(),
            callee: callee.clone(),
            inclusive,
        })
        .collect();
    out.sort_by(|a, b| {
        (b.inclusive.total_cmp(&a.inclusive))
            .then_with(|| (&a.caller, &a.callee).cmp(&(&b.caller, &b.callee)))
    });
    out
}

/// `long` minus `short` (when given), per operation of `units`.
fn per_op(long: &Functions, short: Option<&Functions>, units: f64) -> PerOp {
    let units = units.max(1.0);
    let mut out: PerOp = HashMap::with_capacity(long.costs.len());
    for (name, c) in &long.costs {
        out.insert(name.clone(), (c.own as f64, c.inclusive as f64));
    }
    for (name, c) in short.map(|s| s.costs.iter()).into_iter().flatten() {
        let e = out.entry(name.clone()).or_default();
        e.0 -= c.own as f64;
        e.1 -= c.inclusive as f64;
    }
    for v in out.values_mut() {
        *v = (v.0 / units, v.1 / units);
    }
    out
}

/// The pairs' means by function (a function missing from a pair is 0 there), the kept rows
/// largest self cost first, then `(other)`.
fn table(pairs: &[PerOp]) -> Vec<FunctionCost> {
    if pairs.is_empty() {
        return Vec::new();
    }
    let n = pairs.len() as f64;
    let mut by_name: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for (k, pair) in pairs.iter().enumerate() {
        for (name, v) in pair {
            let values = by_name
                .entry(name)
                .or_insert_with(|| vec![(0.0, 0.0); pairs.len()]);
            values[k] = *v;
        }
    }
    let rows: Vec<FunctionCost> = (by_name.into_iter())
        .map(|(name, values)| {
            let (lo, hi) =
                (values.iter()).fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v.0), h.max(v.0)));
            FunctionCost {
                name: name.to_string(),
                own: values.iter().map(|v| v.0).sum::<f64>() / n,
                spread: (hi - lo) / 2.0,
                inclusive: Some(values.iter().map(|v| v.1).sum::<f64>() / n),
            }
        })
        .collect();
    let total: f64 = rows.iter().map(|r| r.own).sum();
    let least = StepFunctions::SHARE * total.abs();
    let least_inclusive = StepFunctions::INCLUSIVE_SHARE * total.abs();
    let (mut kept, rest): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| {
        r.own.abs() >= least || r.inclusive.is_some_and(|i| i.abs() >= least_inclusive)
    });
    kept.sort_by(|a, b| b.own.total_cmp(&a.own).then_with(|| a.name.cmp(&b.name)));
    if !rest.is_empty() {
        kept.push(FunctionCost {
            name: StepFunctions::OTHER.into(),
            own: rest.iter().map(|r| r.own).sum(),
            spread: rest.iter().map(|r| r.spread).sum(),
            inclusive: None,
        });
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::functions::Cost;

    /// `costs`, each function but `main` and `connect` called from `main` (its inclusive cost).
    fn functions(costs: &[(&str, u64, u64)]) -> Functions {
        let cost = |own, inclusive| Cost { own, inclusive };
        Functions {
            costs: (costs.iter())
                .map(|(n, own, inclusive)| (n.to_string(), cost(*own, *inclusive)))
                .collect(),
            calls: (costs.iter())
                .filter(|(n, _, _)| !["main", "connect", "purge"].contains(n))
                .map(|(n, _, inclusive)| (("main".to_string(), n.to_string()), *inclusive))
                .collect(),
        }
    }

    fn pair(short: &[(&str, u64, u64)], long: &[(&str, u64, u64)], bg: u64) -> PairFunctions {
        let split = |f: &[(&str, u64, u64)], bg: u64| SplitFunctions {
            foreground: functions(f),
            background: functions(&[("purge", bg, bg)]),
        };
        PairFunctions {
            short: split(short, 1),
            long: split(long, bg),
            units: 200.0,
            long_units: 300.0,
        }
    }

    #[test]
    fn long_minus_short_per_operation_with_the_small_ones_summed() {
        // Start-up (`connect`) cancels to nothing; `tiny` is below the share: both go to
        // (other). `main`, under the share by its own cost, is kept for its inclusive cost.
        let short = [
            ("connect", 5_000, 5_000),
            ("main", 100, 100_100),
            ("get", 100_000, 100_000),
        ];
        let long = [
            ("connect", 5_000, 5_000),
            ("main", 250, 300_250),
            ("get", 299_000, 299_000),
            ("tiny", 150, 150),
        ];
        let a = pair(&short, &long, 3_000);
        let b = pair(&short, &long, 6_000);
        let f = step_functions(&[a, b], false);
        let names: Vec<&str> = f.foreground.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["get", "main", "(other)"]);
        assert_eq!(f.foreground[0].own, 995.0);
        assert_eq!(f.foreground[1].own, 0.75);
        assert_eq!(f.foreground[1].inclusive, Some(1_000.75));
        assert_eq!(f.foreground[2].own, 0.75);
        assert_eq!(f.foreground[2].inclusive, None);
        // main's calls of get kept (995/op), of tiny (0.75/op, under the share) left out.
        let call = |caller: &str, callee: &str, inclusive| CallCost {
            caller: caller.into(),
            callee: callee.into(),
            inclusive,
        };
        assert_eq!(f.calls, [call("main", "get", 995.0)]);
        // The background: the long pass's own per operation, its spread half the range.
        assert_eq!(f.background[0].name, "purge");
        assert_eq!(f.background[0].own, 15.0);
        assert_eq!(f.background[0].spread, 5.0);
        assert!(
            step_functions(&[pair(&short, &long, 1)], true)
                .background
                .is_empty()
        );
    }
}
