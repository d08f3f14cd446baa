//! The sysbench microbenchmark suite (docs/workloads.md, The catalog): its catalog, its table load,
//! and how its steps become runnable [`StepPlan`]s.
//!
//! The catalog is one table of [`StepDef`] rows in run order: the 32 reported steps, the 15
//! `.pre` steps (run only with `pre = true`) and the 4 unreported warm steps. Adding a step is
//! adding a row; the statements of an event are [`Stmt`] shapes whose SQL lives in `sql.rs`.
//! Every step is one closed-loop role (`client`) with one operation type (the step) counting
//! its statements. Must not: execute SQL itself (the executor and the engines do) or time
//! anything.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::catalog::{DurationRule, EventExecutor, Group, Ids, StepDef, Threads};
use super::sql::{self, Cols, Key, RangeKind, Stmt};
use crate::engine::{DbError, Dialect, RowSink, RowSource, Session, TableDdl};
use crate::workload::{
    Counted, Executor, ExecutorFactory, Opening, Pacer, Role, Scale, StepKind, StepPlan, Suite,
};

const fn range(kind: RangeKind, span: u32) -> Stmt {
    Stmt::Range { kind, span }
}

/// `read-only` (sysbench's `oltp_read_only`): BEGIN, 10 point selects, the four range statements
/// over `span` ids, COMMIT = 16 statements.
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
    kind: StepKind,
    group: Group,
    duration: DurationRule,
    event: &'static [(u32, Stmt)],
) -> StepDef {
    StepDef {
        label,
        kind,
        group,
        duration,
        ids: Ids::Uniform,
        threads: Threads::Clients,
        event,
        postwrite_after: false,
    }
}

const fn read(label: &'static str, group: Group, event: &'static [(u32, Stmt)]) -> StepDef {
    step(label, StepKind::Main, group, DurationRule::Read, event)
}

const fn pre(label: &'static str, group: Group, event: &'static [(u32, Stmt)]) -> StepDef {
    step(label, StepKind::Pre, group, DurationRule::Read, event)
}

const fn write(label: &'static str, event: &'static [(u32, Stmt)]) -> StepDef {
    step(
        label,
        StepKind::Main,
        Group::Writes,
        DurationRule::Write,
        event,
    )
}

const fn warm(
    label: &'static str,
    duration: DurationRule,
    event: &'static [(u32, Stmt)],
) -> StepDef {
    step(label, StepKind::Warm, Group::Warm, duration, event)
}

use Cols::{C, Key as Covered, KeyC as NotCovered};
use Group::{Point, Point1, Range1, RangeAgg, RangeNoAgg};
use Key::{Id, K};

/// The steps, in the order they run (docs/workloads.md, The catalog; the `.pre` set between
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

/// Adaptive step length, as the runner applies it: the measured period of a reported step
/// ends at the first whole second from `min` on where the 95% interval of the per-second mean
/// QPS is within ±`precision`, or at the step's maximum ([`Settings::duration_of`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adaptive {
    pub precision: f64,
    pub min: Duration,
    /// `max_secs` when set; otherwise each step's fixed length is its maximum.
    pub max: Option<Duration>,
}

/// The suite's settings after `--quick` scaling: what its steps are planned from.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub scale: Scale,
    pub warmup: Duration,
    pub read: Duration,
    pub write: Duration,
    /// `duration = "adaptive"`: how reported steps end; `None`: fixed length.
    pub adaptive: Option<Adaptive>,
    /// `pre = true`: the `.pre` steps run and reports use 5 groups.
    pub pre: bool,
    /// `--quick`: warm steps only touch the data.
    pub quick: bool,
}

impl Settings {
    /// Measured duration of a step; for an adaptive step, its maximum (`max_secs`, else its
    /// fixed length).
    pub fn duration_of(&self, step: &StepDef) -> Duration {
        if self.quick && !step.reported() {
            // Unreported warm steps only need to touch the data at --quick scale.
            return Duration::from_millis(100);
        }
        let fixed = match step.duration {
            DurationRule::Read => self.read,
            DurationRule::Write => self.write,
            DurationRule::ScanWarm => self.read.min(Duration::from_secs(60)),
        };
        match (self.adaptive, step.reported()) {
            (Some(a), true) => a.max.unwrap_or(fixed),
            _ => fixed,
        }
    }

    /// How an adaptive step ends early: (target precision, minimum measured time). `None` for
    /// fixed steps and for warm steps, which keep their length in adaptive mode (they exist to
    /// warm caches for a set time, and no verdict depends on them).
    pub fn stop_rule(&self, step: &StepDef) -> Option<(f64, Duration)> {
        let a = self.adaptive?;
        step.reported()
            .then(|| (a.precision, a.min.min(self.duration_of(step))))
    }

    /// The group a step's measurements are stored and reported under.
    pub fn group_of(&self, step: &StepDef) -> Group {
        step.group.with_pre(self.pre)
    }

    /// Client threads of a step in a cell running `clients` clients.
    pub fn threads_of(&self, step: &StepDef, clients: u32) -> u32 {
        match step.threads {
            Threads::Clients => clients,
            Threads::Tables => self.scale.tables,
        }
    }

    /// Whether the postwrite cleanup runs right after the load. The reference runs it after
    /// the load's warm-up (`point-query.warm`, which carries `postwrite_after`); when `--only`
    /// leaves that step out, the cleanup still runs before the first measured step.
    pub fn postwrite_after_load(&self, steps: &[&StepDef]) -> bool {
        !steps
            .first()
            .is_some_and(|s| s.kind == StepKind::Warm && s.postwrite_after)
    }
}

/// Opens the [`EventExecutor`] of one catalog step on a connection.
struct EventFactory {
    step: &'static StepDef,
    scale: Scale,
}

impl ExecutorFactory for EventFactory {
    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        Ok(Box::new(EventExecutor::new(
            self.step, self.scale, session, at.dialect, at.seed,
        )?))
    }
}

/// Step `step` as the runner runs it: one closed-loop role whose one operation type is the
/// step's event, counting its statements (BEGIN and COMMIT included).
pub fn step_plan(
    step: &'static StepDef,
    scale: Scale,
    warmup: Duration,
    measure: Duration,
) -> StepPlan {
    StepPlan {
        suite: "sysbench",
        label: step.label.to_string(),
        index: CATALOG
            .iter()
            .position(|s| s.label == step.label)
            .unwrap_or(0) as u32,
        group: step.group.id().to_string(),
        warm: !step.reported(),
        clients: (step.threads == Threads::Tables).then_some(scale.tables),
        roles: vec![Role {
            name: "client",
            pacer: Pacer::Closed,
            quota: None,
            ops: vec![step.label],
            executor: Arc::new(EventFactory { step, scale }),
        }],
        counted: Counted { role: 0, op: None },
        rate_unit: "qps",
        statements_per_event: step.statements_per_event(),
        event_shape: step.event.iter().map(|(n, _)| *n).collect(),
        scan_rows: step.is_scan().then_some(scale.rows),
        warmup,
        measure: Some(measure),
        expected: measure,
        stop_rule: None,
        postwrite_after: step.postwrite_after,
    }
}

/// The suite: tables `sbtest1..N` of `rows` rows, loaded in bulk with the `k` index built
/// after the load.
#[derive(Debug, Clone)]
pub struct Sysbench {
    pub settings: Settings,
}

impl Sysbench {
    /// The chosen catalog rows as runnable steps, in catalog order.
    pub fn plan(&self, steps: &[&'static StepDef]) -> Vec<StepPlan> {
        let s = &self.settings;
        steps
            .iter()
            .map(|step| {
                let stop_rule = s.stop_rule(step);
                let plan = step_plan(step, s.scale, s.warmup, s.duration_of(step));
                StepPlan {
                    group: s.group_of(step).id().to_string(),
                    expected: stop_rule.map_or(plan.expected, |(_, min)| min),
                    stop_rule,
                    ..plan
                }
            })
            .collect()
    }
}

impl Suite for Sysbench {
    fn id(&self) -> &'static str {
        "sysbench"
    }

    fn scale(&self, _clients: u32) -> Scale {
        self.settings.scale
    }

    fn tables(&self, _clients: u32) -> Vec<String> {
        tables(self.settings.scale)
    }

    fn fill(
        &self,
        session: &mut dyn Session,
        dialect: Dialect,
        ddl: &TableDdl,
        _clients: u32,
    ) -> anyhow::Result<()> {
        fill(session, dialect, ddl, self.settings.scale)
    }

    fn index(
        &self,
        session: &mut dyn Session,
        dialect: Dialect,
        ddl: &TableDdl,
        _clients: u32,
    ) -> anyhow::Result<()> {
        index(session, dialect, ddl, self.settings.scale)
    }

    fn records_load(&self) -> bool {
        true
    }

    fn rows_loaded(&self, _clients: u32) -> u64 {
        self.settings.scale.rows * u64::from(self.settings.scale.tables)
    }

    /// The rows are a function of the scale alone (seeded per table), whatever the clients.
    fn load_key(&self, _clients: u32) -> Option<String> {
        let s = self.settings.scale;
        Some(format!("sysbench tables={} rows={}", s.tables, s.rows))
    }
}

/// Create and fill the tables of `scale` (with the target's table DDL).
pub fn fill(
    session: &mut dyn Session,
    dialect: Dialect,
    ddl: &TableDdl,
    scale: Scale,
) -> anyhow::Result<()> {
    for t in 1..=scale.tables {
        // A terminating signal ends the load at the next table: the run is ending.
        if crate::signals::interrupted() {
            anyhow::bail!("the load was interrupted: dbdelta was signalled");
        }
        session
            .execute_sql(&sql::create_table(dialect, t, ddl))
            .context("create table")?;
        let mut rows = TableRows::new(scale.rows, 0x5eed ^ t as u64);
        session
            .bulk_load(&sql::table(t), &mut rows)
            .with_context(|| format!("loading {}", sql::table(t)))?;
    }
    Ok(())
}

/// Build the secondary index `k_N` of every table.
pub fn index(
    session: &mut dyn Session,
    dialect: Dialect,
    ddl: &TableDdl,
    scale: Scale,
) -> anyhow::Result<()> {
    for t in 1..=scale.tables {
        session
            .execute_sql(&sql::create_index(dialect, t, ddl))
            .context("create index")?;
    }
    Ok(())
}
