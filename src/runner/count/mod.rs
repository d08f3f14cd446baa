//! The counting pass: instructions per operation of every step of a target, counted under
//! callgrind ([`crate::counter`]) on a server and a client of their own, and stored on the
//! target's first repeat (`server_instructions_per_op`, its spread, `client_instructions_per_op`).
//! A step is counted part by part ([`count_plan`]): its counted role, each other role alone
//! (stored in that role's operation row), each type of a request mix alone; work done once runs
//! once, uncounted.
//!
//! The server's count is split by the engine's [`counter::Attribution`]: the pass's own
//! statements (foreground: `server_instructions_per_op`, the verdict's basis) and the server's
//! background work during the pass (`server_background_instructions_per_op`, with its spread).
//! The same pairs give each step's per-function instructions/op (`functions`), stored
//! beside it.
//!
//! One counting cell per target × suite (after the timed cells): a fresh data directory, the
//! server started under callgrind with counting off (SQLite: in this process), the suite's
//! tables loaded, then a client process of its own (`dbdelta count-client`, also under
//! callgrind) runs each step's passes while this side switches counting on and dumps the
//! counts between passes. A step's value is the difference of two passes of n and 3n events
//! divided by the difference of their operations, so start-up, connection and dump costs cancel;
//! `passes` such pairs give the value (their mean) and its spread (half their range).
//! On the perf path (the run's [`counter::Counter::Perf`], for engines whose sessions name the
//! server task serving them: [`crate::engine::EngineKind::server_tasks`]) nothing runs under
//! valgrind: the server starts as a counting server (its background held still) and the client
//! plainly, and each pass's `step::run_counting` counts the pass's client threads and the server
//! tasks serving their connections with `perf stat`; the pairs of passes are the same, and no
//! background work is counted.
//! Must not: time database work (the client's passes are counted by events, and their timing is
//! the runner's `step::run`'s), or judge (the report's verdicts compare the spreads).
//!
//! This file keeps the shared types (what goes over the pipe, a step's counts); `cells` (which
//! cells count, each recorded as it ends), `pool` (up to `count_jobs` cells at once),
//! `plan` (what a step's passes run), `sink` (where counts go, shared sizes), `counting_cell`
//! (the cell), `passes` (passes and pairs), `functions` (per-function costs of a step's
//! pairs) and `client` (the count client process) hold the rest.

pub(super) mod cells;
mod client;
mod counted;
mod counting_cell;
mod functions;
mod passes;
mod plan;
mod pool;
mod sink;
mod starts;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::counter;
use crate::engine::TargetSpec;
use crate::results::StepFunctions;
use crate::workload::StepPlan;
pub use client::client_main;
pub(super) use counting_cell::CountCell;
pub use passes::WIDE_PAIRS;
pub use plan::count_plan;
pub use sink::{Count, CountSink, Sizes};
pub use starts::{ServerStart, order as start_order};

/// Events per connection of the first sizing pass of a step (then 8 times as many each round).
const SIZING_EVENTS: u64 = 4;
/// Bounds of a short pass's events (the long one runs three times as many).
const MIN_EVENTS: u64 = 3;
const MAX_EVENTS: u64 = 200_000;
/// The last sizing round is the first of this many events or more: its passes differing by
/// less than a twentieth of the budget (over twice its events) put n above [`MAX_EVENTS`].
const SIZING_LAST: u64 = MAX_EVENTS / 40;
/// Before the last round, a sizing round sizes n only when its passes differ by at least its
/// short pass's count over this: what a pass costs whatever its events (its connections) then
/// outweighs that difference at most this many times, and its noise cannot size n.
const FIXED_SHARE: f64 = 32.0;
/// The fewest events of a short pass over a mix of operation types (LinkBench's requests): the
/// passes' mixes must come close to the step's, whose rarer types have shares of 1% and less.
const MIX_MIN_EVENTS: u64 = 1_000;
/// How long the backends of a pass may take to exit (their counts are written at exit).
const EXIT_WAIT: Duration = Duration::from_secs(120);
/// Free space in the dump directory below which a dump that was not written is put down to a
/// full file system: a write that failed left less than a block, though other cells' dumps
/// taken meanwhile free some.
const FULL_BELOW: u64 = 1 << 20;

/// What the counting client is told first: the lab to plan the steps from, the target as the
/// engine starts it, and where its server is.
#[derive(Debug, Serialize, Deserialize)]
struct Init {
    lab: String,
    quick: bool,
    spec: TargetSpec,
    suite: String,
    clients: u32,
    /// The server's URL (its unix socket) with its password (this goes over a pipe); `None`:
    /// an in-process engine in `data_dir`.
    url: Option<String>,
    data_dir: PathBuf,
    /// The perf path's event; `None`: under callgrind.
    #[serde(default)]
    perf_event: Option<String>,
}

/// One pass: `events` events of `step`'s `part` (over all connections), seeded by
/// `seed_repeat`; without a part, the step as planned (work done once, uncounted).
#[derive(Debug, Serialize, Deserialize)]
struct Pass {
    step: String,
    part: Option<Part>,
    events: u64,
    seed_repeat: u32,
}

impl Pass {
    /// `step` as planned, once.
    fn once(step: &StepPlan) -> Pass {
        Pass {
            step: step.label.clone(),
            part: None,
            events: 0,
            seed_repeat: 0,
        }
    }
}

/// What a counting pass runs of a step: role `role` alone, closed-loop, its units those of
/// type `op` (`None`: all its types); `only`: its executors run type `op` alone (one type of a
/// request mix); `refill`: before each pass, the role it follows (a deleter's inserter) runs
/// as many events uncounted, so that it finds as many rows to delete as it deletes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub role: usize,
    pub op: Option<usize>,
    pub only: bool,
    pub refill: Option<usize>,
}

/// How the counting cell treats a step.
#[derive(Debug, Clone, PartialEq)]
pub enum CountPlan {
    /// Not run: a warm-up.
    Skip,
    /// Run once, as planned and uncounted: work done once that later steps need (a load of
    /// fixed rows, an index build, a check).
    Once,
    /// Counted part by part: the step's own count first (its counted role and type), then each
    /// other role alone, then each type of a mix alone.
    Parts(Vec<Part>),
}

/// The client's answer: the counted operations and events of a pass, or why it failed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Done {
    units: u64,
    events: u64,
    errors: u64,
    error: Option<String>,
    /// On the perf path: what `perf stat` counted over the pass.
    #[serde(default)]
    perf: Option<super::step::PerfCounts>,
}

/// What a pass counted: the server's instructions for the pass's statements (foreground) and
/// its background work apart, and the client's; the engine's per-function costs (the
/// server's, or an in-process engine's: the client's).
#[derive(Debug, Clone)]
struct Counts {
    units: u64,
    events: u64,
    server: u64,
    background: u64,
    client: u64,
    functions: counter::SplitFunctions,
}

/// One step's result: instructions per op of the server (foreground and background) and of the
/// client, per pair of passes.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCount {
    pub server: Vec<f64>,
    pub background: Vec<f64>,
    pub client: Vec<f64>,
    /// Each pair's seed (k, from 1), in the order counted.
    pub seeds: Vec<u32>,
    /// Events of the short pass.
    pub events: u64,
    /// The engine's per-function instructions/op from the same pairs.
    pub functions: StepFunctions,
}

impl StepCount {
    /// (mean, half the range) of `values`.
    fn summary(values: &[f64]) -> Option<(f64, f64)> {
        crate::results::pairs::summary(values)
    }
}
