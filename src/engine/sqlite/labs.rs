//! SQLite's labs for a newcomer: the built-in demo `dbdelta run` runs when given no lab, and
//! the starter `dbdelta init` writes. Must not: parse or run them (the plan does).

use crate::engine::Starter;

/// The lab `dbdelta run` uses when given none: embedded SQLite, two targets that differ by one
/// setting, 3 interleaved repeats of 14 steps of the catalog (point and range reads before the
/// writes, then writes), sized to finish with verdicts in about two minutes.
pub const DEMO_LAB: &str = r#"# dbdelta's built-in demo: what does synchronous=NORMAL buy over FULL in WAL mode?
# 3 interleaved repeats give verdicts: the writes (a commit no longer waits for fsync) change,
# the reads cannot. A representative subset of the catalog keeps it to about two minutes; the
# reads are the .pre steps, which run before the writes, on the same data for both targets.
[lab]
name = "demo: SQLite WAL, synchronous=FULL vs NORMAL"
repeats = 3
order = "interleaved"
clients = [1]
only = [
  "point-query.pre", "random-points.pre_range=10", "points-covered-pk.pre", "points-covered-si.pre",
  "range-covered-pk.pre", "range-notcovered-pk.pre", "range-covered-si.pre", "range-notcovered-si.pre",
  "update-index", "update-nonindex", "update-one", "update-zipf", "delete", "insert",
]

[[target]]
name = "sqlite.sync-full"
engine = "sqlite"
settings = ["journal_mode = WAL", "synchronous = FULL"]

[[target]]
name = "sqlite.sync-normal"
engine = "sqlite"
settings = ["journal_mode = WAL", "synchronous = NORMAL"]

[suite.sysbench]
tables = 1
rows = 100_000
read_secs = 1
write_secs = 1.5
warmup_secs = 0.3
pre = true
"#;

/// `dbdelta init --engine sqlite`.
pub static STARTERS: &[Starter] = &[Starter {
    title: "sqlite: synchronous FULL vs OFF",
    engine: "sqlite",
    source: "# embedded SQLite, built into dbdelta: nothing to install\n",
    setting: ["synchronous = FULL", "synchronous = OFF"],
}];
