//! The `[suite.insert]` section: its keys, their defaults and their checks.
//!
//! Owns turning the lab's table into an [`InsertConfig`]. Must not: apply `--quick` or choose
//! steps (that is the suite's `plan`).

use serde::Deserialize;
use toml::Spanned;

use crate::error::InputError;
use crate::range;
use crate::suites::Section;

mod defaults {
    /// Rows l.i0 inserts per table.
    pub fn insert_rows() -> u64 {
        1_000_000
    }
    pub fn query_secs() -> f64 {
        300.0
    }
    pub fn rates() -> Vec<i64> {
        vec![100, 500, 1000]
    }
    pub fn commit_l_i0() -> u32 {
        100
    }
    pub fn commit_l_i1() -> u32 {
        50
    }
    pub fn commit_l_i2() -> u32 {
        5
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInsert {
    #[serde(default = "defaults::insert_rows")]
    rows: u64,
    #[serde(default)]
    write_rows: Option<u64>,
    #[serde(default = "defaults::query_secs")]
    query_secs: f64,
    #[serde(default = "defaults::rates")]
    rates: Vec<i64>,
    #[serde(default = "defaults::commit_l_i0")]
    rows_per_commit_l_i0: u32,
    #[serde(default = "defaults::commit_l_i1")]
    rows_per_commit_l_i1: u32,
    #[serde(default = "defaults::commit_l_i2")]
    rows_per_commit_l_i2: u32,
    #[serde(default = "crate::suites::yes")]
    deletes: bool,
    #[serde(default)]
    postwrite_secs: Option<f64>,
    #[serde(default = "crate::suites::yes")]
    prepared: bool,
}

/// The `[suite.insert]` section (docs/workloads.md, The Insert Benchmark).
#[derive(Debug, Clone, PartialEq)]
pub struct InsertConfig {
    /// Rows `l.i0` inserts per table (one table per client).
    pub rows: u64,
    /// Rows `l.i1` (4/5) and `l.i2` (1/5) insert per table (default: `rows`).
    pub write_rows: u64,
    /// Scheduled length of each `qr*`/`qp*` step.
    pub query_secs: f64,
    /// Background inserts per second per client: a `qr` and a `qp` step each.
    pub rates: Vec<u32>,
    /// Rows per commit of `l.i0`, `l.i1`, `l.i2` (100, 50, 5).
    pub rows_per_commit: [u32; 3],
    /// A deleter per client keeps each table's size constant (`delete_per_insert`).
    pub deletes: bool,
    pub postwrite_secs: Option<f64>,
    pub prepared: bool,
}

/// The most rows `[suite.insert]`'s `rows` and `write_rows` may ask for, per table.
const MAX_INSERT_ROWS: u64 = 1_000_000_000_000;

/// The `[suite.insert]` section.
pub(super) fn insert(
    src: &Section<'_>,
    raw: Spanned<RawInsert>,
) -> Result<InsertConfig, InputError> {
    let s = raw.into_inner();
    let at = |key: &str, what: &str| src.key_error(key, what);
    let commit = [
        s.rows_per_commit_l_i0,
        s.rows_per_commit_l_i1,
        s.rows_per_commit_l_i2,
    ];
    let commit_keys = [
        "rows_per_commit_l_i0",
        "rows_per_commit_l_i1",
        "rows_per_commit_l_i2",
    ];
    for (key, c) in commit_keys.iter().zip(commit) {
        if !(1..=1000).contains(&c) {
            return Err(at(key, &format!("{key} must be from 1 to 1000, not {c}")));
        }
    }
    if s.rows < u64::from(s.rows_per_commit_l_i0) {
        return Err(at(
            "rows",
            "rows must be at least rows_per_commit_l_i0 (l.i0 inserts them)",
        ));
    }
    let write_rows = s.write_rows.unwrap_or(s.rows);
    // Far beyond any table that can be loaded, and small enough that `write_rows * 4` (here and
    // in `insert::Settings`) cannot overflow.
    for (key, v) in [("rows", s.rows), ("write_rows", write_rows)] {
        if v > MAX_INSERT_ROWS {
            return Err(at(
                key,
                "rows and write_rows must be at most 1000000000000 (10^12) per table",
            ));
        }
    }
    if write_rows * 4 / 5 < u64::from(commit[1]) || write_rows / 5 < u64::from(commit[2]) {
        return Err(at(
            "write_rows",
            "write_rows is too small: l.i1 inserts 4/5 of it (at least rows_per_commit_l_i1) and l.i2 1/5 (at least rows_per_commit_l_i2)",
        ));
    }
    src.check_secs(&[
        ("query_secs", Some(s.query_secs), range::STEP_SECS),
        ("postwrite_secs", s.postwrite_secs, range::WAIT_SECS),
    ])?;
    if s.rates.is_empty() || s.rates.iter().any(|r| *r < 1 || *r > 1_000_000) {
        return Err(at(
            "rates",
            "rates must be a non-empty list of inserts per second per client from 1 to 1000000, e.g. [100, 500, 1000]",
        ));
    }
    Ok(InsertConfig {
        rows: s.rows,
        write_rows,
        query_secs: s.query_secs,
        rates: s.rates.iter().map(|r| *r as u32).collect(),
        rows_per_commit: commit,
        deletes: s.deletes,
        postwrite_secs: s.postwrite_secs,
        prepared: s.prepared,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::lab::parse;
    use crate::suites::sysbench::SysbenchConfig;

    fn err(text: &str) -> String {
        parse(text, "lab.toml", Path::new(".")).unwrap_err().0
    }

    const INSERT: &str = r#"
[lab]
name = "t"

[[target]]
name = "a"
engine = "sqlite"

[suite.insert]
rows = 10_000
rates = [100, 1000]
"#;

    #[test]
    fn insert_suite_alone_or_with_sysbench() {
        let lab = parse(INSERT, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(
            lab.suite::<SysbenchConfig>(),
            None,
            "only the suite the lab names runs"
        );
        let ins = lab.suite::<InsertConfig>().cloned().unwrap();
        assert_eq!(ins.rows, 10_000);
        assert_eq!(ins.write_rows, 10_000, "write_rows defaults to rows");
        assert_eq!(ins.rates, [100, 1000]);
        assert_eq!(ins.rows_per_commit, [100, 50, 5]);
        assert!(ins.deletes);
        assert_eq!(ins.query_secs, 300.0);
        let both = format!("{INSERT}\n[suite.sysbench]\nrows = 1000\n");
        let lab = parse(&both, "lab.toml", Path::new(".")).unwrap();
        assert!(lab.suite::<SysbenchConfig>().is_some() && lab.suite::<InsertConfig>().is_some());
        let none = parse(
            "[lab]\nname = \"t\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n",
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        assert!(
            none.suite::<SysbenchConfig>().is_some(),
            "no suite section: sysbench"
        );
        assert_eq!(none.suite::<InsertConfig>(), None);
    }

    #[test]
    fn insert_suite_bad_input_is_named() {
        let e = err(&INSERT.replace("rows = 10_000", "rowz = 10_000"));
        assert!(
            e.starts_with("lab.toml:10: [suite.insert] unknown field `rowz`"),
            "{e}"
        );
        let e = err(&INSERT.replace("[100, 1000]", "[0]"));
        assert!(e.contains("rates must be a non-empty list"), "{e}");
        let e = err(&INSERT.replace("rows = 10_000", "rows = 10\nrows_per_commit_l_i0 = 50"));
        assert!(
            e.contains("rows must be at least rows_per_commit_l_i0"),
            "{e}"
        );
        let e = err(&INSERT.replace("rows = 10_000", "rows = 10_000\nwrite_rows = 20"));
        assert!(e.contains("write_rows is too small"), "{e}");
        let e = err(&INSERT.replace("rows = 10_000", "query_secs = -1"));
        assert!(
            e.contains("query_secs must be a number of seconds above 0"),
            "{e}"
        );
    }

    #[test]
    fn huge_or_non_finite_query_secs_are_refused_at_their_line() {
        // `Duration::from_secs_f64(1e20)` once panicked in the plan.
        for v in ["1e20", "1e12", "nan", "inf", "604800.5"] {
            let e =
                err(&INSERT.replace("rows = 10_000", &format!("rows = 10_000\nquery_secs = {v}")));
            assert!(
                e.starts_with("lab.toml:11: [suite.insert] query_secs: query_secs must be a number of seconds above 0 and at most 604800 (7 days)"),
                "{v}: {e}"
            );
        }
        let e = err(&INSERT.replace("rows = 10_000", "rows = 10_000\n\nrows_per_commit_l_i2 = 0"));
        assert!(
            e.starts_with("lab.toml:12: [suite.insert] rows_per_commit_l_i2: rows_per_commit_l_i2 must be from 1 to 1000, not 0"),
            "{e}"
        );
    }
}
