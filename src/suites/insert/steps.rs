//! The Insert Benchmark suite (docs/workloads.md, The Insert Benchmark): one table per client, its
//! ten steps as runnable [`StepPlan`]s, and the executors of its roles.
//!
//! Steps, in order: `l.i0` (inserts in PK order, PK only), `l.x` (100 more rows, then the three
//! secondary indexes), `l.i1` and `l.i2` (inserts with index maintenance, a deleter per client
//! keeping the table size constant; the postwrite cleanup follows `l.i2`), then `qr<rate>` and
//! `qp<rate>` per background rate: a closed-loop querier (range queries over the covering
//! indexes, or 10-id point queries) while an inserter runs on an absolute schedule at the rate
//! and a deleter follows it. Load steps end when every inserter has inserted its rows; query
//! steps when the background quota is met, or at twice their scheduled length (the target then
//! missed its rate, which the SLA check reports). Must not: time anything or sleep (the
//! runner's pacers do); the row values use a synthetic clock, never the wall clock.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::sql as isql;
use crate::engine::{DbError, Dialect, Param, Session, StmtId, TableDdl};
use crate::workload::recycle;
use crate::workload::{
    Counted, Done, Executor, ExecutorFactory, Opening, Pacer, Role, Scale, StepPlan, Suite,
};

/// Report group of `l.i0`, `l.x`, `l.i1`, `l.i2` (rates are rows per second).
pub const LOAD_GROUP: &str = "insert-load";
/// Report group of `qr*`/`qp*` (rates are queries per second).
pub const QUERY_GROUP: &str = "insert-query";
/// Rows `l.x` inserts before it builds the indexes (the reference's 100).
pub const LX_ROWS: u64 = 100;
/// How far a deleter may lag its inserter, in statements (the reference's queue of 8).
pub const DELETE_LAG: u32 = 8;
/// A query step stops at this multiple of its scheduled length when the background quota is
/// still not met.
pub const QUERY_CAP: u32 = 2;
/// Rows per commit of the background inserter (clamped to the rate, as the reference does).
pub const QUERY_COMMIT: u32 = 50;
/// Point queries between two refreshes of the id range they draw from.
const ID_REFRESH: u64 = 100;
/// Longest `data` value (the harness's `data_length_max`); the shortest is 10.
const DATA_MAX: usize = 20;

/// The suite's settings after `--quick` scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Rows `l.i0` inserts per table.
    pub rows: u64,
    /// Rows `l.i1` and `l.i2` insert per table together: 4/5 and 1/5.
    pub write_rows: u64,
    /// Scheduled length of each query step.
    pub query: Duration,
    /// Background insert rates per client, rows per second: a `qr` and a `qp` step each.
    pub rates: Vec<u32>,
    /// Rows per commit of `l.i0`, `l.i1`, `l.i2`.
    pub commit: [u32; 3],
    /// A deleter per client in `l.i1`, `l.i2` and the query steps.
    pub deletes: bool,
}

/// What a step of the suite does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `l.i0` (0), `l.i1` (1), `l.i2` (2): inserts as fast as possible.
    Load(usize),
    /// `l.x`.
    Index,
    /// `qr<rate>` (`range`) or `qp<rate>`.
    Query { range: bool, rate: u32 },
}

impl Settings {
    /// Insert statements per inserter in load step `i` (0, 1, 2).
    pub fn load_quota(&self, i: usize) -> u64 {
        let rows = match i {
            0 => self.rows,
            1 => self.write_rows * 4 / 5,
            _ => self.write_rows / 5,
        };
        rows / u64::from(self.commit[i])
    }

    /// Rows per statement and statements per inserter of a query step at `rate` rows/s.
    pub fn query_quota(&self, rate: u32) -> (u32, u64) {
        let commit = QUERY_COMMIT.min(rate).max(1);
        let rows = (self.query.as_secs_f64() * f64::from(rate)).round() as u64;
        (commit, (rows / u64::from(commit)).max(1))
    }

    /// The steps in run order: label and kind.
    pub fn steps(&self) -> Vec<(String, Kind)> {
        let mut out = vec![
            ("l.i0".to_string(), Kind::Load(0)),
            ("l.x".to_string(), Kind::Index),
            ("l.i1".to_string(), Kind::Load(1)),
            ("l.i2".to_string(), Kind::Load(2)),
        ];
        for &rate in &self.rates {
            for range in [true, false] {
                let label = format!("{}{rate}", if range { "qr" } else { "qp" });
                out.push((label, Kind::Query { range, rate }));
            }
        }
        out
    }

    /// Rows in each table once `kind` has run (after every step before it): inserts add
    /// rows, each deleter removes as many as its inserter added.
    pub fn rows_after(&self, kind: Kind) -> u64 {
        let l0 = self.load_quota(0) * u64::from(self.commit[0]);
        let inserted = |i: usize| self.load_quota(i) * u64::from(self.commit[i]);
        let kept = |rows: u64| if self.deletes { 0 } else { rows };
        let mut rows = l0;
        for (_, k) in self.steps() {
            rows += match k {
                Kind::Load(0) => 0,
                Kind::Index => LX_ROWS,
                Kind::Load(i) => kept(inserted(i)),
                Kind::Query { rate, .. } => {
                    let (commit, quota) = self.query_quota(rate);
                    kept(quota * u64::from(commit))
                }
            };
            if k == kind {
                break;
            }
        }
        rows
    }

    fn inserter(&self, pacer: Pacer, commit: u32, quota: u64, dt_base: i64) -> Role {
        Role {
            name: "inserter",
            pacer,
            quota: Some(quota),
            ops: vec!["insert"],
            executor: Arc::new(InsertFactory { commit, dt_base }),
        }
    }

    fn deleter(leader: usize, commit: u32, quota: u64) -> Role {
        Role {
            name: "deleter",
            pacer: Pacer::Follow {
                leader,
                bound: DELETE_LAG,
            },
            quota: Some(quota),
            ops: vec!["delete"],
            executor: Arc::new(DeleteFactory { commit }),
        }
    }

    /// The roles of step `kind` (the first is the one its rate counts).
    fn roles(&self, kind: Kind, index: u32) -> Vec<Role> {
        // Each step's rows get later times than the step before's.
        let dt_base = i64::from(index) * 10_000_000;
        match kind {
            Kind::Load(i) => {
                let (commit, quota) = (self.commit[i], self.load_quota(i));
                let mut roles = vec![self.inserter(Pacer::Closed, commit, quota, dt_base)];
                if i > 0 && self.deletes {
                    roles.push(Self::deleter(0, commit, quota));
                }
                roles
            }
            Kind::Index => vec![Role {
                name: "indexer",
                pacer: Pacer::Closed,
                quota: Some(1),
                ops: vec!["index"],
                executor: Arc::new(IndexFactory { dt_base }),
            }],
            Kind::Query { range, rate } => {
                let (commit, quota) = self.query_quota(rate);
                let per_sec = f64::from(rate) / f64::from(commit);
                let mut roles = vec![
                    Role {
                        name: "querier",
                        pacer: Pacer::Closed,
                        quota: None,
                        // Point queries also re-read their id range now and then: its own
                        // operation type, which the step does not count.
                        ops: if range {
                            vec!["range"]
                        } else {
                            vec!["point", "ids"]
                        },
                        executor: Arc::new(QueryFactory { range }),
                    },
                    self.inserter(Pacer::Rate { per_sec }, commit, quota, dt_base),
                ];
                if self.deletes {
                    roles.push(Self::deleter(1, commit, quota));
                }
                roles
            }
        }
    }

    /// Step `label` as the runner runs it.
    pub fn step_plan(&self, index: u32, label: &str, kind: Kind) -> StepPlan {
        let (group, measure, expected) = match kind {
            Kind::Query { .. } => (QUERY_GROUP, Some(self.query * QUERY_CAP), self.query),
            _ => (LOAD_GROUP, None, Duration::ZERO),
        };
        StepPlan {
            suite: "insert",
            label: label.to_string(),
            index,
            group: group.to_string(),
            warm: false,
            clients: None,
            roles: self.roles(kind, index),
            // The querier's queries (not its id refreshes) in query steps; role 0's operation
            // in load steps.
            counted: Counted {
                role: 0,
                op: Some(0),
            },
            rate_unit: if group == QUERY_GROUP {
                "queries/s"
            } else {
                "rows/s"
            },
            statements_per_event: 1,
            event_shape: vec![1],
            scan_rows: None,
            warmup: Duration::ZERO,
            measure,
            expected,
            stop_rule: None,
            postwrite_after: kind == Kind::Load(2),
        }
    }
}

/// The suite: tables `pi1..piN`, one per client, created empty (its first step is its load).
#[derive(Debug, Clone)]
pub struct InsertBench {
    pub settings: Settings,
}

impl InsertBench {
    /// The steps whose labels `chosen` accepts, as runnable steps in run order.
    pub fn plan(&self, chosen: impl Fn(&str) -> bool) -> Vec<StepPlan> {
        (self.settings.steps().into_iter().enumerate())
            .filter(|(_, (label, _))| chosen(label))
            .map(|(i, (label, kind))| self.settings.step_plan(i as u32, &label, kind))
            .collect()
    }
}

impl Suite for InsertBench {
    fn id(&self) -> &'static str {
        "insert"
    }

    fn scale(&self, clients: u32) -> Scale {
        Scale {
            tables: clients,
            rows: self.settings.rows,
        }
    }

    fn tables(&self, clients: u32) -> Vec<String> {
        (1..=clients).map(isql::table).collect()
    }

    fn fill(
        &self,
        session: &mut dyn Session,
        dialect: Dialect,
        ddl: &TableDdl,
        clients: u32,
    ) -> anyhow::Result<()> {
        for t in 1..=clients {
            for sql in isql::create_table(dialect, t, ddl) {
                session
                    .execute_sql(&sql)
                    .with_context(|| format!("creating {}", isql::table(t)))?;
            }
        }
        Ok(())
    }
}

/// `YYYY-MM-DD HH:MM:SS` of `secs` after 2026-01-01 00:00:00, written into `out` (no
/// allocation; days to civil date by the proleptic Gregorian calendar).
fn datetime(secs: i64, out: &mut [u8; 19]) {
    const BASE_DAYS: i64 = 20_454; // 2026-01-01 as days since 1970-01-01
    let days = BASE_DAYS + secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut put = |at: usize, v: i64, width: usize| {
        let mut v = v;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, tod / 3_600, 2);
    put(14, tod / 60 % 60, 2);
    put(17, tod % 60, 2);
    out[4] = b'-';
    out[7] = b'-';
    out[10] = b' ';
    out[13] = b':';
    out[16] = b':';
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Inserts `commit` generated rows per statement into its client's table (row values:
/// docs/workloads.md, The Insert Benchmark).
struct InsertFactory {
    commit: u32,
    /// Seconds after the synthetic epoch of this step's first statement.
    dt_base: i64,
}

impl ExecutorFactory for InsertFactory {
    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let (dialect, client, seed) = (at.dialect, at.client, at.seed);
        Ok(Box::new(InsertExec::new(
            session,
            dialect,
            client + 1,
            self.commit,
            self.dt_base,
            seed,
        )?))
    }
}

struct InsertExec {
    stmt: StmtId,
    rows: usize,
    rng: SmallRng,
    /// The synthetic clock: seconds after the epoch; one tick per statement.
    clock: i64,
    dt: [u8; 19],
    /// `rows` values of `data`, `DATA_MAX` bytes each, and their lengths.
    data: Vec<u8>,
    lens: Vec<usize>,
    /// `cashregisterid, customerid, productid, price` per row.
    ints: Vec<[i64; 4]>,
    params: Vec<Param<'static>>,
    rows_touched: [u64; 1],
}

impl InsertExec {
    fn new(
        session: &mut dyn Session,
        dialect: Dialect,
        table: u32,
        commit: u32,
        clock: i64,
        seed: u64,
    ) -> Result<InsertExec, DbError> {
        let rows = commit as usize;
        Ok(InsertExec {
            stmt: session.prepare(&isql::insert(dialect, table, commit))?,
            rows,
            rng: SmallRng::seed_from_u64(seed),
            clock,
            dt: [b'0'; 19],
            data: vec![b'a'; rows * DATA_MAX],
            lens: vec![0; rows],
            ints: vec![[0; 4]; rows],
            params: Vec::with_capacity(rows * isql::INSERT_COLUMNS.len()),
            rows_touched: [0],
        })
    }

    /// New values for every row of the next statement: uniform ids and price, `data` of 10 to
    /// 20 characters whose first 37.5% (50% × 0.75) are random base64, the rest `a`.
    fn generate(&mut self) {
        self.clock += 1;
        datetime(self.clock, &mut self.dt);
        for r in 0..self.rows {
            self.ints[r] = [
                self.rng.random_range(0..1_000),
                self.rng.random_range(0..100_000),
                self.rng.random_range(0..10_000),
                self.rng.random_range(0..500),
            ];
            let len = self.rng.random_range(10..=DATA_MAX);
            let random = len * 3 / 8;
            let cell = &mut self.data[r * DATA_MAX..(r + 1) * DATA_MAX];
            for (i, b) in cell.iter_mut().enumerate() {
                *b = if i < random {
                    BASE64[self.rng.random_range(0..64usize)]
                } else {
                    b'a'
                };
            }
            self.lens[r] = len;
        }
    }
}

impl Executor for InsertExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        self.generate();
        let dt = std::str::from_utf8(&self.dt).expect("ascii");
        let mut params = recycle(std::mem::take(&mut self.params));
        for r in 0..self.rows {
            let [cash, cust, prod, price] = self.ints[r];
            let data = &self.data[r * DATA_MAX..r * DATA_MAX + self.lens[r]];
            params.extend([
                Param::Text(dt),
                Param::Int(cash),
                Param::Int(cust),
                Param::Int(prod),
                Param::Int(price),
                Param::Text(std::str::from_utf8(data).expect("ascii")),
            ]);
        }
        let result = session.execute(self.stmt, &params);
        self.params = recycle(params);
        let rows = result?;
        self.rows_touched[0] += rows;
        Ok(Done {
            op: 0,
            units: self.rows as u64,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

/// Deletes the `commit` oldest rows of its client's table per statement (docs/workloads.md, The
/// Insert Benchmark).
struct DeleteFactory {
    commit: u32,
}

/// The first integer `sql` returns (`MIN`/`MAX` of an id; 0 for an empty table).
fn first_int(session: &mut dyn Session, sql: &str) -> Result<i64, DbError> {
    let v = session.query_strings(sql)?;
    Ok(v.first().and_then(|s| s.trim().parse().ok()).unwrap_or(0))
}

impl ExecutorFactory for DeleteFactory {
    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let (dialect, client) = (at.dialect, at.client);
        let t = client + 1;
        Ok(Box::new(DeleteExec {
            stmt: session.prepare(&isql::delete(dialect, t, self.commit))?,
            frontier: first_int(session, &isql::min_id(t))?,
            rows_touched: [0],
        }))
    }
}

struct DeleteExec {
    stmt: StmtId,
    /// No row below this id is left: each statement deletes the oldest rows from here on,
    /// so advancing it by the rows a statement deleted never passes the true minimum (ids
    /// come from an auto-increment or a sequence, and SQLite's tables use AUTOINCREMENT, so
    /// they only grow).
    frontier: i64,
    rows_touched: [u64; 1],
}

impl Executor for DeleteExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let rows = session.execute(self.stmt, &[Param::Int(self.frontier)])?;
        // The statement deleted the `rows` smallest ids from the frontier on, distinct
        // integers, so every id left is at least frontier + rows; ids only grow.
        self.frontier += rows as i64;
        self.rows_touched[0] += rows;
        Ok(Done {
            op: 0,
            units: rows,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

/// `l.x`: 100 more rows, then the three secondary indexes, as one operation.
struct IndexFactory {
    dt_base: i64,
}

impl ExecutorFactory for IndexFactory {
    /// The indexes are built once.
    fn repeatable(&self) -> bool {
        false
    }

    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let (dialect, client, seed) = (at.dialect, at.client, at.seed);
        let t = client + 1;
        // The rows already there, counted before the step's clock starts.
        let present = first_int(session, &isql::count(t))?.max(0) as u64;
        Ok(Box::new(IndexExec {
            insert: InsertExec::new(session, dialect, t, LX_ROWS as u32, self.dt_base, seed)?,
            statements: isql::create_indexes(dialect, t, at.ddl),
            present,
            rows_touched: [0],
        }))
    }
}

struct IndexExec {
    insert: InsertExec,
    statements: Vec<String>,
    /// Rows in the table before the operation.
    present: u64,
    rows_touched: [u64; 1],
}

impl Executor for IndexExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let rows = self.insert.run(session)?.rows;
        for sql in &self.statements {
            session.execute_sql(sql)?;
        }
        self.rows_touched[0] += rows;
        // Units: the rows indexed, those present plus those just inserted (the reference's
        // "indexed rows/s" = (100 + nr1) / elapsed).
        Ok(Done {
            op: 0,
            units: self.present + rows,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

/// The query connection of `qr*` (range) and `qp*` (point) steps.
struct QueryFactory {
    range: bool,
}

impl ExecutorFactory for QueryFactory {
    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let (dialect, client, seed) = (at.dialect, at.client, at.seed);
        let t = client + 1;
        let stmts = if self.range {
            (0..isql::RANGES.len())
                .map(|i| session.prepare(&isql::range_query(dialect, t, i)))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![session.prepare(&isql::point_query(dialect, t))?]
        };
        let bounds = [isql::min_id(t), isql::max_id(t)];
        // The first id range is read here, before the step's clock starts.
        let ids = if self.range {
            (0, 0)
        } else {
            (
                first_int(session, &bounds[0])?,
                first_int(session, &bounds[1])?,
            )
        };
        Ok(Box::new(QueryExec {
            stmts,
            bounds,
            rng: SmallRng::seed_from_u64(seed),
            ids,
            queries: 0,
            stale: false,
            params: Vec::with_capacity(isql::POINT_IDS as usize),
            rows_touched: [0],
        }))
    }
}

struct QueryExec {
    /// The three range queries, or the point query.
    stmts: Vec<StmtId>,
    /// `SELECT MIN(...)`, `SELECT MAX(...)` of the table's ids.
    bounds: [String; 2],
    rng: SmallRng,
    /// The ids point queries draw from: `[min, max]`, re-read every `ID_REFRESH` queries.
    ids: (i64, i64),
    queries: u64,
    /// The id range is due to be re-read: the next operation does that (operation type 1,
    /// `ids`), so its time never lands in the queries' latency.
    stale: bool,
    params: Vec<Param<'static>>,
    rows_touched: [u64; 1],
}

impl QueryExec {
    fn range(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let i = self.rng.random_range(0..isql::RANGES.len());
        let domain = i64::from(isql::RANGES[i].4);
        let start = self.rng.random_range(0..domain);
        session.execute(self.stmts[i], &[Param::Int(start)])
    }

    fn point(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let (lo, hi) = self.ids;
        self.params.clear();
        for _ in 0..isql::POINT_IDS {
            self.params
                .push(Param::Int(self.rng.random_range(lo..=hi.max(lo))));
        }
        session.execute(self.stmts[0], &self.params)
    }
}

impl Executor for QueryExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        if self.stale {
            self.ids = (
                first_int(session, &self.bounds[0])?,
                first_int(session, &self.bounds[1])?,
            );
            self.stale = false;
            return Ok(Done {
                op: 1,
                units: 0,
                rows: 0,
            });
        }
        let rows = if self.stmts.len() > 1 {
            self.range(session)?
        } else {
            self.point(session)?
        };
        self.queries += 1;
        self.stale = self.stmts.len() == 1 && self.queries.is_multiple_of(ID_REFRESH);
        self.rows_touched[0] += rows;
        Ok(Done {
            op: 0,
            units: 1,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            rows: 1_000,
            write_rows: 500,
            query: Duration::from_secs(2),
            rates: vec![100, 500],
            commit: [100, 50, 5],
            deletes: true,
        }
    }

    #[test]
    fn ten_steps_in_the_reference_order() {
        let s = Settings {
            rates: vec![100, 500, 1000],
            ..settings()
        };
        let labels: Vec<String> = s.steps().into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            labels,
            [
                "l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000",
                "qp1000"
            ]
        );
    }

    #[test]
    fn quotas_and_rows_follow_the_step_definitions() {
        let s = settings();
        assert_eq!(s.load_quota(0), 10, "1000 rows at 100 per commit");
        assert_eq!(s.load_quota(1), 8, "4/5 of 500 at 50");
        assert_eq!(s.load_quota(2), 20, "1/5 of 500 at 5");
        assert_eq!(s.query_quota(100), (50, 4), "2 s at 100/s, 50 per commit");
        assert_eq!(s.query_quota(20), (20, 2), "commit clamped to the rate");
        assert_eq!(s.rows_after(Kind::Load(0)), 1_000);
        assert_eq!(s.rows_after(Kind::Index), 1_100);
        let q = Kind::Query {
            range: false,
            rate: 500,
        };
        assert_eq!(s.rows_after(q), 1_100, "deletes keep the size constant");
        let no_deletes = Settings {
            deletes: false,
            ..settings()
        };
        // 1000 + 100 + 400 + 100 + 4 steps of 2 s × (100, 100, 500, 500) rows/s.
        assert_eq!(no_deletes.rows_after(q), 1_600 + 200 + 200 + 1000 + 1000);
    }

    #[test]
    fn query_steps_pace_the_inserter_and_the_deleter_follows() {
        let s = settings();
        let plan = s.step_plan(
            4,
            "qr100",
            Kind::Query {
                range: true,
                rate: 100,
            },
        );
        let names: Vec<&str> = plan.roles.iter().map(|r| r.name).collect();
        assert_eq!(names, ["querier", "inserter", "deleter"]);
        assert_eq!(plan.roles[1].pacer, Pacer::Rate { per_sec: 2.0 });
        assert_eq!(
            plan.roles[2].pacer,
            Pacer::Follow {
                leader: 1,
                bound: DELETE_LAG
            }
        );
        assert_eq!(plan.roles[0].quota, None);
        assert_eq!(plan.roles[1].quota, plan.roles[2].quota);
        assert_eq!(plan.measure, Some(Duration::from_secs(4)));
        crate::runner::step::check_roles(&plan).expect("the runner accepts the roles");
        let load = s.step_plan(0, "l.i0", Kind::Load(0));
        assert_eq!(load.roles.len(), 1, "l.i0 has no deleter");
        assert_eq!(load.measure, None, "load steps end on their quotas");
        assert!(s.step_plan(3, "l.i2", Kind::Load(2)).postwrite_after);
    }

    #[test]
    fn synthetic_datetimes_are_calendar_dates() {
        let mut out = [0u8; 19];
        datetime(0, &mut out);
        assert_eq!(&out, b"2026-01-01 00:00:00");
        datetime(59 * 86_400 + 3_661, &mut out);
        assert_eq!(&out, b"2026-03-01 01:01:01");
        datetime(365 * 86_400 * 2 + 86_400 * 59, &mut out);
        assert_eq!(&out, b"2028-02-29 00:00:00", "2028 is a leap year");
    }
}
