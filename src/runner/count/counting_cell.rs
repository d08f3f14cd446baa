//! One target × suite's counting cell: the server under the counter, its tables loaded, the
//! count client's passes step by step and part by part, the purge hold and the counted
//! processes' switches and dumps.
//!
//! Must not: time database work or judge (the report compares the spreads).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::client::CountClient;
use super::counted::Counted;
use super::passes::{count_step, uncounted};
use super::plan::count_plan;
use super::sink::{Count, CountSink, Sizes};
use super::starts::ServerStart;
use super::{CountPlan, Init, Part, Pass, StepCount};
use crate::counter::{self, Counting};
use crate::engine::{Server, TargetSpec};
use crate::plan::{RunPlan, TargetPlan};
use crate::progress::{Progress, thousands};
use crate::results::{InstructionPairs, Metric, OpInstructions};
use crate::runner::cell::CellEnd;
use crate::runner::server::{StartServer, TargetServer};
use crate::runner::{DataDir, timed_load};
use crate::store::CellKey;
use crate::workload::{StepPlan, SuitePlan};

/// Held while a counting cell initialises and starts its server: cells count side by side,
/// but start one at a time. Two MariaDB 10.11 counting cells starting at once failed (twice in
/// about ten such runs) in `mariadb-install-db`: `Could not remove temporary table
/// '/tmp/#sql-temptable-…', error: 2`, then `Unknown table 'mysql.tmp_user_sys'`: one's
/// bootstrap lost its temporary table in the shared temporary directory while the other
/// initialised or started.
static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One target × suite's counting cell, as the runner hands it over.
pub(in crate::runner) struct CountCell<'a> {
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
    /// Which of the target's server starts this cell is (each counts its share of the pairs).
    pub server_start: ServerStart,
}

impl CountCell<'_> {
    fn label(&self) -> String {
        format!(
            "{} c={} counting{}",
            self.target.name,
            self.key.clients,
            self.server_start.label()
        )
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
        } = {
            let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
            (self.start)(&spec, dir, self.log)?
        };
        if clients_there.is_some() {
            bail!("instructions are counted only for servers on this host");
        }
        self.progress.line(&format!(
            "{}: {} started, counted by {}",
            self.label(),
            server.version(),
            by.name()
        ));
        let version = Count::Server {
            version: server.version(),
        };
        let end = (self.store)
            .counted(&self.key, self.run_id, "", &version)
            .and_then(|_| self.load_and_count(server.as_ref(), &spec, &out));
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
            build: super::sink::build_of(spec),
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
            (self.key.clients, self.server_start),
            self.counting,
            shared,
        )
        .with_context(|| format!("{prefix}: counting instructions"))?;
        let server = StepCount::summary(&c.server);
        let perf = counted.counter != counter::Counter::Callgrind;
        let background = StepCount::summary(&c.background).filter(|_| !counted.embedded && !perf);
        let client_v = StepCount::summary(&c.client).filter(|_| !counted.embedded);
        let mut count = to_count(step, part, &c, server, background, client_v);
        let shown = [background.is_some(), client_v.is_some()];
        let by = counted.counter.name();
        with_start(&mut count, &c, (self.server_start, shown), by);
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

/// Each pair's seed, start, background and client values on `count`'s pairs (those where
/// the step shows them), so that the store can join them with the other starts' pairs, and
/// what counted them (`by`). The start that counts the first pair keeps the step's functions
/// (one start's suffice).
fn with_start(
    count: &mut Count,
    c: &StepCount,
    (start, shown): (ServerStart, [bool; 2]),
    by: String,
) {
    if let Count::Step { functions, .. } = count {
        functions.take_if(|_| start.number != 1);
    }
    let (Count::Step { pairs, .. }
    | Count::Op {
        counts: OpInstructions { pairs, .. },
        ..
    }) = count
    else {
        return;
    };
    pairs.seeds = c.seeds.clone();
    pairs.starts = vec![start.number; c.seeds.len()];
    pairs.background = if shown[0] {
        c.background.clone()
    } else {
        Vec::new()
    };
    pairs.client = if shown[1] {
        c.client.clone()
    } else {
        Vec::new()
    };
    pairs.counter = Some(by);
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
        ..Default::default()
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
