//! Per-function instructions of callgrind dumps: each function's self cost and inclusive cost
//! (self plus the cost of its calls), by symbol name, summed over the dumps added.
//!
//! Reads callgrind's profile format (version 1, docs/instructions.md): `positions:` and
//! `events:` say how a cost line reads (its subpositions, then one counter per event; the
//! instructions are the `Ir` event's, or the first event's); a `fn=` line starts a function's
//! cost lines, a `cfn=` and `calls=` line pair says the next cost line is the inclusive cost of
//! one call from it; names are compressed as `(id) name` the first time and `(id)` after, in
//! one space shared by `fn=` and `cfn=`. A recursion level's suffix (`f'2`) is dropped, so
//! every level adds to `f`, and a function's calls to itself do not add to its inclusive cost
//! (mutual recursion still does, as in callgrind's own inclusive figures). The calls between
//! functions are kept too, caller and callee by name with the calls' inclusive cost (a call to
//! itself left out), from which a report draws a call tree.
//! Must not: read or remove files, know engines, steps or the store, or time anything.

use std::collections::HashMap;

/// A function's instructions: its own (`own`, callgrind's self cost) and those of everything
/// it called too (`inclusive`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub own: u64,
    pub inclusive: u64,
}

/// Per-function costs of the dumps added, by symbol name, and the calls between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Functions {
    pub costs: HashMap<String, Cost>,
    /// The inclusive instructions of the calls from one function (the key's first name) to
    /// another (its second), summed over the call sites; a function's calls to itself left out.
    pub calls: HashMap<(String, String), u64>,
}

/// How one dump's cost lines read: how many subpositions come before the counters, and which
/// counter is the instructions.
#[derive(Debug, Clone, Copy)]
struct Layout {
    positions: usize,
    ir: usize,
}

impl Functions {
    /// Add the costs of one dump (its text, whole).
    pub fn add_dump(&mut self, text: &str) {
        let mut layout = Layout {
            positions: 1,
            ir: 0,
        };
        let mut names: HashMap<&str, &str> = HashMap::new();
        // The function whose lines these are and its costs so far (added to `own` when the
        // next `fn=` line comes), and this dump's costs by borrowed name.
        let mut current: Option<(&str, Cost)> = None;
        let mut own: HashMap<&str, Cost> = HashMap::new();
        let mut calls: HashMap<(&str, &str), u64> = HashMap::new();
        let mut callee: Option<&str> = None;
        let mut call_line_next = false;
        for line in text.lines() {
            let first = line.as_bytes().first().copied().unwrap_or(b'#');
            if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
                let Some((f, cost)) = current.as_mut() else {
                    continue;
                };
                let n = layout.instructions(line);
                match std::mem::take(&mut call_line_next) {
                    // A call's inclusive cost: the caller's, unless it calls itself.
                    true if callee.is_some_and(|c| bare(c) == *f) => {}
                    true => {
                        cost.inclusive += n;
                        if let Some(c) = callee {
                            *calls.entry((*f, bare(c))).or_default() += n;
                        }
                    }
                    false => {
                        cost.own += n;
                        cost.inclusive += n;
                    }
                }
            } else if let Some(f) = line.strip_prefix("fn=") {
                let f = bare(name(f.trim_end(), &mut names));
                if let Some((name, c)) = current.replace((f, Cost::default())) {
                    add(own.entry(name).or_default(), c);
                }
            } else if let Some(f) = line.strip_prefix("cfn=") {
                callee = Some(name(f.trim_end(), &mut names));
            } else if line.starts_with("calls=") {
                call_line_next = true;
            } else if let Some(v) = line.strip_prefix("positions:") {
                layout.positions = v.split_whitespace().count().max(1);
            } else if let Some(v) = line.strip_prefix("events:") {
                layout.ir = v.split_whitespace().position(|e| e == "Ir").unwrap_or(0);
            }
        }
        own.extend(current.map(|(name, c)| {
            let mut total = own.get(name).copied().unwrap_or_default();
            add(&mut total, c);
            (name, total)
        }));
        for (name, c) in own {
            self.add_cost(name, c);
        }
        for ((caller, callee), n) in calls {
            self.add_call(caller, callee, n);
        }
    }

    /// Add another set's costs to these.
    pub fn add(&mut self, other: &Functions) {
        for (name, c) in &other.costs {
            self.add_cost(name, *c);
        }
        for ((caller, callee), n) in &other.calls {
            self.add_call(caller, callee, *n);
        }
    }

    fn add_cost(&mut self, name: &str, c: Cost) {
        match self.costs.get_mut(name) {
            Some(m) => add(m, c),
            None => {
                self.costs.insert(name.to_string(), c);
            }
        }
    }

    fn add_call(&mut self, caller: &str, callee: &str, n: u64) {
        *(self.calls)
            .entry((caller.to_string(), callee.to_string()))
            .or_default() += n;
    }

    /// The self costs' sum: every instruction of the dumps, once.
    pub fn total(&self) -> u64 {
        self.costs.values().map(|c| c.own).sum()
    }
}

impl Layout {
    /// A cost line's instructions: its counter for `Ir` after the subpositions (a counter
    /// left out is zero).
    fn instructions(&self, line: &str) -> u64 {
        (line.split_whitespace().nth(self.positions + self.ir))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

fn add(to: &mut Cost, c: Cost) {
    to.own += c.own;
    to.inclusive += c.inclusive;
}

/// The name of a `fn=` or `cfn=` value: `(id) name` defines an id, `(id)` uses one, anything
/// else is the name itself.
fn name<'a>(value: &'a str, names: &mut HashMap<&'a str, &'a str>) -> &'a str {
    let Some((id, rest)) = value.strip_prefix('(').and_then(|r| r.split_once(')')) else {
        return value;
    };
    match rest.strip_prefix(' ') {
        Some(n) => {
            names.insert(id, n);
            n
        }
        None => names.get(id).copied().unwrap_or(value),
    }
}

/// A name without callgrind's recursion-level suffix (`'2`).
fn bare(name: &str) -> &str {
    match name.rsplit_once('\'') {
        Some((f, level)) if !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()) => f,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand after the format's description: two positions (instruction address
    /// and line, relative after the first), two events, compressed names defined in a `cfn=`
    /// and used in a later `fn=`, a recursion level, and a counter left out.
    const DUMP: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\n\
        pid: 42\ncmd: server\npart: 1\n\npositions: instr line\nevents: Dr Ir\n\
        summary: 0 1000\n\nob=(1) /usr/bin/server\nfl=(1) main.c\nfn=(1) main\n\
        0x10 3 1 20\n+2 +1 0 5\ncfn=(2) lookup\ncalls=2 0x40 10\n+1 * 4 700\n\
        cfn=(3) free_page\ncalls=1 0x80 20\n* * 1 100\n\nfl=(2) btree.c\nfn=(2)\n\
        0x40 10 2 300\ncfn=(4) lookup'2\ncalls=1 0x40 10\n* * 0 250\n+4 +2 0 150\n\
        fn=(4)\n0x40 10 0 250\n\nfn=(3)\n0x80 20 7 100\n-4 -1\n\ntotals: 0 825\n";

    #[test]
    fn reads_self_and_inclusive_costs_with_compressed_names() {
        let mut f = Functions::default();
        f.add_dump(DUMP);
        let get = |n: &str| f.costs.get(n).copied().unwrap_or_default();
        // main: 20 + 5 of its own; its calls cost 700 and 100.
        assert_eq!(
            get("main"),
            Cost {
                own: 25,
                inclusive: 825
            }
        );
        // lookup and its recursion level are one function; its call to itself adds nothing.
        assert_eq!(
            get("lookup"),
            Cost {
                own: 700,
                inclusive: 700
            }
        );
        assert_eq!(
            get("free_page"),
            Cost {
                own: 100,
                inclusive: 100
            }
        );
        assert_eq!(f.costs.len(), 3);
        assert_eq!(f.total(), 825);
        // The calls: main's two, lookup's call to its own recursion level left out.
        let call = |a: &str, b: &str| f.calls.get(&(a.to_string(), b.to_string())).copied();
        assert_eq!(call("main", "lookup"), Some(700));
        assert_eq!(call("main", "free_page"), Some(100));
        assert_eq!(f.calls.len(), 2);
    }

    #[test]
    fn dumps_add_up_and_the_first_event_counts_when_no_ir() {
        let mut f = Functions::default();
        f.add_dump(DUMP);
        let mut g = Functions::default();
        g.add_dump("events: Cycles Dr\nfn=main\n5 9 1\nfn=(7) other\n6 3\n");
        f.add(&g);
        assert_eq!(
            f.costs["main"],
            Cost {
                own: 34,
                inclusive: 834
            }
        );
        assert_eq!(
            f.costs["other"],
            Cost {
                own: 3,
                inclusive: 3
            }
        );
        // No `positions:` line: one subposition, the line.
        let mut h = Functions::default();
        h.add_dump("events: Ir\nfn=(1) a\n1 10\ncfn=(2) b\ncalls=1 5\n1 40\nfn=(2)\n5 40\n");
        assert_eq!(
            h.costs["a"],
            Cost {
                own: 10,
                inclusive: 50
            }
        );
        assert_eq!(
            h.costs["b"],
            Cost {
                own: 40,
                inclusive: 40
            }
        );
    }

    #[test]
    fn a_recursion_suffix_is_dropped_only_when_it_is_a_level() {
        assert_eq!(bare("f'2"), "f");
        assert_eq!(bare("f'"), "f'");
        assert_eq!(bare("operator'x"), "operator'x");
        assert_eq!(bare("g"), "g");
    }
}
