//! The sysbench microbenchmark catalog (suites.md §1, methodology §2.4–2.5) and its table load.
//!
//! The catalog is one table of [`StepDef`] rows in run order: the 32 reported steps, the 15
//! `.pre` steps (run only with `pre = true`) and the 4 unreported warm steps. Adding a step is
//! adding a row; the statements of an event are [`Stmt`] shapes whose SQL lives in `sql.rs`.
//! Must not: execute SQL itself (the executor and the engines do) or time anything.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::sql::{self, Cols, Key, RangeKind, Stmt};
use super::{DurationRule, Group, Ids, Role, Scale, StepDef, Threads};
use crate::engine::{RowSink, RowSource};

const fn range(kind: RangeKind, span: u32) -> Stmt {
    Stmt::Range { kind, span }
}

/// `read-only` (methodology §2.4): BEGIN, 10 point selects, the four range statements over
/// `span` ids, COMMIT = 16 statements.
const fn read_only(span: u32) -> [(u32, Stmt); 7] {
    [
        (1, Stmt::Begin),
        (10, Stmt::PointSelect),
        (1, range(RangeKind::Simple, span)),
        (1, range(RangeKind::Sum, span)),
        (1, range(RangeKind::Order, span)),
        (1, range(RangeKind::Distinct, span)),
        (1, Stmt::Commit),
    ]
}

/// `read-only-{simple,sum,order,distinct}`: the 10 point selects stay, one range kind over
/// 1000 ids = 13 statements.
const fn read_only_one(kind: RangeKind) -> [(u32, Stmt); 4] {
    [
        (1, Stmt::Begin),
        (10, Stmt::PointSelect),
        (1, range(kind, 1000)),
        (1, Stmt::Commit),
    ]
}

/// `write-only`: BEGIN, update k, update c, delete an id and insert it back, COMMIT = 6.
const WRITE_ONLY: [(u32, Stmt); 6] = [
    (1, Stmt::Begin),
    (1, Stmt::UpdateIndex),
    (1, Stmt::UpdateNonIndex),
    (1, Stmt::Delete),
    (1, Stmt::Reinsert),
    (1, Stmt::Commit),
];

/// `read-write`: BEGIN, 10 point selects, the four ranges, the four writes of `write-only`,
/// COMMIT = 20.
const fn read_write(span: u32) -> [(u32, Stmt); 11] {
    [
        (1, Stmt::Begin),
        (10, Stmt::PointSelect),
        (1, range(RangeKind::Simple, span)),
        (1, range(RangeKind::Sum, span)),
        (1, range(RangeKind::Order, span)),
        (1, range(RangeKind::Distinct, span)),
        (1, Stmt::UpdateIndex),
        (1, Stmt::UpdateNonIndex),
        (1, Stmt::Delete),
        (1, Stmt::Reinsert),
        (1, Stmt::Commit),
    ]
}

/// `points-*` and `random-points`/`hot-points`: one IN-list select.
const fn points(key: Key, cols: Cols, n: u32) -> [(u32, Stmt); 1] {
    [(1, Stmt::InList { key, cols, n })]
}

/// `range-{covered,notcovered}-{pk,si}`: `[x, x+100]`, 101 key values.
const fn index_range(key: Key, cols: Cols) -> [(u32, Stmt); 1] {
    [(1, range(RangeKind::Index { key, cols }, 101))]
}

const POINT: [(u32, Stmt); 1] = [(1, Stmt::PointSelect)];
const SCAN: [(u32, Stmt); 1] = [(1, Stmt::Scan)];

/// A row of the catalog with the common defaults (uniform ids, one thread per client, no
/// postwrite after it).
const fn step(
    label: &'static str,
    role: Role,
    group: Group,
    duration: DurationRule,
    event: &'static [(u32, Stmt)],
) -> StepDef {
    StepDef {
        label,
        role,
        group,
        duration,
        ids: Ids::Uniform,
        threads: Threads::Clients,
        event,
        postwrite_after: false,
    }
}

const fn read(label: &'static str, group: Group, event: &'static [(u32, Stmt)]) -> StepDef {
    step(label, Role::Main, group, DurationRule::Read, event)
}

const fn pre(label: &'static str, group: Group, event: &'static [(u32, Stmt)]) -> StepDef {
    step(label, Role::Pre, group, DurationRule::Read, event)
}

const fn write(label: &'static str, event: &'static [(u32, Stmt)]) -> StepDef {
    step(label, Role::Main, Group::Writes, DurationRule::Write, event)
}

const fn warm(
    label: &'static str,
    duration: DurationRule,
    event: &'static [(u32, Stmt)],
) -> StepDef {
    step(label, Role::Warm, Group::Warm, duration, event)
}

use Cols::{C, Key as Covered, KeyC as NotCovered};
use Group::{Point, Point1, Range1, RangeAgg, RangeNoAgg};
use Key::{Id, K};

/// The steps, in the order they run (suites.md §1; the `.pre` set of methodology §2.5 between
/// `scan.warmpre` and the writes).
pub const CATALOG: &[StepDef] = &[
    // 1. Warm the cache after the load, then postwrite cleanup. One thread per table.
    StepDef {
        threads: Threads::Tables,
        postwrite_after: true,
        ..warm("point-query.warm", DurationRule::Read, &POINT)
    },
    // 2.
    warm("scan.warmpre", DurationRule::ScanWarm, &SCAN),
    // With pre = true: the 15 `.pre` reads of the 2024 "42 microbenchmarks" set.
    pre("point-query.pre", Point1, &POINT),
    pre("random-points.pre_range=10", Point1, &points(Id, C, 10)),
    pre("random-points.pre_range=100", Point1, &points(Id, C, 100)),
    pre("random-points.pre_range=1000", Point1, &points(Id, C, 1000)),
    pre("read-only.pre_range=10", Range1, &read_only(10)),
    pre("read-only.pre_range=100", Range1, &read_only(100)),
    pre("read-only.pre_range=10000", Range1, &read_only(10000)),
    pre("points-covered-pk.pre", Point1, &points(Id, Covered, 100)),
    pre(
        "points-notcovered-pk.pre",
        Point1,
        &points(Id, NotCovered, 100),
    ),
    pre("points-covered-si.pre", Point1, &points(K, Covered, 100)),
    pre(
        "points-notcovered-si.pre",
        Point1,
        &points(K, NotCovered, 100),
    ),
    pre("range-covered-pk.pre", Range1, &index_range(Id, Covered)),
    pre(
        "range-notcovered-pk.pre",
        Range1,
        &index_range(Id, NotCovered),
    ),
    pre("range-covered-si.pre", Range1, &index_range(K, Covered)),
    pre(
        "range-notcovered-si.pre",
        Range1,
        &index_range(K, NotCovered),
    ),
    // 3. Writes, then postwrite cleanup.
    write("update-inlist", &[(1, Stmt::UpdateInList { n: 100 })]),
    write("update-index", &[(1, Stmt::UpdateIndex)]),
    write("update-nonindex", &[(1, Stmt::UpdateNonIndex)]),
    StepDef {
        ids: Ids::One,
        ..write("update-one", &[(1, Stmt::UpdateNonIndex)])
    },
    StepDef {
        ids: Ids::Zipf,
        ..write("update-zipf", &[(1, Stmt::UpdateNonIndex)])
    },
    StepDef {
        duration: DurationRule::Read,
        ..write("write-only", &WRITE_ONLY)
    },
    write("read-write_range=10", &read_write(10)),
    StepDef {
        postwrite_after: true,
        ..write("read-write_range=100", &read_write(100))
    },
    // 4.
    warm("scan.warm", DurationRule::ScanWarm, &SCAN),
    read("scan", RangeNoAgg, &SCAN),
    // 5.
    read("read-only_range=10", RangeAgg, &read_only(10)),
    read("read-only_range=100", RangeAgg, &read_only(100)),
    read("read-only_range=10000", RangeAgg, &read_only(10000)),
    read(
        "read-only-simple",
        RangeAgg,
        &read_only_one(RangeKind::Simple),
    ),
    read("read-only-sum", RangeAgg, &read_only_one(RangeKind::Sum)),
    read(
        "read-only-order",
        RangeAgg,
        &read_only_one(RangeKind::Order),
    ),
    read(
        "read-only-distinct",
        RangeAgg,
        &read_only_one(RangeKind::Distinct),
    ),
    read(
        "read-only-count",
        RangeAgg,
        &[(1, range(RangeKind::Count, 1000))],
    ),
    // 6.
    read("point-query", Point, &POINT),
    read("random-points_range=10", Point, &points(Id, C, 10)),
    read("random-points_range=100", Point, &points(Id, C, 100)),
    read("random-points_range=1000", Point, &points(Id, C, 1000)),
    StepDef {
        ids: Ids::Hot,
        ..read("hot-points", Point, &points(Id, C, 100))
    },
    read("points-covered-pk", Point, &points(Id, Covered, 100)),
    read("points-notcovered-pk", Point, &points(Id, NotCovered, 100)),
    // 7.
    read("range-covered-pk", RangeNoAgg, &index_range(Id, Covered)),
    read(
        "range-notcovered-pk",
        RangeNoAgg,
        &index_range(Id, NotCovered),
    ),
    // 8. Warms the secondary index (for MyRocks, says the reference).
    warm(
        "points-covered-si.warm",
        DurationRule::Read,
        &points(K, Covered, 100),
    ),
    read("points-covered-si", Point, &points(K, Covered, 100)),
    read("points-notcovered-si", Point, &points(K, NotCovered, 100)),
    // 9.
    read("range-covered-si", RangeNoAgg, &index_range(K, Covered)),
    read(
        "range-notcovered-si",
        RangeNoAgg,
        &index_range(K, NotCovered),
    ),
    // 10.
    write("delete", &[(1, Stmt::Delete)]),
    write("insert", &[(1, Stmt::Insert)]),
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
