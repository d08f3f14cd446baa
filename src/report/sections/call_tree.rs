//! A counted step's instruction call tree, as the folded stacks a flame graph draws: built from
//! its function table and the calls between functions (`results::StepFunctions`), in
//! instructions per operation.
//!
//! callgrind keeps the calls between pairs of functions, not whole stacks, so the tree is
//! built by proportion: a function drawn under a caller with a part of its inclusive cost gets
//! that part of its self cost and of each of its calls (it is taken to cost the same per call
//! wherever it is called from, as gprof's and callgrind's own call graph views take it). The
//! roots are what no kept call explains of a function's inclusive cost: a thread's first
//! function, one entered before counting was switched on, one called only by calls under the
//! table's share. A call back into a function already on the stack (recursion through others)
//! is not followed (callgrind counts such a cycle's inner calls in the inclusive costs of
//! both, so a function in one is drawn narrower than its table's cost); a frame under [`StepFunctions::SHARE`] of the step is drawn whole, without
//! its callees, and a call under it is drawn as part of its caller.
//! Must not: read the store, render, or judge a change.

use std::collections::{BTreeMap, HashMap};

use crate::results::{FunctionCost, StepFunctions};

/// The deepest stack drawn: deeper frames are drawn whole, without their callees.
const DEPTH: usize = 96;

/// The step's foreground as folded stacks (`a;b;c`, instructions/op), sorted by stack; empty
/// when the step has no calls stored (counted before dbdelta kept them).
pub fn stacks(f: &StepFunctions) -> Vec<(String, f64)> {
    if f.calls.is_empty() {
        return Vec::new();
    }
    let total: f64 = f.foreground.iter().map(|r| r.own).sum();
    let mut tree = Tree {
        table: (f.foreground.iter())
            .filter(|r| r.name != StepFunctions::OTHER)
            .map(|r| (r.name.as_str(), r))
            .collect(),
        callees: BTreeMap::new(),
        least: StepFunctions::SHARE * total.abs(),
        out: BTreeMap::new(),
    };
    let mut incoming: HashMap<&str, f64> = HashMap::new();
    for c in &f.calls {
        let callees = tree.callees.entry(c.caller.as_str()).or_default();
        callees.push((c.callee.as_str(), c.inclusive));
        *incoming.entry(c.callee.as_str()).or_default() += c.inclusive;
    }
    let mut roots: Vec<(&str, f64)> = (tree.table.values())
        .filter_map(|r| {
            let part = r.inclusive? - incoming.get(r.name.as_str()).copied().unwrap_or(0.0);
            (part >= tree.least && part > 0.0).then_some((r.name.as_str(), part))
        })
        .collect();
    roots.sort_by(|a, b| a.0.cmp(b.0));
    for (root, part) in roots {
        tree.draw(root, part, &mut Vec::new());
    }
    tree.out.into_iter().collect()
}

/// The share of each side's instructions a function's frames must hold for [`anchor`].
const ANCHOR_SHARE: f64 = 0.9;

/// The function both sides' stacks are cut at before they are compared: the most specific one
/// (the smallest share, then the deepest) whose frames hold at least [`ANCHOR_SHARE`] of each
/// side's instructions. Versions differ in how a server reaches its work (PostgreSQL 17 starts a
/// backend through `postmaster_child_launch` and `BackendMain`, 16 calls `PostgresMain` from
/// `ServerLoop`); a differential flame graph matches whole stacks, so without the cut every
/// frame of one side would be new to the other. `None` when no function is common enough.
pub fn anchor(base: &[(String, f64)], target: &[(String, f64)]) -> Option<String> {
    let (b, t) = (through(base), through(target));
    let mut best: Option<(&str, f64, f64)> = None;
    for (name, (share_b, depth)) in &b {
        let Some((share_t, _)) = t.get(name) else {
            continue;
        };
        if *share_b < ANCHOR_SHARE || *share_t < ANCHOR_SHARE {
            continue;
        }
        let share = share_b + share_t;
        let better =
            best.is_none_or(|(_, s, d)| share < s - 1e-9 || (share <= s + 1e-9 && *depth > d));
        if better {
            best = Some((name, share, *depth));
        }
    }
    best.map(|(name, _, _)| name.to_string())
}

/// Per function: the share of `stacks`' total in stacks it is on, and its mean depth there
/// (weighted by value).
fn through(stacks: &[(String, f64)]) -> HashMap<&str, (f64, f64)> {
    let total: f64 = stacks.iter().map(|s| s.1).sum();
    let mut out: HashMap<&str, (f64, f64)> = HashMap::new();
    if total <= 0.0 {
        return out;
    }
    for (stack, v) in stacks {
        let mut seen: Vec<&str> = Vec::new();
        for (depth, name) in stack.split(';').enumerate() {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let e = out.entry(name).or_default();
            e.0 += v / total;
            e.1 += depth as f64 * v;
        }
    }
    for (share, depth) in out.values_mut() {
        *depth /= *share * total;
    }
    out
}

/// `stacks` with every frame above `anchor`'s first one cut away (a stack without it kept
/// whole), equal stacks merged.
pub fn cut(stacks: &[(String, f64)], anchor: &str) -> Vec<(String, f64)> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for (stack, v) in stacks {
        let from = (stack.split(';').position(|n| n == anchor)).map_or(stack.as_str(), |i| {
            let skip: usize = stack.split(';').take(i).map(|n| n.len() + 1).sum();
            &stack[skip..]
        });
        *out.entry(from.to_string()).or_default() += v;
    }
    out.into_iter().collect()
}

struct Tree<'a> {
    table: HashMap<&'a str, &'a FunctionCost>,
    /// Each caller's calls: the callee and the calls' inclusive instructions/op.
    callees: BTreeMap<&'a str, Vec<(&'a str, f64)>>,
    /// The narrowest frame whose callees are drawn.
    least: f64,
    out: BTreeMap<String, f64>,
}

impl<'a> Tree<'a> {
    /// Draw `name` with `width` of its inclusive cost under `path`.
    fn draw(&mut self, name: &'a str, width: f64, path: &mut Vec<&'a str>) {
        path.push(name);
        let inclusive = (self.table.get(name))
            .and_then(|r| r.inclusive)
            .filter(|i| *i > 0.0);
        match inclusive {
            Some(i) if width >= self.least && path.len() < DEPTH => {
                let k = width / i;
                let mut own = self.table[name].own * k;
                let calls = self.callees.get(name).cloned().unwrap_or_default();
                for (callee, cost) in calls {
                    let part = cost * k;
                    if path.contains(&callee) {
                        continue;
                    }
                    match part >= self.least {
                        true => self.draw(callee, part, path),
                        false => own += part,
                    }
                }
                self.emit(path, own);
            }
            _ => self.emit(path, width),
        }
        path.pop();
    }

    fn emit(&mut self, path: &[&str], value: f64) {
        if value <= 0.0 {
            return;
        }
        // `;` separates frames in the folded format: a name's own becomes `:`.
        let names: Vec<String> = path.iter().map(|n| n.replace(';', ":")).collect();
        *self.out.entry(names.join(";")).or_default() += value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CallCost;

    /// A step's table (name, self, inclusive) and calls (caller, callee, inclusive).
    fn step(rows: &[(&str, f64, f64)], calls: &[(&str, &str, f64)]) -> StepFunctions {
        StepFunctions {
            foreground: (rows.iter())
                .map(|(name, own, inclusive)| FunctionCost {
                    name: name.to_string(),
                    own: *own,
                    spread: 0.0,
                    inclusive: Some(*inclusive),
                })
                .collect(),
            background: Vec::new(),
            calls: (calls.iter())
                .map(|(caller, callee, inclusive)| CallCost {
                    caller: caller.to_string(),
                    callee: callee.to_string(),
                    inclusive: *inclusive,
                })
                .collect(),
        }
    }

    #[test]
    fn a_shared_callee_is_split_between_its_callers_in_proportion() {
        // main calls parse (300) and exec (600); both call lookup, whose 400 (100 of its own,
        // 300 in hash) are drawn under each in proportion to their calls (100 and 300).
        let f = step(
            &[
                ("main", 100.0, 1000.0),
                ("parse", 200.0, 300.0),
                ("exec", 300.0, 600.0),
                ("lookup", 100.0, 400.0),
                ("hash", 300.0, 300.0),
            ],
            &[
                ("main", "parse", 300.0),
                ("main", "exec", 600.0),
                ("parse", "lookup", 100.0),
                ("exec", "lookup", 300.0),
                ("lookup", "hash", 300.0),
            ],
        );
        let got = stacks(&f);
        let want = [
            ("main", 100.0),
            ("main;exec", 300.0),
            ("main;exec;lookup", 75.0),
            ("main;exec;lookup;hash", 225.0),
            ("main;parse", 200.0),
            ("main;parse;lookup", 25.0),
            ("main;parse;lookup;hash", 75.0),
        ];
        let want: Vec<(String, f64)> = want.iter().map(|(s, v)| (s.to_string(), *v)).collect();
        assert_eq!(got, want);
        // Every instruction once: the stacks add up to the table's self costs.
        assert_eq!(got.iter().map(|s| s.1).sum::<f64>(), 1000.0);
    }

    #[test]
    fn both_sides_are_cut_at_the_most_specific_function_they_share() {
        let v = |s: &[(&str, f64)]| -> Vec<(String, f64)> {
            s.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        // 16 reaches PostgresMain from ServerLoop, 17 through BackendMain; ExecScan holds
        // 80% of 16: under the share. 5% of 17 is elsewhere.
        let base = v(&[
            ("main;ServerLoop;PostgresMain;ExecScan", 80.0),
            ("main;ServerLoop;PostgresMain", 20.0),
        ]);
        let target = v(&[
            ("main;ServerLoop;BackendMain;PostgresMain;ExecScan", 60.0),
            ("main;ServerLoop;BackendMain;PostgresMain", 35.0),
            ("main;checkpointer", 5.0),
        ]);
        assert_eq!(anchor(&base, &target).as_deref(), Some("PostgresMain"));
        assert_eq!(
            cut(&target, "PostgresMain"),
            v(&[
                ("PostgresMain", 35.0),
                ("PostgresMain;ExecScan", 60.0),
                ("main;checkpointer", 5.0)
            ])
        );
        assert_eq!(anchor(&base, &v(&[("other", 1.0)])), None);
    }

    #[test]
    fn recursion_is_cut_and_unexplained_cost_is_a_root() {
        // a and b call each other (callgrind counts the inner a in both inclusive costs, so
        // only a's 50 not called back are a root, drawn at half its inclusive cost); worker
        // is called for 50 of its 250 (the rest by calls under the share): its other 200 are
        // a root of their own.
        let f = step(
            &[
                ("a", 10.0, 100.0),
                ("b", 40.0, 90.0),
                ("worker", 250.0, 250.0),
            ],
            &[("a", "b", 90.0), ("b", "a", 50.0), ("b", "worker", 50.0)],
        );
        let got: BTreeMap<String, f64> = stacks(&f).into_iter().collect();
        assert_eq!(got["a"], 5.0);
        assert_eq!(got["a;b"], 20.0);
        assert_eq!(got["a;b;worker"], 25.0);
        assert_eq!(got["worker"], 200.0);
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn a_step_stored_before_calls_were_kept_has_no_tree() {
        // The `step_functions` JSON of a run counted before: no `calls`.
        let json = r#"{"foreground":[{"name":"main","self":5.0,"spread":0.0,"inclusive":5.0}],"background":[]}"#;
        let old: StepFunctions = serde_json::from_str(json).unwrap();
        assert!(old.calls.is_empty());
        assert!(stacks(&old).is_empty());
        // And none is written when there are none.
        assert!(!serde_json::to_string(&old).unwrap().contains("calls"));
    }
}
