//! Workloads: what a suite runs, as data, and the per-dialect SQL it sends.
//!
//! Owns the step catalog ([`sysbench::CATALOG`]), the SQL text of every statement for every
//! dialect ([`sql`]), parameter generation, and the executor that runs one event (transaction)
//! on a session ([`EventExecutor`]). Must not: time anything, count QPS, or sleep; the runner
//! calls [`EventExecutor::run_event`] and does all of that around it.

pub mod sql;
pub mod sysbench;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{DbError, Param, Session, StmtId};
use sql::Stmt;

/// Which configured duration a step runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationRule {
    Read,
    Write,
}

/// Report groups of the sysbench catalog (suites.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Point,
    RangeNoAgg,
    RangeAgg,
    Writes,
}

impl Group {
    /// The id stored with each measurement and used by reports.
    pub fn id(self) -> &'static str {
        match self {
            Group::Point => "point",
            Group::RangeNoAgg => "range-noagg",
            Group::RangeAgg => "range-agg",
            Group::Writes => "writes",
        }
    }
}

/// How ids are drawn for a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// Uniform in 1..=rows.
    Uniform,
}

/// One measured step of a suite: its label, group, duration rule and the statements of one event.
#[derive(Debug, Clone, Copy)]
pub struct StepDef {
    /// Catalog label, e.g. `read-only_range=10`.
    pub label: &'static str,
    pub group: Group,
    pub duration: DurationRule,
    pub ids: Ids,
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
}

/// The scale a suite runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub tables: u32,
    pub rows: u64,
}

/// Runs the events of one step on one session. Owns its random state and reusable buffers, so
/// running an event allocates nothing.
pub struct EventExecutor {
    step: &'static StepDef,
    scale: Scale,
    /// `handles[i * tables + (t - 1)]`: statement `i` of the event on table `t`.
    handles: Vec<StmtId>,
    rng: SmallRng,
    int_params: Vec<Param<'static>>,
    c: [u8; sql::C_LEN],
    pad: [u8; sql::PAD_LEN],
    /// Rows returned or changed, per statement of the event, summed over all events run.
    pub rows_touched: Vec<u64>,
    rollback: Option<StmtId>,
}

impl EventExecutor {
    /// Prepare every statement of `step` on every table of the scale.
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
        Ok(EventExecutor {
            step,
            scale,
            handles,
            rng: SmallRng::seed_from_u64(seed),
            int_params: Vec::with_capacity(widest),
            c: [b'0'; sql::C_LEN],
            pad: [b'0'; sql::PAD_LEN],
            rows_touched: vec![0; step.event.len()],
            rollback,
        })
    }

    /// Run one event. On error, roll back an open transaction and return the error.
    pub fn run_event(&mut self, session: &mut dyn Session) -> Result<(), DbError> {
        let tables = self.scale.tables as usize;
        let t = if tables == 1 {
            0
        } else {
            self.rng.random_range(0..tables)
        };
        for i in 0..self.step.event.len() {
            let (count, stmt) = self.step.event[i];
            let handle = self.handles[i * tables + t];
            for _ in 0..count {
                match self.execute(session, stmt, handle) {
                    Ok(rows) => self.rows_touched[i] += rows,
                    Err(e) => {
                        if let Some(rb) = self.rollback {
                            let _ = session.execute(rb, &[]);
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    fn id(&mut self) -> i64 {
        match self.step.ids {
            Ids::Uniform => self.rng.random_range(1..=self.scale.rows as i64),
        }
    }

    fn execute(
        &mut self,
        session: &mut dyn Session,
        stmt: Stmt,
        handle: StmtId,
    ) -> Result<u64, DbError> {
        match stmt {
            Stmt::Begin | Stmt::Commit => session.execute(handle, &[]),
            Stmt::PointSelect | Stmt::UpdateIndex => {
                let id = self.id();
                session.execute(handle, &[Param::Int(id)])
            }
            Stmt::InList { n, .. } => {
                self.int_params.clear();
                for _ in 0..n {
                    let id = self.id();
                    self.int_params.push(Param::Int(id));
                }
                session.execute(handle, &self.int_params)
            }
            Stmt::Range { span, .. } => {
                let lo = self.id();
                let hi = lo + i64::from(span) - 1;
                session.execute(handle, &[Param::Int(lo), Param::Int(hi)])
            }
            Stmt::Insert => {
                let k = self.id();
                sql::fill_digits(&mut self.rng, &mut self.c);
                sql::fill_digits(&mut self.rng, &mut self.pad);
                let c = std::str::from_utf8(&self.c).expect("ascii");
                let pad = std::str::from_utf8(&self.pad).expect("ascii");
                session.execute(handle, &[Param::Int(k), Param::Text(c), Param::Text(pad)])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_per_event_follow_the_counting_rule() {
        let spe = |label: &str| sysbench::find(label).unwrap().statements_per_event();
        assert_eq!(spe("point-query"), 1);
        assert_eq!(spe("random-points_range=100"), 1);
        assert_eq!(spe("range-covered-pk"), 1);
        assert_eq!(spe("read-only_range=10"), 16);
        assert_eq!(spe("update-index"), 1);
        assert_eq!(spe("insert"), 1);
    }
}
