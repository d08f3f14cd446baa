//! The sysbench catalog's vocabulary and its executor: what a step is ([`StepDef`]: duration
//! rule, report group, id distribution, threads, the statements of one event) and the
//! [`EventExecutor`] that runs one event (transaction) on a session with the step's parameters
//! (uniform, zipfian, hot and fixed ids).
//!
//! Owns drawing parameters and binding them to the event's statements. Must not: time
//! anything, count QPS, or sleep; the runner calls [`Executor::run`] and does all of that
//! around it.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::sql::{self, Stmt};
use crate::engine::{DbError, Param, Session, StmtId};
use crate::workload::{Done, Executor, Scale, StepKind, Zipf, recycle};

/// Which configured duration a step runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationRule {
    /// `read_secs`
    Read,
    /// `write_secs`
    Write,
    /// The scan warm-ups: 60 s in the reference, here min(60 s, `read_secs`) so that small labs
    /// stay small.
    ScanWarm,
}

/// Report groups of the sysbench catalog (docs/workloads.md, The catalog).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Point,
    RangeNoAgg,
    RangeAgg,
    Writes,
    /// The `.pre` point steps (`pre = true`).
    Point1,
    /// The `.pre` range steps (`pre = true`).
    Range1,
    /// Point steps after the writes, when `pre = true`.
    Point2,
    /// Range steps (with and without aggregation) after the writes, when `pre = true`.
    Range2,
    /// Warm-up steps: run, stored flagged, never reported.
    Warm,
}

impl Group {
    /// The id stored with each measurement and used by reports.
    pub fn id(self) -> &'static str {
        match self {
            Group::Point => "point",
            Group::RangeNoAgg => "range-noagg",
            Group::RangeAgg => "range-agg",
            Group::Writes => "writes",
            Group::Point1 => "point-1",
            Group::Range1 => "range-1",
            Group::Point2 => "point-2",
            Group::Range2 => "range-2",
            Group::Warm => "warm",
        }
    }

    /// Display order in reports: point, range, writes (the reference's order); with `pre = true`
    /// the groups before the writes first.
    pub const REPORT_ORDER: [Group; 8] = [
        Group::Point1,
        Group::Range1,
        Group::Point,
        Group::Point2,
        Group::RangeNoAgg,
        Group::RangeAgg,
        Group::Range2,
        Group::Writes,
    ];

    /// The title reports show for the group.
    pub fn title(self) -> &'static str {
        match self {
            Group::Point => "point queries",
            Group::RangeNoAgg => "range queries without aggregation",
            Group::RangeAgg => "range queries with aggregation",
            Group::Writes => "writes",
            Group::Point1 => "point queries, before writes",
            Group::Range1 => "range queries, before writes",
            Group::Point2 => "point queries, after writes",
            Group::Range2 => "range queries, after writes",
            Group::Warm => "warm-up steps",
        }
    }

    /// The group a step reports under: with `pre = true` the reads after the writes form `point-2`
    /// and `range-2` (the 5-group split of `pre = true`: docs/workloads.md, The catalog).
    pub fn with_pre(self, pre: bool) -> Group {
        match (self, pre) {
            (Group::Point, true) => Group::Point2,
            (Group::RangeNoAgg | Group::RangeAgg, true) => Group::Range2,
            (g, _) => g,
        }
    }
}

/// How ids (and `k` values) are drawn for a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// Uniform in 1..=rows.
    Uniform,
    /// Zipfian over 1..=rows with exponent [`ZIPF_EXPONENT`] (id 1 hottest), as sysbench's
    /// `--rand-type=zipfian` draws them.
    Zipf,
    /// IN-lists use the fixed ids rows/2+1 ..= rows/2+n (`hot-points`).
    Hot,
    /// Always id 1 (`update-one`: sysbench with `--table-size=1`).
    One,
}

/// sysbench's default zipfian exponent (`--rand-zipfian-exp`, `src/sb_rand.c`).
pub const ZIPF_EXPONENT: f64 = 0.8;

/// How many client threads a step uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The cell's client count.
    Clients,
    /// One per table (`point-query.warm`, as the reference runs it).
    Tables,
}

/// One step of a suite: its label, kind, group, duration rule and the statements of one event.
#[derive(Debug, Clone, Copy)]
pub struct StepDef {
    /// Catalog label, e.g. `read-only_range=10`.
    pub label: &'static str,
    pub kind: StepKind,
    /// Report group without `pre` (see [`Group::with_pre`]).
    pub group: Group,
    pub duration: DurationRule,
    pub ids: Ids,
    pub threads: Threads,
    /// The statements of one event, each repeated `count` times, in order.
    pub event: &'static [(u32, Stmt)],
    /// Postwrite cleanup runs after this step.
    pub postwrite_after: bool,
}

impl StepDef {
    /// Statements per event: the QPS counting rule (BEGIN and COMMIT count).
    pub fn statements_per_event(&self) -> u32 {
        self.event.iter().map(|(n, _)| n).sum()
    }

    /// Reported steps are measured and shown; warm steps are not.
    pub fn reported(&self) -> bool {
        self.kind != StepKind::Warm
    }

    /// The event in short, e.g. `BEGIN, 10×point, range 10, COMMIT`.
    pub fn shape(&self) -> String {
        self.event
            .iter()
            .map(|(n, s)| match n {
                1 => s.short(),
                n => format!("{n}×{}", s.short()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Rows per execution of each statement of the event, from the rows each statement
    /// touched over `events` events (`None` without events).
    pub fn rows_per_statement(&self, rows_touched: &[u64], events: u64) -> Option<Vec<f64>> {
        (events > 0).then(|| {
            self.event
                .iter()
                .zip(rows_touched)
                .map(|((n, _), rows)| *rows as f64 / (events * u64::from(*n)) as f64)
                .collect()
        })
    }

    /// A scan step: reports thousands of rows scanned per second per client.
    pub fn is_scan(&self) -> bool {
        self.event.iter().any(|(_, s)| *s == Stmt::Scan)
    }
}

/// Draws the ids of one step.
struct IdGen {
    rng: SmallRng,
    rows: u64,
    ids: Ids,
    zipf: Option<Zipf>,
}

impl IdGen {
    /// An id (or `k` value) in 1..=rows by the step's rule.
    fn next(&mut self) -> i64 {
        match self.ids {
            Ids::Uniform | Ids::Hot => self.uniform(),
            Ids::One => 1,
            Ids::Zipf => {
                let z = self.zipf.expect("zipf set up for Ids::Zipf");
                z.sample(&mut self.rng) as i64
            }
        }
    }

    fn uniform(&mut self) -> i64 {
        self.rng.random_range(1..=self.rows as i64)
    }

    /// The `i`-th (0-based) value of an IN-list.
    fn in_list(&mut self, i: u32) -> i64 {
        match self.ids {
            Ids::Hot => (self.rows / 2) as i64 + 1 + i64::from(i),
            _ => self.next(),
        }
    }
}

/// Runs the events of one step on one session. Owns its random state and reusable buffers, so
/// running an event allocates nothing.
pub struct EventExecutor {
    step: &'static StepDef,
    scale: Scale,
    /// `handles[i * tables + (t - 1)]`: statement `i` of the event on table `t`.
    handles: Vec<StmtId>,
    ids: IdGen,
    /// The table (0-based) every event of this client uses, for scans; `None`: uniform per event.
    fixed_table: Option<usize>,
    params: Vec<Param<'static>>,
    c: [u8; sql::C_LEN],
    pad: [u8; sql::PAD_LEN],
    /// The id the event's DELETE removed, for the re-insert that follows it.
    deleted: i64,
    /// Rows returned or changed, per statement of the event, summed over all events run.
    pub rows_touched: Vec<u64>,
    rollback: Option<StmtId>,
    /// Statements per event: the units one event counts.
    statements: u64,
}

impl EventExecutor {
    /// Prepare every statement of `step` on every table of the scale. `seed` also names the
    /// client: its low 32 bits are the client index (see [`step_seed`]).
    pub fn new(
        step: &'static StepDef,
        scale: Scale,
        session: &mut dyn Session,
        dialect: crate::engine::Dialect,
        seed: u64,
    ) -> Result<EventExecutor, DbError> {
        let mut handles = Vec::with_capacity(step.event.len() * scale.tables as usize);
        let mut widest = 0usize;
        for (_, stmt) in step.event {
            widest = widest.max(stmt.params());
            for t in 1..=scale.tables {
                handles.push(session.prepare(&sql::text(*stmt, dialect, t))?);
            }
        }
        let needs_rollback = step.event.iter().any(|(_, s)| *s == Stmt::Begin);
        let rollback = if needs_rollback {
            Some(session.prepare("ROLLBACK")?)
        } else {
            None
        };
        let client = (seed & 0xffff_ffff) as usize;
        Ok(EventExecutor {
            step,
            scale,
            handles,
            ids: IdGen {
                rng: SmallRng::seed_from_u64(seed),
                rows: scale.rows,
                ids: step.ids,
                zipf: (step.ids == Ids::Zipf).then(|| Zipf::new(scale.rows, ZIPF_EXPONENT)),
            },
            fixed_table: step
                .is_scan()
                .then(|| client % scale.tables.max(1) as usize),
            params: Vec::with_capacity(widest),
            c: [b'0'; sql::C_LEN],
            pad: [b'0'; sql::PAD_LEN],
            deleted: 0,
            rows_touched: vec![0; step.event.len()],
            rollback,
            statements: u64::from(step.statements_per_event()),
        })
    }

    /// Run one event; returns the rows its statements returned or changed. On error, roll
    /// back an open transaction and return the error.
    pub fn run_event(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let tables = self.scale.tables as usize;
        let t = match self.fixed_table {
            Some(t) => t,
            None if tables == 1 => 0,
            None => self.ids.rng.random_range(0..tables),
        };
        let mut event_rows = 0;
        for i in 0..self.step.event.len() {
            let (count, stmt) = self.step.event[i];
            let handle = self.handles[i * tables + t];
            for _ in 0..count {
                match self.execute(session, stmt, handle) {
                    Ok(rows) => {
                        self.rows_touched[i] += rows;
                        event_rows += rows;
                    }
                    Err(e) => {
                        if let Some(rb) = self.rollback {
                            let _ = session.execute(rb, &[]);
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(event_rows)
    }

    fn execute(
        &mut self,
        session: &mut dyn Session,
        stmt: Stmt,
        handle: StmtId,
    ) -> Result<u64, DbError> {
        match stmt {
            // BEGIN and COMMIT touch no rows, whatever change count a driver carries over.
            Stmt::Begin | Stmt::Commit => session.execute(handle, &[]).map(|_| 0),
            Stmt::Scan => session.execute(handle, &[]),
            Stmt::PointSelect | Stmt::UpdateIndex => {
                let id = self.ids.next();
                session.execute(handle, &[Param::Int(id)])
            }
            Stmt::Delete => {
                self.deleted = self.ids.next();
                session.execute(handle, &[Param::Int(self.deleted)])
            }
            Stmt::InList { n, .. } => {
                self.params.clear();
                for i in 0..n {
                    let id = self.ids.in_list(i);
                    self.params.push(Param::Int(id));
                }
                session.execute(handle, &self.params)
            }
            Stmt::Range { span, .. } => {
                let lo = self.ids.next();
                let hi = lo + i64::from(span) - 1;
                session.execute(handle, &[Param::Int(lo), Param::Int(hi)])
            }
            Stmt::UpdateNonIndex => {
                sql::fill_digits(&mut self.ids.rng, &mut self.c);
                let id = self.ids.next();
                let c = std::str::from_utf8(&self.c).expect("ascii");
                session.execute(handle, &[Param::Text(c), Param::Int(id)])
            }
            Stmt::UpdateInList { n } => {
                sql::fill_digits(&mut self.ids.rng, &mut self.c);
                let c = std::str::from_utf8(&self.c).expect("ascii");
                let mut params = recycle(std::mem::take(&mut self.params));
                params.push(Param::Text(c));
                for i in 0..n {
                    params.push(Param::Int(self.ids.in_list(i)));
                }
                let result = session.execute(handle, &params);
                self.params = recycle(params);
                result
            }
            Stmt::Insert => {
                let k = self.ids.uniform();
                sql::fill_digits(&mut self.ids.rng, &mut self.c);
                sql::fill_digits(&mut self.ids.rng, &mut self.pad);
                let c = std::str::from_utf8(&self.c).expect("ascii");
                let pad = std::str::from_utf8(&self.pad).expect("ascii");
                session.execute(handle, &[Param::Int(k), Param::Text(c), Param::Text(pad)])
            }
            Stmt::Reinsert => {
                let k = self.ids.uniform();
                sql::fill_digits(&mut self.ids.rng, &mut self.c);
                sql::fill_digits(&mut self.ids.rng, &mut self.pad);
                let c = std::str::from_utf8(&self.c).expect("ascii");
                let pad = std::str::from_utf8(&self.pad).expect("ascii");
                session.execute(
                    handle,
                    &[
                        Param::Int(self.deleted),
                        Param::Int(k),
                        Param::Text(c),
                        Param::Text(pad),
                    ],
                )
            }
        }
    }
}

impl Executor for EventExecutor {
    /// One event: one operation of the step's only type, counting its statements.
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let rows = self.run_event(session)?;
        Ok(Done {
            op: 0,
            units: self.statements,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}
