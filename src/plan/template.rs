//! The lab `dbdelta init` writes: a commented starting point that parses and plans as is.
//!
//! Owns the template's text; what differs per engine is its family's [`Starter`]. Must not:
//! write files (the CLI does), or name a key `plan::lab` does not accept (the tests parse and
//! plan every starter).

use std::fmt::Write;

use crate::engine::Starter;

/// Every starter the families offer, in registry order (the first is `init`'s default).
pub fn starters() -> Vec<&'static Starter> {
    (crate::engine::families::registry().into_iter())
        .flat_map(|f| f.starters().iter())
        .collect()
}

/// The starter for `engine = "NAME"`.
pub fn starter(name: &str) -> Option<&'static Starter> {
    starters().into_iter().find(|s| s.engine == name)
}

/// The commented lab of starter `v`, as the file `file` (named in its comments).
pub fn lab(v: &Starter, file: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# A dbdelta lab, written by `dbdelta init`. Every key: docs/lab.md.
# Try it at tiny scale first, then for real:
#
#   dbdelta plan {file} --quick    # what it will do, how long, how much disk
#   dbdelta run {file} --quick     # seconds per step: for trying things out
#   dbdelta run {file}             # the scale below
#
[lab]
name = "{title}"
repeats = 3              # 1-1000; 2 or more give verdicts; "auto" repeats undecided steps
clients = [1]            # client counts to sweep, e.g. [1, 4, 16]
# order = "interleaved"  # or "sequential"
# placement = "os"       # CPU placement: "os", "shared" or "split"

# The targets: the first is the base, every other one is reported relative to it.
[[target]]
name = "a"               # letters, digits, '.', '_' and '-'
engine = "{engine}"
{source}settings = ["{a}"]
# config = "a.cnf"       # a config file, one setting per line (relative to this file)

[[target]]
name = "b"
engine = "{engine}"
{source}settings = ["{b}"]

# The sysbench suite's scale (run --rows, --tables and --time override it).
[suite.sysbench]
tables = 1               # 1-1000
rows = 100_000           # per table
read_secs = 10           # measured seconds of each read step
write_secs = 10          # measured seconds of each write step
warmup_secs = 2          # unmeasured warm-up before every step
# pre = true             # also the .pre steps
# The other suites: [suite.insert] (Insert Benchmark) and [suite.linkbench]; see docs/workloads.md.
"#,
        title = v.title,
        file = file,
        engine = v.engine,
        source = v.source,
        a = v.setting[0],
        b = v.setting[1],
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every starter parses and plans as written, with two targets of its engine and the
    /// scale the comments state.
    #[test]
    fn every_template_parses_and_plans() {
        let all = starters();
        assert!(all.len() >= 4, "{all:?}");
        for s in all {
            let text = lab(s, "lab.toml");
            let lab = crate::plan::lab::parse(&text, "lab.toml", Path::new("."))
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", s.engine));
            let plan = crate::plan::plan(lab, &crate::plan::RunOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", s.engine));
            assert_eq!(plan.targets.len(), 2);
            assert_eq!(plan.repeats, 3);
            let want = crate::engine::EngineKind::parse(s.engine).unwrap();
            assert!(
                plan.targets.iter().all(|t| t.engine == want),
                "{}",
                s.engine
            );
            assert!(text.contains("docs/lab.md"));
        }
    }
}
