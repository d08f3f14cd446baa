//! The sysbench microbenchmark catalog (suites.md §1, methodology §2.4–2.5) and its table load.
//!
//! The catalog is a table of [`StepDef`] values in run order; adding a step is adding a row.
//! This version carries six steps of the catalog; the rest of the 32 come as more rows.
//! Must not: execute SQL itself (the executor and the engines do) or time anything.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::sql::{self, RangeKind, Stmt};
use super::{DurationRule, Group, Ids, Scale, StepDef};
use crate::engine::{RowSink, RowSource};

const READ_ONLY_10: &[(u32, Stmt)] = &[
    (1, Stmt::Begin),
    (10, Stmt::PointSelect),
    (
        1,
        Stmt::Range {
            kind: RangeKind::Simple,
            span: 10,
        },
    ),
    (
        1,
        Stmt::Range {
            kind: RangeKind::Sum,
            span: 10,
        },
    ),
    (
        1,
        Stmt::Range {
            kind: RangeKind::Order,
            span: 10,
        },
    ),
    (
        1,
        Stmt::Range {
            kind: RangeKind::Distinct,
            span: 10,
        },
    ),
    (1, Stmt::Commit),
];

/// The steps, in the order they run (suites.md §1).
pub const CATALOG: &[StepDef] = &[
    StepDef {
        label: "update-index",
        group: Group::Writes,
        duration: DurationRule::Write,
        ids: Ids::Uniform,
        event: &[(1, Stmt::UpdateIndex)],
        postwrite_after: true,
    },
    StepDef {
        label: "read-only_range=10",
        group: Group::RangeAgg,
        duration: DurationRule::Read,
        ids: Ids::Uniform,
        event: READ_ONLY_10,
        postwrite_after: false,
    },
    StepDef {
        label: "point-query",
        group: Group::Point,
        duration: DurationRule::Read,
        ids: Ids::Uniform,
        event: &[(1, Stmt::PointSelect)],
        postwrite_after: false,
    },
    StepDef {
        label: "random-points_range=100",
        group: Group::Point,
        duration: DurationRule::Read,
        ids: Ids::Uniform,
        event: &[(1, Stmt::InList { n: 100 })],
        postwrite_after: false,
    },
    StepDef {
        label: "range-covered-pk",
        group: Group::RangeNoAgg,
        duration: DurationRule::Read,
        ids: Ids::Uniform,
        event: &[(
            1,
            Stmt::Range {
                kind: RangeKind::CoveredPk,
                span: 101,
            },
        )],
        postwrite_after: false,
    },
    StepDef {
        label: "insert",
        group: Group::Writes,
        duration: DurationRule::Write,
        ids: Ids::Uniform,
        event: &[(1, Stmt::Insert)],
        postwrite_after: false,
    },
];

/// Look up a step by its label.
pub fn find(label: &str) -> Option<&'static StepDef> {
    CATALOG.iter().find(|s| s.label == label)
}

/// Table names of a scale.
pub fn tables(scale: Scale) -> Vec<String> {
    (1..=scale.tables).map(sql::table).collect()
}

/// Rows of one `sbtestN` table: ids 1..=rows in order, `k` uniform in 1..=rows, random `c`/`pad`.
pub struct TableRows {
    rows: u64,
    rng: SmallRng,
    c: [u8; sql::C_LEN],
    pad: [u8; sql::PAD_LEN],
}

impl TableRows {
    pub fn new(rows: u64, seed: u64) -> TableRows {
        TableRows {
            rows,
            rng: SmallRng::seed_from_u64(seed),
            c: [0; sql::C_LEN],
            pad: [0; sql::PAD_LEN],
        }
    }
}

impl RowSource for TableRows {
    fn columns(&self) -> &[&'static str] {
        &["id", "k", "c", "pad"]
    }

    fn rows(&self) -> u64 {
        self.rows
    }

    fn write_row(&mut self, i: u64, sink: &mut dyn RowSink) {
        let k = self.rng.random_range(1..=self.rows as i64);
        sql::fill_digits(&mut self.rng, &mut self.c);
        sql::fill_digits(&mut self.rng, &mut self.pad);
        sink.int(i as i64 + 1);
        sink.int(k);
        sink.text(std::str::from_utf8(&self.c).expect("ascii"));
        sink.text(std::str::from_utf8(&self.pad).expect("ascii"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_groups_known() {
        let mut labels: Vec<_> = CATALOG.iter().map(|s| s.label).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), CATALOG.len());
    }
}
