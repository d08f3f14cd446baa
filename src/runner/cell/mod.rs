//! One target × clients × repeat × suite: its data directory, server, load and steps, each
//! step's record filled from what [`step::run`] measured and stored the moment it ends.
//!
//! Owns the cell's lifecycle: the data directory, the server started, recorded (once per
//! target), watched and stopped, the load then every step with the postwrite cleanups and the
//! settling probe before the first measured one, and a failing target recorded with its log.
//! The folder: `load` (where the cell's data comes from, and its record), `run_step` (one step
//! run, stored and said), `measurement` (a [`StepRun`] turned into a [`Measurement`]). Must
//! not: time database work (that is `step`), know a particular suite (they are
//! [`SuitePlan`]s), or render reports.
//!
//! [`step::run`]: super::step::run
//! [`StepRun`]: super::step::StepRun
//! [`Measurement`]: crate::results::Measurement

mod load;
mod measurement;
mod run_step;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use super::DataDir;
use super::server::{ClientsThere, StartServer, TargetServer};
use super::settle;
use super::snapshot::Restored;
use super::watchdog::Watchdog;
use crate::engine::{self, Server};
use crate::plan::{Cell, RunPlan, TargetPlan};
use crate::profiler::{Perf, ProfileSettings};
use crate::progress::Progress;
use crate::results::{CellPhases, Settling};
use crate::sampler::Probe;
use crate::store::Store;
use crate::workload::SuitePlan;
pub(super) use measurement::step_record;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CellEnd {
    Done,
    /// The target failed (recorded); the run goes on.
    Failed,
    Interrupted,
}

/// Where a cell's data comes from when its steps' server starts.
pub(super) enum Loaded {
    /// Nowhere yet: that server loads it.
    Fresh,
    /// Loaded and recorded by a server of its own, stopped and saved (`reuse_load`).
    Saved,
    /// Copied from a saved load.
    Reused(Restored),
}

/// One target × clients × repeat running one suite.
pub(super) struct CellRun<'a> {
    pub plan: &'a RunPlan,
    pub suite: &'a SuitePlan,
    pub cell: Cell,
    pub target: &'a TargetPlan,
    pub run_id: &'a str,
    pub data_dir: &'a Path,
    pub store: &'a mut Store,
    pub progress: &'a Progress,
    pub interrupt: &'a Arc<AtomicBool>,
    pub record_server: bool,
    pub failures: &'a mut Vec<String>,
    pub log: &'a Path,
    /// `perf` and the settings, in a profiled run where perf can record.
    pub profile: Option<(&'a Perf, ProfileSettings)>,
    /// Starts the cell's server.
    pub start: StartServer,
    /// While the server runs: its host, when the target's clients run there
    /// (`client = "remote"`).
    pub clients_there: Option<Box<dyn ClientsThere>>,
    /// The settling guard's probe of this cell's server, once it ran (before the first
    /// measured step), carried by every step's record.
    pub settling: Option<Settling>,
    /// Where the data comes from (`Fresh` unless `reuse_load` copied or saved it).
    pub loaded: Loaded,
    /// Where the cell's wall time went, filled as it runs (stored with the finished cell).
    pub phases: CellPhases,
}

impl CellRun<'_> {
    fn label(&self) -> String {
        format!(
            "{} c={} r={}",
            self.target.name, self.cell.clients, self.cell.repeat
        )
    }

    /// Run the cell; a failing target is recorded (with its log, which is then kept) and
    /// reported as [`CellEnd::Failed`]. A cell that ends in an error because dbdelta was
    /// signalled (a tool or server stopped, the load cut short) is [`CellEnd::Interrupted`],
    /// not failed: it runs again whole on `--resume`. Errors are only for the store.
    pub fn run_and_record(&mut self) -> Result<CellEnd> {
        let result = self.run();
        let interrupted = self.interrupt.load(std::sync::atomic::Ordering::Relaxed);
        let keep_log = self.plan.keep || (result.is_err() && !interrupted);
        if !keep_log {
            let _ = std::fs::remove_file(self.log);
        }
        let log_shown = (keep_log && self.log.exists()).then(|| self.log.display().to_string());
        let e = match result {
            Ok(end) => return Ok(end),
            Err(e) => e,
        };
        let (target, cell) = (&self.target.name, self.cell);
        // The store's own failure (full, read-only) is nobody's target's: the run ends with it.
        if crate::error::is_store_error(&e) {
            return Err(e.context(format!(
                "run {} stopped at target {target} (clients {}, repeat {}), no fault of the target's; its finished steps are stored",
                self.run_id, cell.clients, cell.repeat
            )));
        }
        if interrupted {
            self.progress.line(&format!(
                "target {target} (clients {}, repeat {}) interrupted: {}",
                cell.clients,
                cell.repeat,
                format!("{e:#}").lines().next().unwrap_or("")
            ));
            return Ok(CellEnd::Interrupted);
        }
        // Engines name the target in their own errors; the runner names it once.
        let msg = format!("{e:#}");
        let msg = match msg.strip_prefix(&format!("target {target}: ")) {
            Some(rest) => rest.to_string(),
            None => msg,
        };
        let first_line = msg.lines().next().unwrap_or("").to_string();
        let log_note = log_shown
            .as_deref()
            .map(|l| format!(" (log: {l})"))
            .unwrap_or_default();
        self.progress.line(&format!(
            "target {target} (clients {}, repeat {}) failed: {msg}{log_note}",
            cell.clients, cell.repeat
        ));
        self.store
            .fail_target(self.run_id, target, &msg, log_shown.as_deref())?;
        self.failures
            .push(format!("target {target}: {first_line}{log_note}"));
        Ok(CellEnd::Failed)
    }

    fn run(&mut self) -> Result<CellEnd> {
        let began = std::time::Instant::now();
        let end = self.run_timed();
        self.phases.secs = began.elapsed().as_secs_f64();
        end
    }

    fn run_timed(&mut self) -> Result<CellEnd> {
        let path = self.data_dir;
        if path.exists() {
            return Err(crate::error::InputError::new(format!(
                "data directory {} exists; remove it or choose another --workdir",
                path.display()
            ))
            .into());
        }
        std::fs::create_dir(path)
            .with_context(|| format!("cannot create data directory {}", path.display()))?;
        let _dir = DataDir {
            path: path.to_path_buf(),
            keep: self.plan.keep,
        };
        let mut spec = self.target.spec(self.suite.prepared);
        if let Some(root) = &self.plan.reuse_load
            && let Some(loaded) = self.reuse(root, &spec, path)?
        {
            self.loaded = loaded;
            spec.restored = true;
        }
        let started = std::time::Instant::now();
        let TargetServer {
            server,
            clients_there,
        } = (self.start)(&spec, path, self.log)?;
        self.phases.server_secs += started.elapsed().as_secs_f64();
        self.clients_there = clients_there;
        let end = self.with_server(server);
        // The link to a remote server's host goes with the server, whatever ended the cell.
        self.clients_there = None;
        end
    }

    /// Record the started server, load, run the steps, stop it.
    fn with_server(&mut self, server: Box<dyn Server>) -> Result<CellEnd> {
        let path = self.data_dir;
        if self.record_server {
            self.store.set_target_server(
                self.run_id,
                &self.target.name,
                &server.version(),
                &server.settings(),
            )?;
            self.record_provenance(server.as_ref())?;
            if let Some(config) = server.config_text() {
                self.store
                    .set_target_config(self.run_id, &self.target.name, &config)?;
            }
            if let engine::Observed::Unobserved(why) = server.observed() {
                self.progress.line(&format!(
                    "target {}: server CPU, context switches, process IO and memory are not measured: {why}",
                    self.target.name
                ));
                self.store
                    .set_target_unobserved(self.run_id, &self.target.name, &why)?;
            }
        }
        self.progress.detail(&format!(
            "{}: {} started in {}",
            self.label(),
            server.version(),
            path.display()
        ));
        let watchdog = self.watchdog(server.as_ref());
        let end = self.load_and_steps(server.as_ref());
        drop(watchdog);
        let stopping = std::time::Instant::now();
        let stopped = server.stop();
        self.phases.server_secs += stopping.elapsed().as_secs_f64();
        // What failed first is the news (a stop that fails after it is its echo).
        let end = end?;
        stopped?;
        Ok(end)
    }

    /// Store what the target's build says of itself (its compilers, its version line), read
    /// from the files its own keys name, and the build flags the started `server` says it
    /// has; a server this host did not start has none here.
    fn record_provenance(&mut self, server: &dyn Server) -> Result<()> {
        let spec = self.target.spec(self.suite.prepared);
        let Some(mut p) = engine::provenance(&spec) else {
            return Ok(());
        };
        p.build_flags = server.build_flags();
        for why in &p.unread {
            self.progress
                .detail(&format!("target {}: provenance: {why}", self.target.name));
        }
        self.store
            .set_target_provenance(self.run_id, &self.target.name, &p)
    }

    /// Kills the cell's server if it stays stopped (SIGSTOP) long enough to block its
    /// clients for ever, saying so on the terminal.
    fn watchdog(&self, server: &dyn Server) -> Watchdog {
        let progress = *self.progress;
        let label = self.label();
        Watchdog::start(
            server.started_pid(),
            self.data_dir.to_path_buf(),
            move |what| progress.line(&format!("{label}: {what}")),
        )
    }

    fn load_and_steps(&mut self, server: &dyn Server) -> Result<CellEnd> {
        let tables = self.suite.suite.tables(self.cell.clients);
        if let Some(r) = self.clients_there.as_deref() {
            // The agent plans the same suites from the lab, to run their load and steps there.
            let lab = crate::plan::lab::for_agent(
                &self.plan.lab.text,
                &self.target.name,
                self.target.engine,
            )
            .map_err(|e| anyhow::anyhow!("the lab for the agent: {e}"))?;
            r.plan(lab, self.plan.quick)
                .context("planning the steps on the target's host")?;
        }
        // A running server (`connect`) may hold the tables of an earlier cell or run.
        server
            .release(&tables)
            .context("dropping the suite's tables before the load")?;
        let loading = std::time::Instant::now();
        match std::mem::replace(&mut self.loaded, Loaded::Fresh) {
            Loaded::Fresh => drop(self.load(server)?),
            Loaded::Saved => {}
            Loaded::Reused(r) => self.record_reused(server, r)?,
        }
        self.phases.load_secs = loading.elapsed().as_secs_f64();
        self.phases.rows = self.suite.suite.rows_loaded(self.cell.clients);
        if self.suite.postwrite_after_load {
            self.postwrite(server, &tables, "the load")
                .context("postwrite cleanup after the load")?;
        }
        let probe = Probe::new(server.observed(), server.data_dir());
        // The settling guard watches the idle server once, before the first measured step
        // (after the load's postwrite, or the warm-up's that carries it).
        let mut probed = false;
        for step in &self.suite.steps {
            if self.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(CellEnd::Interrupted);
            }
            if !step.warm && !probed {
                let probing = std::time::Instant::now();
                self.settling = self.settle(server, &probe);
                self.phases.probe_secs = probing.elapsed().as_secs_f64();
                probed = true;
            }
            let stepping = std::time::Instant::now();
            let interrupted = self.step(server, &probe, step)?;
            if interrupted {
                return Ok(CellEnd::Interrupted);
            }
            self.phases.steps_secs += stepping.elapsed().as_secs_f64();
            self.phases.steps += 1;
            self.phases.planned_steps_secs += (step.warmup + step.expected).as_secs_f64();
            if step.postwrite_after {
                self.postwrite(server, &tables, &step.label)
                    .with_context(|| format!("postwrite cleanup after {}", step.label))?;
            }
        }
        server
            .release(&tables)
            .context("dropping the suite's tables after the steps")?;
        Ok(CellEnd::Done)
    }

    /// The postwrite cleanup after `what` (the load or a step), said while it waits (a server
    /// engine's waits out its budget so background writers settle), and timed.
    fn postwrite(&mut self, server: &dyn Server, tables: &[String], what: &str) -> Result<()> {
        let budget = self.suite.postwrite_budget;
        let _waiting = (!self.target.engine.embedded()).then(|| {
            self.progress.wait(&format!(
                "{}: settling after {what}: the postwrite cleanup, then the server left idle until {} is up so its background writes finish (postwrite_secs)",
                self.label(),
                crate::progress::duration(budget)
            ))
        });
        let began = std::time::Instant::now();
        let done = server.postwrite(tables, budget);
        self.phases.postwrite_secs += began.elapsed().as_secs_f64();
        self.phases.postwrites += 1;
        self.phases.postwrite_budget_secs = budget.as_secs_f64();
        done
    }

    /// The settling guard: watch the idle server before the first step (a server engine only:
    /// an embedded one has no background work of its own) and say so when it is still settling.
    fn settle(&self, server: &dyn Server, probe: &Probe) -> Option<Settling> {
        if self.target.engine.embedded() {
            return None;
        }
        let length = match self.plan.quick {
            true => settle::QUICK_PROBE,
            false => settle::PROBE,
        };
        let s = settle::probe(server, probe, self.suite.postwrite_budget, length);
        let what = format!(
            "{}: idle before the steps, {} {}",
            self.label(),
            s.process,
            settle::evidence(&s)
        );
        match s.settling {
            true => self.progress.line(&format!("{what}: still settling")),
            false => self.progress.detail(&what),
        }
        Some(s)
    }
}
