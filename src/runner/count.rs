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
//! The same pairs give each step's per-function instructions/op (`count_functions`), stored
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

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::cell::CellEnd;
use super::count_functions::{PairFunctions, step_functions};
use super::server::{StartServer, TargetServer};
use super::{DataDir, timed_load};
use crate::counter::{self, Counting};
use crate::engine::{Server, TargetSpec};
use crate::plan::{RunPlan, TargetPlan};
use crate::progress::{Progress, thousands};
use crate::results::{InstructionPairs, Metric, OpInstructions, StepFunctions};
use crate::store::{CellKey, Store};
use crate::workload::{Pacer, StepPlan, SuitePlan};

/// Events of the first sizing pass of a step (then 8 times as many each round).
const SIZING_EVENTS: u64 = 4;
/// Bounds of a short pass's events (the long one runs three times as many).
const MIN_EVENTS: u64 = 3;
const MAX_EVENTS: u64 = 200_000;
/// The fewest events of a short pass over a mix of operation types (LinkBench's requests): the
/// passes' mixes must come close to the step's, whose rarer types have shares of 1% and less.
const MIX_MIN_EVENTS: u64 = 1_000;
/// How long the backends of a pass may take to exit (their counts are written at exit).
const EXIT_WAIT: Duration = Duration::from_secs(120);

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
    /// Events of the short pass.
    pub events: u64,
    /// The engine's per-function instructions/op from the same pairs.
    pub functions: StepFunctions,
}

impl StepCount {
    /// (mean, half the range) of `values`.
    fn summary(values: &[f64]) -> Option<(f64, f64)> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let (lo, hi) =
            (values.iter()).fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
        Some((mean, (hi - lo) / 2.0))
    }
}

/// How the counting cell treats `step`. A role's work counts per event when it runs alone and
/// closed-loop (a paced role's work follows the clock, so each role is counted on its own).
pub fn count_plan(step: &StepPlan) -> CountPlan {
    if step.warm {
        return CountPlan::Skip;
    }
    if step.roles.iter().any(|r| !r.executor.repeatable()) {
        return CountPlan::Once;
    }
    let refill = |role: usize| match step.roles[role].pacer {
        Pacer::Follow { leader, .. } => Some(leader),
        _ => None,
    };
    let c = step.counted;
    let mut parts = vec![Part {
        role: c.role,
        op: c.op,
        only: false,
        refill: refill(c.role),
    }];
    for (i, role) in step.roles.iter().enumerate() {
        if i != c.role {
            parts.push(Part {
                role: i,
                op: None,
                only: false,
                refill: refill(i),
            });
        }
        if role.ops.len() < 2 {
            continue;
        }
        for k in (0..role.ops.len()).filter(|&k| role.executor.only(k).is_some()) {
            parts.push(Part {
                role: i,
                op: Some(k),
                only: true,
                refill: refill(i),
            });
        }
    }
    CountPlan::Parts(parts)
}

impl Part {
    /// Whether this is the step's own count (stored on its measurement row).
    fn is_step(&self, step: &StepPlan) -> bool {
        self.role == step.counted.role && self.op == step.counted.op && !self.only
    }

    /// The (role, operation type) names of the operation row an apart count is stored in: the
    /// role's first type when it counts all of them.
    fn names(&self, step: &StepPlan) -> (&'static str, &'static str) {
        let role = &step.roles[self.role];
        (role.name, role.ops[self.op.unwrap_or(0)])
    }

    /// `update-index`, `qr100 deleter`, `linkbench.c1 get_node`.
    fn label(&self, step: &StepPlan) -> String {
        match (self.is_step(step), self.only) {
            (true, _) => step.label.clone(),
            (false, true) => format!("{} {}", step.label, self.names(step).1),
            (false, false) => format!("{} {}", step.label, self.names(step).0),
        }
    }
}

/// `step` as a counting pass runs `part` of it: that role alone, closed-loop, `events` events
/// over `clients` connections, no warm-up, no deadline; without a part, the step as planned
/// (no warm-up).
fn pass_step(step: &StepPlan, part: Option<&Part>, events: u64, clients: u32) -> Result<StepPlan> {
    let mut s = step.clone();
    s.warmup = Duration::ZERO;
    let Some(part) = part else {
        return Ok(s);
    };
    s.measure = None;
    s.stop_rule = None;
    s.expected = Duration::ZERO;
    let mut role = (step.roles.get(part.role).cloned())
        .with_context(|| format!("{} has no role {}", step.label, part.role))?;
    if part.only {
        role.executor = (part.op.and_then(|k| role.executor.only(k)))
            .with_context(|| format!("{}'s {} cannot run one type alone", step.label, role.name))?;
    }
    role.pacer = Pacer::Closed;
    let per_connection = events.div_ceil(u64::from(clients.max(1)));
    role.quota = Some(per_connection.max(1));
    s.roles = vec![role];
    s.counted = crate::workload::Counted {
        role: 0,
        op: part.op,
    };
    Ok(s)
}

/// What one counted part of a step stores.
#[derive(Debug, Clone)]
pub enum Count {
    /// The step's own count: its metric values and pairs of passes.
    Step {
        values: Vec<(Metric, Option<f64>)>,
        pairs: InstructionPairs,
        functions: Option<StepFunctions>,
    },
    /// An operation type counted on its own, for the step's (role, type) operation row.
    Op {
        role: &'static str,
        op: &'static str,
        counts: OpInstructions,
    },
}

/// Where a counted step's values go: the store (stored on the target's first repeat), or, when
/// cells count in parallel, the thread that owns it. Returns whether a timed row held them.
pub trait CountSink {
    fn counted(&mut self, key: &CellKey, run_id: &str, step: &str, count: &Count) -> Result<bool>;
}

impl CountSink for Store {
    fn counted(&mut self, key: &CellKey, run_id: &str, step: &str, count: &Count) -> Result<bool> {
        match count {
            Count::Step {
                values,
                pairs,
                functions,
            } => {
                let stored = self.set_counted(key, run_id, step, values, Some(pairs))?;
                if let (true, Some(f)) = (stored, functions) {
                    self.set_functions(key, run_id, step, f)?;
                }
                Ok(stored)
            }
            Count::Op { role, op, counts } => {
                self.set_counted_op(key, run_id, step, (role, op), counts)
            }
        }
    }
}

/// The events of each part's short pass, shared by the counting cells of one run: the first
/// cell to size a part sets its n, and every other target whose own n is within a factor of
/// [`SHARED_WITHIN`] runs the same, so that their k-th pairs of passes touch the same rows and
/// the report can pair them. Each cell sizing alone on a 1-2-5 grid still put near costs on
/// either side of a grid line: PostgreSQL 16 vs 17 ran 5 of 32 steps, MySQL 5.6 vs 8.0 11 of
/// 32, with different n (e.g. 500 and 200 events), and those could not be paired.
#[derive(Debug, Default)]
pub struct Sizes(std::sync::Mutex<std::collections::HashMap<String, u64>>);

/// How far a target's own n may be from the shared one and still run it.
const SHARED_WITHIN: f64 = 4.0;

impl Sizes {
    /// The n to run for `key`, given this cell's own.
    fn agree(&self, key: String, own: u64) -> u64 {
        let mut sizes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let shared = *sizes.entry(key).or_insert(own);
        let apart = (shared as f64 / own.max(1) as f64).ln().abs();
        if apart <= SHARED_WITHIN.ln() {
            shared
        } else {
            own
        }
    }
}

/// One target × suite's counting cell, as the runner hands it over.
pub(super) struct CountCell<'a> {
    pub plan: &'a RunPlan,
    pub suite: &'a SuitePlan,
    pub target: &'a TargetPlan,
    pub key: CellKey,
    pub run_id: &'a str,
    pub data_dir: &'a Path,
    pub log: &'a Path,
    pub store: &'a mut dyn CountSink,
    pub progress: &'a Progress,
    pub interrupt: &'a Arc<AtomicBool>,
    pub start: StartServer,
    pub counting: Counting,
    pub counter: &'a counter::Counter,
    pub sizes: &'a Sizes,
}

impl CountCell<'_> {
    fn label(&self) -> String {
        format!("{} c={} counting", self.target.name, self.key.clients)
    }

    /// This cell's counter: the run's, but callgrind for an engine whose sessions do not name
    /// the server task serving them.
    fn counter(&self) -> counter::Counter {
        match self.target.engine.server_tasks() {
            true => self.counter.clone(),
            false => counter::Counter::Callgrind,
        }
    }

    /// Start, load, count every countable step, stop. Errors fail the cell (the runner
    /// records them against the target).
    pub fn run(&mut self) -> Result<CellEnd> {
        let dir = self.data_dir;
        if dir.exists() {
            bail!(
                "data directory {} exists; remove it or choose another --workdir",
                dir.display()
            );
        }
        std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        // Absolute: a server may run in another directory (MySQL runs in its data directory).
        let out = std::path::absolute(format!("{}.callgrind", dir.display()))?;
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        // The server runs as its own user and writes its counts here.
        std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777))?;
        let _dirs = [dir.to_path_buf(), out.clone()].map(|path| DataDir {
            path,
            keep: self.plan.keep,
        });
        let mut spec = self.target.spec(self.suite.prepared);
        let embedded = spec.engine.embedded();
        let by = self.counter();
        spec.counting = true;
        if !embedded && by == counter::Counter::Callgrind {
            spec.wrap = counter::wrap(&out, "server", spec.engine.attribution());
        }
        let TargetServer {
            server,
            clients_there,
        } = (self.start)(&spec, dir, self.log)?;
        if clients_there.is_some() {
            bail!("instructions are counted only for servers on this host");
        }
        self.progress.line(&format!(
            "{}: {} started, counted by {}",
            self.label(),
            server.version(),
            by.name()
        ));
        let end = self.load_and_count(server.as_ref(), &spec, &out);
        let stopped = server.stop();
        let end = end?;
        stopped?;
        Ok(end)
    }

    fn load_and_count(
        &mut self,
        server: &dyn Server,
        spec: &TargetSpec,
        out: &Path,
    ) -> Result<CellEnd> {
        let clients = self.key.clients;
        let suite = self.suite.suite.as_ref();
        let tables = suite.tables(clients);
        {
            let driver = server.driver();
            let mut session = driver.connect().context("connecting for the load")?;
            let ddl = &self.target.tables;
            timed_load(suite, session.as_mut(), driver.dialect(), ddl, clients)?;
        }
        if self.suite.postwrite_after_load {
            server
                .postwrite(&tables, self.suite.postwrite_budget)
                .context("postwrite cleanup after the load")?;
        }
        let mut hold = PurgeHold {
            sql: spec.engine.purge_hold(),
            driver: server.driver(),
            session: None,
        };
        hold.hold()?;
        let by = self.counter();
        let mut client = CountClient::spawn(out, self.log, by.perf_event().is_none())?;
        client.init(&Init {
            // The lab with this target alone, plain: the client plans only the steps from it.
            lab: crate::plan::lab::for_agent(
                &self.plan.lab.text,
                &self.target.name,
                self.target.engine,
            )
            .map_err(anyhow::Error::msg)?,
            quick: self.plan.quick,
            spec: spec.clone(),
            suite: suite.id().into(),
            clients,
            url: server.client_url().map(|u| u.with_secret()),
            data_dir: server.data_dir().to_path_buf(),
            perf_event: by.perf_event().map(str::to_string),
        })?;
        let counted = Counted {
            server: (!spec.wrap.is_empty())
                .then(|| server.started_pid())
                .flatten(),
            out: out.to_path_buf(),
            embedded: spec.engine.embedded(),
            by: spec.engine.attribution(),
            drop_first: spec.engine.drops_first_pair(),
            counter: by,
            functions: std::cell::Cell::new(false),
        };
        counted.switch(true)?;
        counted.take()?;
        let end = self.count_steps(server, &counted, &mut client, &mut hold)?;
        if matches!(end, CellEnd::Done) {
            client.finish();
        }
        Ok(end)
    }

    /// Every step of the suite in order: counted part by part, run once, or skipped (see
    /// [`count_plan`]), with the postwrite cleanups where the suite has them.
    fn count_steps(
        &mut self,
        server: &dyn Server,
        counted: &Counted,
        client: &mut CountClient,
        hold: &mut PurgeHold,
    ) -> Result<CellEnd> {
        let tables = self.suite.suite.tables(self.key.clients);
        for step in &self.suite.steps {
            if self.interrupt.load(Ordering::Relaxed) {
                return Ok(CellEnd::Interrupted);
            }
            match count_plan(step) {
                CountPlan::Skip => {}
                CountPlan::Once => {
                    uncounted(counted, client, &Pass::once(step)).with_context(|| {
                        format!("{}: {} (run once, uncounted)", self.label(), step.label)
                    })?
                }
                CountPlan::Parts(parts) => {
                    for part in &parts {
                        if self.interrupt.load(Ordering::Relaxed) {
                            return Ok(CellEnd::Interrupted);
                        }
                        self.count_and_store(counted, client, step, part)?;
                    }
                }
            }
            if step.postwrite_after {
                counted.switch(false)?;
                hold.release();
                server
                    .postwrite(&tables, self.suite.postwrite_budget)
                    .with_context(|| format!("postwrite cleanup after {}", step.label))?;
                hold.hold()?;
                counted.switch(true)?;
                counted.take()?;
            }
        }
        Ok(CellEnd::Done)
    }

    /// Count one part of a step and store its values on the target's first repeat.
    fn count_and_store(
        &mut self,
        counted: &Counted,
        client: &mut CountClient,
        step: &StepPlan,
        part: &Part,
    ) -> Result<()> {
        let started = Instant::now();
        let prefix = format!("{} {}", self.label(), part.label(step));
        let shared = (
            self.sizes,
            format!(
                "{} {} c={}",
                self.suite.suite.id(),
                part.label(step),
                self.key.clients
            ),
        );
        let c = count_step(
            counted,
            client,
            step,
            part,
            self.key.clients,
            self.counting,
            shared,
        )
        .with_context(|| format!("{prefix}: counting instructions"))?;
        let server = StepCount::summary(&c.server);
        let perf = counted.counter != counter::Counter::Callgrind;
        let background = StepCount::summary(&c.background).filter(|_| !counted.embedded && !perf);
        let client_v = StepCount::summary(&c.client).filter(|_| !counted.embedded);
        let mut count = to_count(step, part, &c, server, background, client_v);
        match &mut count {
            Count::Step { pairs, .. }
            | Count::Op {
                counts: OpInstructions { pairs, .. },
                ..
            } => pairs.counter = Some(counted.counter.name()),
        }
        let stored = (self.store).counted(&self.key, self.run_id, &step.label, &count)?;
        let unit = match counted.counter.perf_event() {
            Some(event) if event != counter::HARDWARE_EVENT => event,
            _ => "instructions",
        };
        let shown = match server {
            Some((mean, half)) => format!(
                "{} {unit}/op ±{:.2}%{}",
                thousands(mean),
                100.0 * half / mean.max(1.0),
                background
                    .map(|(b, h)| format!(" (background {} ±{})", thousands(b), thousands(h)))
                    .unwrap_or_default()
            ),
            None => "no instructions counted".into(),
        };
        let note = if stored {
            ""
        } else {
            " (no timed row to store it on)"
        };
        self.progress.line(&format!(
            "{prefix}: {shown}, {} × ({} + {}) events, {:.1} s{note}",
            c.server.len(),
            c.events,
            3 * c.events,
            started.elapsed().as_secs_f64()
        ));
        Ok(())
    }
}

/// What `part`'s count stores: the step's metric values, or an apart operation type's.
fn to_count(
    step: &StepPlan,
    part: &Part,
    c: &StepCount,
    server: Option<(f64, f64)>,
    background: Option<(f64, f64)>,
    client: Option<(f64, f64)>,
) -> Count {
    let pairs = InstructionPairs {
        events: c.events,
        per_op: c.server.clone(),
        counter: None,
    };
    match (part.is_step(step), server) {
        (false, Some((mean, half))) => {
            let (role, op) = part.names(step);
            Count::Op {
                role,
                op,
                counts: OpInstructions {
                    server: mean,
                    spread: half,
                    background: background.map(|b| b.0),
                    background_spread: background.map(|b| b.1),
                    client: client.map(|c| c.0),
                    pairs,
                },
            }
        }
        _ => Count::Step {
            values: vec![
                (Metric::ServerInstr, server.map(|s| s.0)),
                (Metric::ServerInstrSpread, server.map(|s| s.1)),
                (Metric::ServerBgInstr, background.map(|s| s.0)),
                (Metric::ServerBgInstrSpread, background.map(|s| s.1)),
                (Metric::ClientInstr, client.map(|s| s.0)),
            ],
            pairs,
            functions: server.map(|_| c.functions.clone()),
        },
    }
}

/// A connection of the counting cell's own that holds the server's purge back while the passes
/// run (see [`crate::engine::EngineKind::purge_hold`]); released for the postwrite cleanups,
/// which wait for purge. Idle during the passes: its thread counts nothing there.
struct PurgeHold {
    sql: Option<&'static str>,
    driver: std::sync::Arc<dyn crate::engine::Driver>,
    session: Option<Box<dyn crate::engine::Session>>,
}

impl PurgeHold {
    fn hold(&mut self) -> Result<()> {
        let Some(sql) = self.sql else {
            return Ok(());
        };
        let mut session = (self.driver.connect()).context("connecting to hold purge back")?;
        session.execute_sql(sql).with_context(|| sql.to_string())?;
        self.session = Some(session);
        Ok(())
    }

    fn release(&mut self) {
        if let Some(mut s) = self.session.take() {
            let _ = s.execute_sql("COMMIT");
        }
    }
}

/// The counted processes of a cell and where their counts go.
struct Counted {
    /// The server's main process when it runs under callgrind.
    server: Option<u32>,
    out: PathBuf,
    embedded: bool,
    /// How the server's counts split into the pass's statements and background work.
    by: counter::Attribution,
    /// Run one pair of passes before the kept ones ([`crate::engine::EngineKind::drops_first_pair`]).
    drop_first: bool,
    /// Callgrind, or perf (the client answers each pass's counts).
    counter: counter::Counter,
    /// Whether a pass's per-function costs are read (only the pairs' passes need them).
    functions: std::cell::Cell<bool>,
}

impl Counted {
    /// Switch the server's counting on or off (the client switches its own on, and is idle
    /// while the server's is off).
    fn switch(&self, on: bool) -> Result<()> {
        let what = if on {
            "instrumentation on"
        } else {
            "instrumentation off"
        };
        if let Some(pid) = &self.server {
            counter::command(*pid, what)?;
        }
        Ok(())
    }

    /// Dump the server's process that stays, then take (server, client) instructions since
    /// the last take: the server's forked processes of the pass must have exited by then, and
    /// the client dumps its own before it answers.
    fn take(&self) -> Result<(counter::Split, u64)> {
        self.take_functions(None, None)
    }

    /// [`Counted::take`], the server's and the client's per-function costs added to
    /// `server_fns` and `client_fns` when given.
    fn take_functions(
        &self,
        server_fns: Option<&mut counter::SplitFunctions>,
        client_fns: Option<&mut counter::SplitFunctions>,
    ) -> Result<(counter::Split, u64)> {
        if let Some(pid) = &self.server {
            counter::command(*pid, "dump")?;
        }
        let (server, _) =
            counter::take_split_functions(&self.out, "server", self.by, self.server, server_fns)?;
        let all = counter::Attribution::All;
        let (client, _) =
            counter::take_split_functions(&self.out, "client", all, None, client_fns)?;
        Ok((server, client.foreground))
    }

    /// Wait until the server's processes forked since `before` (a pass's backends) exited and
    /// wrote their counts: none of them is a child any more, and no dump file but those
    /// `unfinished` before the pass (the long-lived processes') is empty or half written. The
    /// files are the sure sign: `/proc`'s list of children can miss a child while it changes.
    fn settle(&self, before: &[u32], unfinished: &[String]) -> Result<()> {
        let Some(pid) = self.server else {
            return Ok(());
        };
        let deadline = Instant::now() + EXIT_WAIT;
        loop {
            let running = counter::children(pid).iter().any(|c| !before.contains(c));
            let writing = !running
                && (counter::unfinished(&self.out, "server")?.iter())
                    .any(|f| !unfinished.contains(f));
            if !running && !writing {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "the server's processes of the pass did not exit and write their counts within {} s",
                    EXIT_WAIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The server's dump files that are not whole (see [`counter::unfinished`]).
    fn unfinished(&self) -> Result<Vec<String>> {
        match self.server {
            Some(_) => counter::unfinished(&self.out, "server"),
            None => Ok(Vec::new()),
        }
    }

    fn children(&self) -> Vec<u32> {
        self.server.map(counter::children).unwrap_or_default()
    }
}

/// Run `pass` with the server's counting off, and take away what the client counted
/// meanwhile.
fn uncounted(counted: &Counted, client: &mut CountClient, pass: &Pass) -> Result<()> {
    counted.switch(false)?;
    let done = run_and_take(counted, client, pass);
    counted.switch(true)?;
    done.map(|_| ())
}

/// One pass of `events` events of `part`: what it counted. A part that follows another role
/// (a deleter) gets as many events of that role first, uncounted.
fn pass(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    events: u64,
    seed_repeat: u32,
) -> Result<Counts> {
    let mut pass = Pass {
        step: step.label.clone(),
        part: None,
        events,
        seed_repeat,
    };
    if let Some(leader) = part.refill {
        pass.part = Some(Part {
            role: leader,
            op: None,
            only: false,
            refill: None,
        });
        uncounted(counted, client, &pass)?;
    }
    pass.part = Some(*part);
    run_and_take(counted, client, &pass)
}

/// Run a pass and take what it counted.
fn run_and_take(counted: &Counted, client: &mut CountClient, pass: &Pass) -> Result<Counts> {
    let before = counted.children();
    let unfinished = counted.unfinished()?;
    let done = client.pass(pass)?;
    counted.settle(&before, &unfinished)?;
    let mut fns = counter::SplitFunctions::default();
    let (server, client_instr) = match (counted.functions.get(), counted.embedded) {
        (false, _) => counted.take()?,
        (true, true) => counted.take_functions(None, Some(&mut fns))?,
        (true, false) => counted.take_functions(Some(&mut fns), None)?,
    };
    if let Some(e) = done.error {
        bail!("{e}");
    }
    if done.errors > 0 {
        bail!("{} of the pass's events failed", done.errors);
    }
    let (server, client_instr) = match done.perf {
        Some(p) if p.tasks == 0 && !counted.embedded => {
            bail!("perf stat: the server named no task serving the pass's connections")
        }
        Some(p) => (
            counter::Split {
                foreground: p.server,
                background: 0,
            },
            p.client,
        ),
        None if counted.counter != counter::Counter::Callgrind => {
            bail!("the counting client counted nothing with perf stat")
        }
        None => (server, client_instr),
    };
    let (server, background, client_instr) = match counted.embedded {
        // In-process: the engine's instructions are the client process's.
        true => (client_instr, 0, 0),
        false => (server.foreground, server.background, client_instr),
    };
    Ok(Counts {
        units: done.units,
        events: done.events,
        server,
        background,
        client: client_instr,
        functions: fns,
    })
}

/// The marginal instructions of one event of `step`, from pairs of small passes of k and 3k
/// events (k = 4, 32, 256, ...) until their difference is a twentieth of `budget`; they also
/// warm the caches. A pass's fixed cost (its connections and statements) cancels in the
/// difference; when it does not (a negative difference), the long pass's mean is taken.
fn size(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    budget: u64,
) -> Result<f64> {
    // The statements' own work and the client's: the background's, which follows the clock,
    // would size the same step of two identical targets differently.
    let total = |c: &Counts| (c.server + c.client) as f64;
    let mut k = SIZING_EVENTS;
    loop {
        let a = pass(counted, client, step, part, k, 998)?;
        let b = pass(counted, client, step, part, 3 * k, 999)?;
        let diff = total(&b) - total(&a);
        let events = (b.events as f64 - a.events as f64).max(1.0);
        if diff >= budget as f64 / 20.0 || k >= MAX_EVENTS / 8 {
            return Ok(match diff > 0.0 {
                true => diff / events,
                false => total(&b) / b.events.max(1) as f64,
            });
        }
        k *= 8;
    }
}

/// `n` rounded down to 1, 2 or 5 times a power of ten: targets whose events cost within about
/// a factor of two of each other run the same numbers of events, so their k-th pairs of passes
/// touch the same rows and the report can pair them.
fn on_grid(n: u64) -> u64 {
    let mut scale = 1;
    while scale * 10 <= n {
        scale *= 10;
    }
    [5, 2, 1]
        .into_iter()
        .map(|m| m * scale)
        .find(|&g| g <= n)
        .unwrap_or(n.max(1))
}

/// The kept pairs counted when the first `passes` disagree by more than [`SPREAD_GOAL`].
pub const WIDE_PAIRS: u32 = 7;
/// The spread (half the range over the mean) of a step's pairs beyond which more are counted.
const SPREAD_GOAL: f64 = 0.01;

/// How many kept pairs a step counts, given its first `passes` pairs' foreground values:
/// [`WIDE_PAIRS`] where they disagree by more than [`SPREAD_GOAL`] (a write's cost follows
/// the rows its pair touched: MySQL's `update-zipf` and `insert` spread ±5–17% over three
/// pairs, the same in two runs), so that the report can judge by an interval over them.
fn widened(values: &[f64], passes: u32) -> u32 {
    match StepCount::summary(values) {
        Some((mean, half)) if passes >= 2 && mean > 0.0 && half / mean > SPREAD_GOAL => {
            passes.max(WIDE_PAIRS)
        }
        _ => passes,
    }
}

/// Size the passes, then `passes` pairs of n and 3n events ([`WIDE_PAIRS`] where those
/// disagree by more than [`SPREAD_GOAL`]); where the engine says so, one pair
/// more first, dropped: it differs from the ones after it, which agree. MySQL 5.6.24 and 8.0.31, 1 × 100,000 rows,
/// `update-index`: 54,555 then 89,084 and 88,683 instructions/op (5.6), 91,550 then 105,969 and
/// 107,526 (8.0); the Insert Benchmark's `qp100` on 5.6: 121,107 then 165,155 and 165,282. An
/// uncounted pass of n events before the first pair did not change that.
fn count_step(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    clients: u32,
    counting: Counting,
    (sizes, key): (&Sizes, String),
) -> Result<StepCount> {
    let per_event = size(counted, client, step, part, counting.budget)?;
    let n = ((counting.budget as f64 / per_event.max(1.0)) as u64).clamp(MIN_EVENTS, MAX_EVENTS);
    let mix = part.op.is_none() && step.roles[part.role].ops.len() > 1;
    let least = if mix { MIX_MIN_EVENTS } else { MIN_EVENTS };
    let n = sizes.agree(key, on_grid(n).max(least).max(u64::from(clients)));
    let mut out = StepCount {
        server: Vec::new(),
        background: Vec::new(),
        client: Vec::new(),
        events: n,
        functions: StepFunctions::default(),
    };
    let mut functions = Vec::new();
    let first = u32::from(!counted.drop_first);
    let mut last = counting.passes;
    let mut k = first;
    while k <= last {
        // The dropped pair's dumps are not read function by function: nothing keeps them.
        counted.functions.set(k != 0);
        let short = pass(counted, client, step, part, n, 1001 + 2 * k)?;
        let long = pass(counted, client, step, part, 3 * n, 1002 + 2 * k)?;
        k += 1;
        if k == 1 {
            continue; // the dropped pair (k = 0)
        }
        let units = long.units as f64 - short.units as f64;
        if units <= 0.0 {
            bail!("the long pass counted no more operations than the short one");
        }
        out.server
            .push((long.server as f64 - short.server as f64) / units);
        // The long pass's own: background work follows the clock, not the events, so a
        // difference of two passes' went below zero whenever it fell in the short one.
        out.background
            .push(long.background as f64 / (long.units as f64).max(1.0));
        out.client
            .push((long.client as f64 - short.client as f64) / units);
        functions.push(PairFunctions {
            units,
            long_units: long.units as f64,
            short: short.functions,
            long: long.functions,
        });
        if k > last && last == counting.passes {
            last = widened(&out.server, counting.passes);
        }
    }
    counted.functions.set(false);
    out.functions = step_functions(&functions, counted.embedded);
    Ok(out)
}

/// The counting client: `dbdelta count-client` under callgrind, one JSON line per request and
/// per answer.
struct CountClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl CountClient {
    /// Start it, under callgrind when `callgrind` (on the perf path it runs plainly).
    fn spawn(out: &Path, log: &Path, callgrind: bool) -> Result<CountClient> {
        let exe = std::env::current_exe().context("finding dbdelta's own executable")?;
        let mut cmd = match callgrind {
            true => {
                let wrap = counter::wrap(out, "client", counter::Attribution::All);
                let mut cmd = Command::new(&wrap[0]);
                cmd.args(&wrap[1..]).arg(exe);
                cmd
            }
            false => Command::new(exe),
        };
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(log)?;
        let mut child = cmd
            .arg("count-client")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .context("starting the counting client")?;
        let stdin = child.stdin.take().context("the counting client's stdin")?;
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .context("the counting client's stdout")?,
        );
        Ok(CountClient {
            child,
            stdin,
            stdout,
        })
    }

    fn ask<T: Serialize>(&mut self, request: &T) -> Result<Done> {
        let line = serde_json::to_string(request)?;
        writeln!(self.stdin, "{line}").context("writing to the counting client")?;
        self.stdin.flush()?;
        let mut answer = String::new();
        self.stdout.read_line(&mut answer)?;
        if answer.is_empty() {
            bail!("the counting client exited (its messages are in the target's log)");
        }
        Ok(serde_json::from_str(&answer)?)
    }

    fn init(&mut self, init: &Init) -> Result<()> {
        match self.ask(init)?.error {
            Some(e) => bail!("the counting client: {e}"),
            None => Ok(()),
        }
    }

    fn pass(&mut self, pass: &Pass) -> Result<Done> {
        self.ask(pass)
    }

    /// Close its stdin (it exits) and wait for it.
    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// `dbdelta count-client`: the counting pass's client, under callgrind. Reads [`Init`], opens
/// the target, then runs each [`Pass`] it is sent with the runner's `step::run` and answers
/// [`Done`]; exits when its stdin closes.
pub fn client_main() -> Result<()> {
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut out = std::io::stdout().lock();
    let Some(first) = next_line(&mut input)? else {
        return Ok(());
    };
    let init: Init = serde_json::from_str(&first).context("the counting client's first line")?;
    let (server, suite) = match open(&init) {
        Ok(o) => {
            // Counting on from here; what came before goes into a first dump, taken away.
            crate::counter::count_self();
            crate::counter::dump_self();
            answer(&mut out, &Done::default())?;
            o
        }
        Err(e) => {
            let error = Some(format!("{e:#}"));
            return answer(
                &mut out,
                &Done {
                    error,
                    ..Default::default()
                },
            );
        }
    };
    let probe = crate::sampler::Probe::own_only();
    while let Some(line) = next_line(&mut input)? {
        let pass: Pass = serde_json::from_str(&line).context("a counting pass request")?;
        let done =
            run_pass(&init, &suite, server.as_ref(), &probe, &pass).unwrap_or_else(|e| Done {
                error: Some(format!("{e:#}")),
                ..Default::default()
            });
        // The pass's counts are in their file before the answer leaves.
        crate::counter::dump_self();
        answer(&mut out, &done)?;
    }
    Ok(())
}

/// The next request line; `None` once the other side closed the pipe. Under valgrind, `vgdb`
/// interrupting a blocked read can make it return nothing while the pipe is still open: only a
/// hung-up pipe ends the input.
fn next_line(input: &mut impl BufRead) -> Result<Option<String>> {
    let mut line = String::new();
    loop {
        if input.read_line(&mut line)? > 0 && line.ends_with('\n') {
            return Ok(Some(line));
        }
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) reads and writes only `fd`, one valid pollfd for the call's length.
        let ready = unsafe { libc::poll(&mut fd, 1, 1000) };
        let hung_up = ready > 0
            && fd.revents & (libc::POLLHUP | libc::POLLERR) != 0
            && fd.revents & libc::POLLIN == 0;
        if hung_up {
            return Ok(None);
        }
    }
}

fn answer(out: &mut impl Write, done: &Done) -> Result<()> {
    writeln!(out, "{}", serde_json::to_string(done)?)?;
    out.flush()?;
    Ok(())
}

/// The target's server (attached by URL, or SQLite's file opened) and the suite's plan.
fn open(init: &Init) -> Result<(Box<dyn Server>, SuitePlan)> {
    let here = std::env::current_dir()?;
    let lab = crate::plan::lab::parse(&init.lab, "the lab sent to the counting client", &here)?;
    let opts = crate::plan::RunOptions {
        quick: init.quick,
        ..Default::default()
    };
    let plan = crate::plan::plan(lab, &opts)?;
    let suite = (plan.suites.into_iter())
        .find(|s| s.suite.id() == init.suite)
        .with_context(|| format!("the lab has no suite {}", init.suite))?;
    let mut spec = init.spec.clone();
    spec.wrap.clear();
    if let Some(url) = &init.url {
        let url = crate::engine::connect::ConnectUrl::parse(url).map_err(anyhow::Error::msg)?;
        spec.connect = Some(url);
    }
    let log = init.data_dir.with_extension("count-client.log");
    let server = crate::engine::start(&spec, &init.data_dir, &log)?;
    Ok((server, suite))
}

fn run_pass(
    init: &Init,
    suite: &SuitePlan,
    server: &dyn Server,
    probe: &crate::sampler::Probe,
    pass: &Pass,
) -> Result<Done> {
    let step = (suite.steps.iter())
        .find(|s| s.label == pass.step)
        .with_context(|| format!("the suite has no step {}", pass.step))?;
    let clients = step.clients_at(init.clients);
    let counted = pass_step(step, pass.part.as_ref(), pass.events, clients)?;
    let spec = super::step::StepSpec {
        step: &counted,
        clients,
        seed: crate::workload::step_seed(step.index, pass.seed_repeat),
        client_cpus: None,
        ddl: &init.spec.tables,
        profile: None,
        counting: true,
    };
    let run = match &init.perf_event {
        Some(event) => super::step::run_counting(&spec, &server.driver(), probe, event)?,
        None => super::step::run_unattended(&spec, &server.driver(), probe)?,
    };
    Ok(Done {
        units: run.merged.units,
        events: run.merged.events,
        errors: run.merged.errors.total(),
        error: run.fatal,
        perf: run.perf_counts,
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn three_pairs_that_disagree_by_more_than_a_percent_widen_to_seven() {
        assert_eq!(widened(&[100.0, 100.5, 101.9], 3), 3);
        assert_eq!(widened(&[100.0, 101.0, 102.2], 3), WIDE_PAIRS);
        assert_eq!(widened(&[100.0, 101.0, 102.2], 9), 9);
        assert_eq!(widened(&[100.0], 1), 1);
        assert_eq!(widened(&[f64::NAN, 1.0, 2.0], 3), 3);
    }
    use super::*;

    /// The quick lab's steps of both suites with many roles, as the counting cell plans them.
    fn plans() -> Vec<(String, String)> {
        let text = "[lab]\nname = \"t\"\n[suite.insert]\n[suite.linkbench]\n\
                    [[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
        let lab = crate::plan::lab::parse(text, "a test lab", Path::new("/")).unwrap();
        let opts = crate::plan::RunOptions {
            quick: true,
            ..Default::default()
        };
        let plan = crate::plan::plan(lab, &opts).unwrap();
        let steps = plan.suites.iter().flat_map(|s| s.steps.iter());
        steps
            .map(|step| {
                let how = match count_plan(step) {
                    CountPlan::Skip => "skip".to_string(),
                    CountPlan::Once => "once".to_string(),
                    CountPlan::Parts(parts) => (parts.iter().map(|p| p.label(step)))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                (step.label.clone(), how)
            })
            .collect()
    }

    #[test]
    fn every_role_and_every_type_of_a_mix_is_counted_and_one_time_work_runs_once() {
        let plans = plans();
        let of = |label: &str| {
            (plans.iter().find(|(l, _)| l == label))
                .unwrap_or_else(|| panic!("no step {label} in {plans:?}"))
                .1
                .as_str()
        };
        assert_eq!(of("l.i0"), "l.i0");
        assert_eq!(of("l.x"), "once", "an index is built once");
        assert_eq!(of("l.i1"), "l.i1, l.i1 deleter");
        assert_eq!(of("qr100"), "qr100, qr100 inserter, qr100 deleter");
        assert_eq!(of("linkbench.load"), "once");
        assert_eq!(
            of("linkbench.check"),
            "skip",
            "stored flagged, never reported"
        );
        let request = (plans.iter().map(|(l, _)| l.as_str()))
            .find(|l| l.starts_with("linkbench.request"))
            .unwrap();
        let parts: Vec<&str> = of(request).split(", ").collect();
        assert_eq!(parts.len(), 11, "the mix and its ten types: {parts:?}");
        assert_eq!(parts[0], request);
        assert!(parts.contains(&format!("{request} getnode").as_str()));
    }

    #[test]
    fn a_deleter_is_refilled_by_the_role_it_follows() {
        let text =
            "[lab]\nname = \"t\"\n[suite.insert]\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
        let lab = crate::plan::lab::parse(text, "a test lab", Path::new("/")).unwrap();
        let opts = crate::plan::RunOptions {
            quick: true,
            ..Default::default()
        };
        let plan = crate::plan::plan(lab, &opts).unwrap();
        let step = (plan.suites[0].steps.iter())
            .find(|s| s.label == "qr100")
            .unwrap();
        let CountPlan::Parts(parts) = count_plan(step) else {
            panic!("qr100 is counted");
        };
        let refills: Vec<Option<usize>> = parts.iter().map(|p| p.refill).collect();
        assert_eq!(
            refills,
            [None, None, Some(1)],
            "the deleter after its inserter"
        );
        let alone = pass_step(step, Some(&parts[2]), 30, 1).unwrap();
        assert_eq!(alone.roles.len(), 1);
        assert_eq!(alone.roles[0].name, "deleter");
        assert_eq!(alone.roles[0].pacer, Pacer::Closed);
        assert_eq!(alone.roles[0].quota, Some(30));
    }

    #[test]
    fn targets_run_the_first_ones_n_unless_far_from_their_own() {
        let sizes = Sizes::default();
        assert_eq!(
            sizes.agree("update-index".into(), 500),
            500,
            "the first sets it"
        );
        assert_eq!(
            sizes.agree("update-index".into(), 200),
            500,
            "near: the same rows"
        );
        assert_eq!(
            sizes.agree("update-index".into(), 100),
            100,
            "5 times apart: its own"
        );
        assert_eq!(sizes.agree("insert".into(), 200), 200, "per part");
    }

    #[test]
    fn pass_sizes_snap_to_a_grid_that_near_costs_share() {
        let grid: Vec<u64> = [1, 3, 7, 10, 19, 20, 49, 51, 199, 346, 1038, 200_000]
            .into_iter()
            .map(on_grid)
            .collect();
        assert_eq!(grid, [1, 2, 5, 10, 10, 20, 20, 50, 100, 200, 1000, 200_000]);
    }
}
