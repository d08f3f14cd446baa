//! Steps as the runner executes them: a list of roles, each with its pacer, operation types and
//! executor, plus how long the step lasts and which operations it counts.
//!
//! Owns the data every suite hands the runner ([`StepPlan`], [`Role`], [`Pacer`]) and the
//! executor interface ([`Executor`], [`ExecutorFactory`]). A sysbench step is one closed-loop
//! role with one operation type; an Insert Benchmark read-write step is a closed-loop querier
//! plus an inserter on a fixed-rate schedule and a deleter that follows it. Must not: time
//! anything, sleep, or know about a particular suite (those build these records).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{DbError, Dialect, Session, TableDdl};

/// When a role's next operation may start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacer {
    /// As soon as the previous one ended (sysbench's clients, the Insert Benchmark's queries
    /// and its unpaced load steps).
    Closed,
    /// `per_sec` operations per second per connection on an absolute schedule: operation `k`
    /// is due at `start + k / per_sec`; when behind, the next one runs at once (no sleep, no
    /// skip) and its latency counts from when it was due.
    Rate { per_sec: f64 },
    /// Operation `k` may start once operation `k` of role `leader` (same client) completed,
    /// and counts from that completion; the leader waits while it is more than `bound`
    /// operations ahead.
    Follow { leader: usize, bound: u32 },
}

/// What one operation did: which of the role's operation types it was, the units the suite
/// counts for it (statements, rows inserted or deleted, queries), and the rows it returned or
/// changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    pub op: usize,
    pub units: u64,
    pub rows: u64,
}

/// Runs the operations of one role on one connection. Owns its random state and reusable
/// buffers, so an operation allocates nothing the recorder would see.
pub trait Executor: Send {
    /// Run one operation. On error, roll back what it opened and return the error.
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError>;
    /// Rows returned or changed per statement of the role's work, summed over every operation
    /// run (statement order as the suite lists them).
    fn rows_touched(&self) -> &[u64];
    /// Whether this connection's work is done before its role's quota (the quota is the
    /// largest of any connection's): the runner then stops it as if it met its quota.
    fn finished(&self) -> bool {
        false
    }
}

/// Where an executor opens: the connection's dialect and client, its seed, and the target's
/// table DDL (what `l.x` needs to build indexes the way the target's engine does).
#[derive(Debug, Clone, Copy)]
pub struct Opening<'a> {
    pub dialect: Dialect,
    /// The 0-based client the connection belongs to.
    pub client: u32,
    /// Seeds the executor's randomness.
    pub seed: u64,
    pub ddl: &'a TableDdl,
}

/// Opens an [`Executor`] on a connection: prepares the statements (at setup and after a lost
/// connection).
pub trait ExecutorFactory: Send + Sync {
    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError>;
    /// Whether the role's operations can run again and again, any number of times (a count of
    /// instructions repeats them): false for work done once, such as a load of fixed rows, an
    /// index build or a check.
    fn repeatable(&self) -> bool {
        true
    }
    /// A factory whose executors run operation type `op` alone, where the role's types can run
    /// apart (a request mix); `None` where they cannot.
    fn only(&self, _op: usize) -> Option<Arc<dyn ExecutorFactory>> {
        None
    }
}

/// One kind of worker in a step.
#[derive(Clone)]
pub struct Role {
    /// `client` (sysbench), `inserter`, `deleter`, `querier`, `indexer`.
    pub name: &'static str,
    pub pacer: Pacer,
    /// Operations each connection completes before it stops (a quota); `None`: it runs until
    /// the step ends.
    pub quota: Option<u64>,
    /// Operation type names, indexed by [`Done::op`].
    pub ops: Vec<&'static str>,
    pub executor: Arc<dyn ExecutorFactory>,
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Role")
            .field("name", &self.name)
            .field("pacer", &self.pacer)
            .field("quota", &self.quota)
            .field("ops", &self.ops)
            .finish_non_exhaustive()
    }
}

/// The operations a step's rate, series and per-op costs count: one operation type of a role,
/// or all of the role's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub role: usize,
    pub op: Option<usize>,
}

impl Counted {
    pub fn covers(&self, role: usize, op: usize) -> bool {
        self.role == role && self.op.is_none_or(|o| o == op)
    }
}

/// One step, ready to run: everything the runner needs besides the cell (clients, repeat, seed,
/// client CPUs).
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// The suite's id (`sysbench`, `insert`).
    pub suite: &'static str,
    pub label: String,
    /// Position in the suite's order (stable across runs, for report ordering).
    pub index: u32,
    /// Report group id.
    pub group: String,
    /// Run and stored flagged, never reported.
    pub warm: bool,
    /// One connection per role per client; one client per table when set, whatever the cell's
    /// client count (`point-query.warm`).
    pub clients: Option<u32>,
    pub roles: Vec<Role>,
    pub counted: Counted,
    /// What the counted units are per second, for progress lines: `qps` (sysbench statements),
    /// `rows/s` (inserted or indexed rows), `queries/s`.
    pub rate_unit: &'static str,
    /// Statements per counted operation (the v1 `statements_per_event`).
    pub statements_per_event: u32,
    /// How many times each statement of the counted role's operation runs (rows per statement).
    pub event_shape: Vec<u32>,
    /// Rows one scan operation reads (thousands of rows scanned per second: `scan` only).
    pub scan_rows: Option<u64>,
    pub warmup: Duration,
    /// The measured period's length: a fixed step's, an adaptive step's maximum, or the cap of
    /// a step that ends on quotas; `None`: until the quotas are met.
    pub measure: Option<Duration>,
    /// The least measured time to expect (an adaptive step's minimum, a paced step's
    /// schedule; zero when unknown): the plan's time estimate and the progress bar's length.
    pub expected: Duration,
    /// Adaptive length: (target relative half-width, minimum measured time).
    pub stop_rule: Option<(f64, Duration)>,
    /// The postwrite cleanup runs after this step.
    pub postwrite_after: bool,
}

impl StepPlan {
    /// Client connections per role at a cell of `clients` clients.
    pub fn clients_at(&self, clients: u32) -> u32 {
        self.clients.unwrap_or(clients)
    }

    /// Whether some role stops on a quota (the step then ends when every quota is met).
    pub fn has_quota(&self) -> bool {
        self.roles.iter().any(|r| r.quota.is_some())
    }
}
