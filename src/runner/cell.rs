//! One target × clients × repeat × suite: its data directory, server, load and steps, each
//! step's record filled from what [`step::run`] measured and stored the moment it ends.
//!
//! Owns the cell's lifecycle and turning a [`StepRun`] into a [`Measurement`] (counts, rates,
//! latency, per-op costs, CPUs, flags, the step-length rule). Must not: time database work
//! (that is `step`), know a particular suite (they are [`SuitePlan`]s), or render reports.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use super::server::{ClientsThere, StartServer, TargetServer};
use super::settle;
use super::snapshot::{self, Found, RestoreError, Restored};
use super::step::{self, StepRun};
use super::watchdog::Watchdog;
use super::{DataDir, client_bound, timed_load};
use crate::engine::{self, Server};
use crate::plan::{Cell, RunPlan, TargetPlan};
use crate::profiler::{self, Perf, ProfileSettings, Recorded};
use crate::progress::{Progress, thousands};
use crate::results::{
    CellPhases, LoadResult, Measurement, Metric, OpHistograms, OpMeasurement, SecondSample,
    Settling, StepProfile,
};
use crate::sampler::Probe;
use crate::stats;
use crate::store::Store;
use crate::workload::{self, Pacer, StepPlan, SuitePlan};

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

    /// `reuse_load`: copy a matching saved load into the empty `path`, or else load on a
    /// server of its own there, stop it cleanly and save the load. `None`: this cell's load
    /// cannot be saved (said why); the steps' server loads it.
    fn reuse(
        &mut self,
        root: &Path,
        spec: &engine::TargetSpec,
        path: &Path,
    ) -> Result<Option<Loaded>> {
        let label = self.label();
        let w = match snapshot::wanted(root, spec, self.suite.suite.as_ref(), self.cell.clients) {
            Ok(w) => w,
            Err(why) => {
                self.progress
                    .line(&format!("{label}: load: not saved: {why}"));
                return Ok(None);
            }
        };
        match snapshot::find(&w) {
            // A copy that cannot be written (a full work directory) fails the cell; a damaged
            // or unreadable snapshot is said, and the load runs afresh.
            Found::Same(m) => match snapshot::restore(&w, m, path) {
                Ok(r) => return Ok(Some(Loaded::Reused(r))),
                Err(e @ RestoreError::Failed(_)) => return Err(e.into()),
                Err(e) => self.progress.line(&format!("{label}: load: {e}")),
            },
            Found::Differs(why) => self.progress.line(&format!(
                "{label}: load: no snapshot of this key, {why}: loading afresh"
            )),
            Found::Nothing => {}
        }
        self.load_and_save(&w, spec, path)?;
        Ok(Some(Loaded::Saved))
    }

    /// Load on a server of its own in `path` (recorded as every load is), stop it cleanly and
    /// save the data directory as `w`'s snapshot (a failed save is said, and the run goes on).
    fn load_and_save(
        &mut self,
        w: &snapshot::Wanted,
        spec: &engine::TargetSpec,
        path: &Path,
    ) -> Result<()> {
        let TargetServer { server, .. } = (self.start)(spec, path, self.log)?;
        let loaded = self.load(server.as_ref());
        let stopped = server.stop();
        let (load_secs, index_secs) = loaded?;
        stopped.context("stopping the server after the load, to save it")?;
        let label = self.label();
        match snapshot::save(w, path, load_secs, index_secs) {
            Ok((m, secs)) => self.progress.line(&format!(
                "{label}: load: saved snapshot {} in {} ({:.1} MB, copied and checksummed in {secs:.1} s)",
                w.name,
                w.root.display(),
                m.files.values().map(|(b, _)| *b).sum::<u64>() as f64 / 1e6
            )),
            Err(e) => self.progress.line(&format!("{label}: load: not saved: {e:#}")),
        }
        Ok(())
    }

    /// A load copied from a snapshot: recorded as reused, with the copy's seconds (not a
    /// load's), and said with the load it saved.
    fn record_reused(&mut self, server: &dyn Server, r: Restored) -> Result<()> {
        let suite = self.suite.suite.as_ref();
        let m = &r.manifest;
        let from = format!(
            "snapshot {} (saved {})",
            r.name,
            snapshot::shown_time(&m.saved)
        );
        if suite.records_load() {
            let scale = suite.scale(self.cell.clients);
            let load = LoadResult {
                target: self.target.name.clone(),
                suite: suite.id().into(),
                clients: self.cell.clients,
                repeat: self.cell.repeat,
                tables: scale.tables,
                rows_per_table: scale.rows,
                load_secs: r.secs,
                rows_per_sec: None,
                index_secs: 0.0,
                db_size_bytes: server.db_size(),
                reused: Some(from.clone()),
            };
            self.store.save_load(self.run_id, &load)?;
        }
        self.progress.line(&format!(
            "{}: load: reused {from}, {:.2} s instead of {:.2} s ({:.1} MB copied and checked)",
            self.label(),
            r.secs,
            m.load_secs + m.index_secs,
            r.bytes as f64 / 1e6
        ));
        Ok(())
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
            self.record_provenance()?;
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
    /// from the files its own keys name; a server this host did not start has none here.
    fn record_provenance(&mut self) -> Result<()> {
        let spec = self.target.spec(self.suite.prepared);
        let Some(p) = engine::provenance(&spec) else {
            return Ok(());
        };
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

    /// Create and fill the suite's tables on a thread placed like the step clients, and store
    /// the load when the suite has one of its own; the load's and the index build's seconds.
    fn load(&mut self, server: &dyn Server) -> Result<(f64, f64)> {
        let suite = self.suite.suite.as_ref();
        let clients = self.cell.clients;
        let (load_secs, index_secs) = match self.clients_there.as_deref() {
            Some(r) => r.load(suite.id(), clients, &self.target.tables)?,
            None => self.load_here(server)?,
        };
        if !suite.records_load() {
            return Ok((load_secs, index_secs));
        }
        let scale = suite.scale(clients);
        let total = suite.rows_loaded(clients);
        let rows_per_sec = (load_secs > 0.0).then(|| total as f64 / load_secs);
        let load = LoadResult {
            target: self.target.name.clone(),
            suite: suite.id().into(),
            clients,
            repeat: self.cell.repeat,
            tables: scale.tables,
            rows_per_table: scale.rows,
            load_secs,
            rows_per_sec,
            index_secs,
            db_size_bytes: server.db_size(),
            reused: None,
        };
        self.store.save_load(self.run_id, &load)?;
        self.progress.line(&format!(
            "{}: loaded {} rows in {:.2} s ({} rows/s), index {:.2} s",
            self.label(),
            thousands(total as f64),
            load_secs,
            thousands(rows_per_sec.unwrap_or(0.0)),
            index_secs
        ));
        Ok((load_secs, index_secs))
    }

    /// Create and fill the suite's tables from here, on a thread placed like the step clients;
    /// the load's and the index build's seconds.
    fn load_here(&self, server: &dyn Server) -> Result<(f64, f64)> {
        let suite = self.suite.suite.as_ref();
        let clients = self.cell.clients;
        let driver = server.driver();
        // The load's client is a client too: it runs on a thread placed like the step clients.
        let client_cpus = self.target.placement.client.as_ref();
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("dbdelta-load".into())
                .spawn_scoped(s, || -> Result<(f64, f64)> {
                    if let Some(c) = client_cpus {
                        crate::cpus::pin_current_thread(c)
                            .with_context(|| format!("pinning the load's client to CPUs {c}"))?;
                    }
                    let mut session = driver.connect().context("connecting for the load")?;
                    timed_load(
                        suite,
                        session.as_mut(),
                        driver.dialect(),
                        &self.target.tables,
                        clients,
                    )
                })
                .context("starting the load thread")?
                .join()
                .map_err(|_| anyhow::anyhow!("the load thread panicked"))?
        })
    }

    /// The step's record before it runs: where it belongs and at what scale.
    fn measurement(&self, step: &StepPlan) -> Measurement {
        Measurement {
            settling: self.settling.clone(),
            ..step_record(self.target, self.suite, step, self.cell)
        }
    }

    /// `client = "remote"`: the step runs with its clients on the server's host, in the agent.
    fn step_there(&self, r: &dyn ClientsThere, step: &StepPlan) -> Result<StepRun> {
        r.step(
            self.suite.suite.id(),
            &step.label,
            self.cell.clients,
            self.cell.repeat,
            &self.target.tables,
        )
    }

    /// Run and store one step. Returns true when interrupted (nothing stored for it).
    fn step(&mut self, server: &dyn Server, probe: &Probe, step: &StepPlan) -> Result<bool> {
        let spec = step::StepSpec {
            step,
            clients: step.clients_at(self.cell.clients),
            seed: workload::step_seed(step.index, self.cell.repeat),
            client_cpus: self.target.placement.client.clone(),
            ddl: &self.target.tables,
            profile: self.profile_spec(step),
            counting: false,
        };
        let prefix = format!("{} {}", self.label(), step.label);
        let bar = self.progress.step(&prefix, step.warmup + step.expected);
        let result = match self.clients_there.as_deref() {
            Some(r) => self.step_there(r, step),
            None => step::run(&spec, &server.driver(), probe, &bar, self.interrupt),
        };
        let mut m = self.measurement(step);
        let profile_data = spec.profile.as_ref().map(|p| p.data.clone());
        let result = result.map(|mut run| {
            if let (Some(recorded), Some((perf, _))) = (run.profile.take(), self.profile) {
                self.progress
                    .detail(&format!("{prefix}: folding its CPU profile"));
                m.profile = Some(step_profile(perf, recorded));
            }
            run
        });
        if let Some(data) = profile_data {
            let _ = std::fs::remove_file(data);
        }
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                let msg = format!("{e:#}");
                m.failed = true;
                m.error = Some(msg.clone());
                self.store.save_step(self.run_id, &m, &[], &[], &[])?;
                bar.finish(&format!("{prefix}: FAILED: {msg}"));
                // A dead server ends the target; anything else ends only the step.
                server
                    .check_alive()
                    .with_context(|| format!("{prefix} failed"))?;
                self.failures.push(format!("{prefix}: {msg}"));
                return Ok(false);
            }
        };
        if run.interrupted {
            bar.finish(&format!("{prefix}: interrupted (not recorded)"));
            return Ok(true);
        }
        self.fill(&mut m, step, &run, spec.clients);
        (m.values).set(Metric::DbSize, server.db_size().map(|b| b as f64));
        let dead = self.fatal(&mut m, &run, server, &prefix);
        let series = series_of(&m, &run);
        fill_length(&mut m, &run, &series);
        let op_histograms: Vec<OpHistograms> = (run.ops.iter())
            .map(|o| OpHistograms {
                service: o.merged.serialized_histogram(),
                response: o.merged.serialized_response(),
            })
            .collect();
        self.store.save_step(
            self.run_id,
            &m,
            &series,
            &run.merged.serialized_histogram(),
            &op_histograms,
        )?;
        if let Some(e) = dead {
            bar.finish(&format!("{prefix}: FAILED: the server died"));
            return Err(e.context(format!("{prefix}: the server died during the step")));
        }
        bar.finish(&summary(&prefix, &m, step.rate_unit));
        self.progress
            .detail(&rows_detail(&prefix, &m, &run.rows_touched));
        Ok(false)
    }

    /// Where a profiled step's recording goes (beside the data directory, removed once
    /// folded); `None` for warm steps and unprofiled runs.
    fn profile_spec(&self, step: &StepPlan) -> Option<step::ProfileSpec<'_>> {
        let (perf, settings) = self.profile?;
        (!step.warm).then(|| step::ProfileSpec {
            perf,
            settings,
            data: PathBuf::from(format!(
                "{}.{}.perf.data",
                self.data_dir.display(),
                step.label.replace('/', "_")
            )),
        })
    }

    /// A thread's fatal error fails the step; when the server died it fails the target too
    /// (returned).
    fn fatal(
        &mut self,
        m: &mut Measurement,
        run: &StepRun,
        server: &dyn Server,
        prefix: &str,
    ) -> Option<anyhow::Error> {
        let err = run.fatal.as_ref()?;
        m.failed = true;
        m.error = Some(err.clone());
        match server.check_alive() {
            Err(e) => {
                m.error = Some(format!("{err}; {e:#}"));
                Some(e)
            }
            Ok(()) => {
                self.failures.push(format!("{prefix}: {err}"));
                None
            }
        }
    }

    /// Everything `run` measured, into `m`: counts, rates, latency, rows, costs per op,
    /// memory, the CPUs threads ran on, and the client-bound and wake-up-bound flags.
    /// `threads` is the number of client connections per role.
    fn fill(&self, m: &mut Measurement, step: &StepPlan, run: &StepRun, threads: u32) {
        fill_counts(m, step, run);
        m.operations = operations(step, run, threads);
        // The sampler's per-op costs, under their metrics; then the peaks.
        let per = run.costs.per_op(m.ops);
        let (server_cpu, measured_client) =
            (per.get(Metric::ServerCpu), per.get(Metric::ClientCpu));
        m.values.fill_from(&per);
        let embedded = self.target.engine.embedded();
        // What the snapshots' window could not resolve (not the client's CPU of an in-process
        // engine, which is never separated from it).
        m.below_resolution = (run.costs.unresolved(m.ops).into_iter())
            .filter(|&u| !(embedded && u == Metric::ClientCpu))
            .map(|u| u.id().to_string())
            .collect();
        // In-process engines share our CPU: client cost is not separable from engine cost.
        let client_cpu = measured_client.filter(|_| !embedded);
        m.values.set(Metric::ClientCpu, client_cpu);
        // Connections, not clients: a step of several roles runs one per role per client.
        let connections = threads * step.roles.len() as u32;
        let client_busy = crate::cpus::busy_share(measured_client, m.qps, connections);
        m.client_bound = !embedded
            && client_bound(
                measured_client,
                server_cpu,
                client_busy,
                run.max_client_busy,
            );
        let peak = |b: Option<u64>| b.map(|b| b as f64);
        m.values.set(Metric::PeakRss, peak(run.peaks.rss));
        m.values.set(Metric::PeakVsz, peak(run.peaks.vsz));
        m.values.set(Metric::PeakPss, peak(run.peaks.pss));
        let cpus = &run.cpus;
        m.server_cpus_seen = cpus.server_seen.to_option();
        m.server_cpus_allowed = cpus.server_allowed.to_option();
        m.client_cpus_seen = cpus.client_seen.to_option();
        m.client_cpus_allowed = cpus.client_allowed.to_option();
        let placement = &self.target.placement;
        m.wakeup_bound = crate::cpus::wakeup_bound(&crate::cpus::WakeupInputs {
            embedded,
            clients: connections,
            usable_cpus: self.plan.machine.usable.len(),
            one_shared_cpu: placement.one_shared_cpu(),
            server_io_kb_per_op: (m.values.get(Metric::ProcReadKb))
                .zip(m.values.get(Metric::ProcWriteKb))
                .map(|(r, w)| r + w),
            client_cpu_us_per_op: client_cpu,
            server_cpu_us_per_op: server_cpu,
            qps: m.qps,
        });
    }
}

/// A step's folded profile, or why it has none.
fn step_profile(perf: &Perf, recorded: Result<Recorded, String>) -> StepProfile {
    match recorded.and_then(|r| profiler::fold(perf, &r)) {
        Ok(f) if f.samples() > 0 => StepProfile {
            samples: f.samples(),
            unresolved: f.unresolved(),
            unresolved_modules: f.unresolved_modules(),
            folded: f.text(),
            error: None,
        },
        Ok(_) => StepProfile {
            error: Some("perf recorded no samples of the engine in the measured period".into()),
            ..Default::default()
        },
        Err(e) => StepProfile {
            error: Some(e),
            ..Default::default()
        },
    }
}

/// `-v`'s line on rows: the mean per execution of each statement (what the report shows),
/// then the measured totals it comes from.
fn rows_detail(prefix: &str, m: &Measurement, totals: &[u64]) -> String {
    let per = match &m.rows_per_statement {
        Some(per) => (per.iter())
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        None => "n/a (no statement ran)".to_string(),
    };
    let totals: Vec<String> = totals.iter().map(u64::to_string).collect();
    format!(
        "{prefix}: rows touched per statement [{per}] (in all: [{}])",
        totals.join(", ")
    )
}

/// Counts, rates, latency and rows touched of the counted operations.
fn fill_counts(m: &mut Measurement, step: &StepPlan, run: &StepRun) {
    let merged = &run.merged;
    m.seconds = run.seconds;
    m.events = merged.events;
    m.ops = merged.units;
    m.errors = merged.errors;
    let rate = |n: u64| (run.seconds > 0.0 && n > 0).then(|| n as f64 / run.seconds);
    m.qps = rate(m.ops);
    m.tps = rate(m.events);
    m.latency_us = merged.latency();
    if let Some(rows) = step.scan_rows {
        let krows = (m.latency_us)
            .filter(|l| l.mean > 0.0)
            .map(|l| rows as f64 / 1000.0 / (l.mean / 1e6));
        m.values.set(Metric::ScanKrows, krows);
    }
    // Rows touched by the measured events (failed ones included: they ran statements too).
    let executions = merged.events + m.errors.total();
    m.rows_per_statement = (executions > 0).then(|| {
        step.event_shape
            .iter()
            .zip(&run.rows_touched)
            .map(|(n, rows)| *rows as f64 / (executions * u64::from(*n)) as f64)
            .collect()
    });
    let per_event = m.rows_per_statement.as_ref().map(|per| {
        per.iter()
            .zip(&step.event_shape)
            .map(|(r, n)| r * f64::from(*n))
            .sum()
    });
    m.values.set(Metric::RowsPerEvent, per_event);
}

/// Every role × operation type the step ran, with its own rates, latencies, per-unit costs
/// and per-second series (schema v2). `threads` is the connections per role.
fn operations(step: &StepPlan, run: &StepRun, threads: u32) -> Vec<OpMeasurement> {
    let whole_seconds = (run.seconds + 1e-3).floor() as usize;
    run.ops
        .iter()
        .map(|o| {
            let rate = |n: u64| (o.role_seconds > 0.0).then(|| n as f64 / o.role_seconds);
            let role = &step.roles[o.role];
            let merged = &o.merged;
            let (pacer, target) = match role.pacer {
                Pacer::Closed => ("closed", None),
                Pacer::Rate { per_sec } => ("rate", Some(per_sec * f64::from(threads))),
                Pacer::Follow { .. } => ("follow", None),
            };
            let per = run.costs.per_op(merged.units);
            OpMeasurement {
                role: role.name.to_string(),
                op: role.ops.get(o.op).copied().unwrap_or("?").to_string(),
                pacer: pacer.to_string(),
                counted: step.counted.covers(o.role, o.op),
                operations: merged.events,
                units: merged.units,
                rows: merged.rows,
                errors: merged.errors,
                error_codes: merged.error_codes.clone(),
                ops_per_sec: rate(merged.events),
                units_per_sec: rate(merged.units),
                target_ops_per_sec: target,
                latency_us: merged.latency(),
                response_us: merged.response_latency(),
                step_server_cpu_us_per_unit: per.get(Metric::ServerCpu),
                step_cs_per_unit: per.get(Metric::Cs),
                step_read_kb_per_unit: per.get(Metric::ReadKb),
                step_write_kb_per_unit: per.get(Metric::WriteKb),
                series: (merged.seconds.iter().take(whole_seconds))
                    .map(|s| s.units)
                    .collect(),
                instructions: None,
            }
        })
        .collect()
}

/// The step-length rule and how it ended, with the precision achieved as computed from the
/// stored per-second `series` (the same function the adaptive rule uses).
fn fill_length(m: &mut Measurement, run: &StepRun, series: &[SecondSample]) {
    let ops: Vec<f64> = series.iter().map(|s| s.ops as f64).collect();
    m.precision_achieved = stats::series_precision(&ops)
        .map(|p| p.half_width)
        .filter(|h| h.is_finite());
    match &run.adaptive {
        None => {
            m.duration_rule = "fixed".into();
            m.stop_reason = Some(if run.quota_met { "quota" } else { "deadline" }.into());
        }
        Some(end) => {
            m.duration_rule = "adaptive".into();
            m.precision_target = Some(end.target);
            m.stop_reason = Some(if end.reached { "precision" } else { "max" }.into());
        }
    }
}

/// The per-second series of a step: whole seconds of the measured period only. A partial last
/// second (or the bucket of events that ended after the deadline) is not a rate and would read
/// as a stall. The last event ends a hair before the deadline, so 1 ms of slack is allowed:
/// 0.9999 s is one whole second.
fn series_of(m: &Measurement, run: &StepRun) -> Vec<SecondSample> {
    let whole_seconds = (run.seconds + 1e-3).floor() as usize;
    run.merged
        .seconds
        .iter()
        .take(whole_seconds)
        .enumerate()
        .map(|(i, s)| SecondSample {
            target: m.target.clone(),
            step: m.step.clone(),
            clients: m.clients,
            repeat: m.repeat,
            second: i as u32,
            ops: s.units,
            p99_us: s.p99_ns.map(|v| v as f64 / 1000.0),
            max_us: s.max_ns.map(|v| v as f64 / 1000.0),
        })
        .collect()
}

/// The line that replaces a finished step's progress bar.
fn summary(prefix: &str, m: &Measurement, unit: &str) -> String {
    let (Some(qps), Some(lat)) = (&m.qps, &m.latency_us) else {
        return format!("{prefix}: no event completed ({} errors)", m.errors.total());
    };
    let cpu = match m.values.get(Metric::ServerCpu) {
        Some(v) => format!("{v:.1} µs CPU/op"),
        None if m
            .below_resolution
            .iter()
            .any(|u| u == Metric::ServerCpu.id()) =>
        {
            "CPU/op below resolution".into()
        }
        None => "CPU/op n/a".into(),
    };
    let mut out = format!(
        "{prefix}: {} {unit}, p99 {:.1} µs, {cpu}",
        thousands(*qps),
        lat.p99,
    );
    // Paced roles: how close they kept to their schedule.
    for o in m.operations.iter().filter(|o| o.pacer == "rate") {
        out.push_str(&format!(
            ", {} {:.1}/s ({:.1}% of its schedule)",
            o.role,
            o.units_per_sec.unwrap_or(0.0),
            o.target_share().unwrap_or(0.0) * 100.0
        ));
    }
    if m.errors.total() > 0 {
        out.push_str(&format!(", {} errors", m.errors.total()));
    }
    if m.duration_rule == "adaptive" {
        let precision = m
            .precision_achieved
            .map_or("±n/a".into(), |p| format!("±{:.1}%", p * 100.0));
        let how = match m.stop_reason.as_deref() {
            Some("precision") => "target reached",
            _ => "ran to its maximum",
        };
        out.push_str(&format!(", {:.1} s {precision} ({how})", m.seconds));
    }
    if m.wakeup_bound {
        out.push_str(", wake-up-bound");
    }
    out
}

/// The record of `target`'s `step` of `suite` in `cell` before anything is measured: where it
/// belongs and at what scale.
pub(super) fn step_record(
    target: &TargetPlan,
    suite: &SuitePlan,
    step: &StepPlan,
    cell: Cell,
) -> Measurement {
    let scale = suite.suite.scale(cell.clients);
    Measurement {
        target: target.name.clone(),
        suite: step.suite.into(),
        step: step.label.clone(),
        step_index: step.index,
        group: step.group.clone(),
        warm: step.warm,
        statements_per_event: step.statements_per_event,
        clients: cell.clients,
        repeat: cell.repeat,
        tables: scale.tables,
        rows_per_table: scale.rows,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31: `-v` printed the measured total (132374) as if it were per statement.
    #[test]
    fn the_rows_line_gives_per_statement_means_and_labels_the_totals() {
        let m = Measurement {
            rows_per_statement: Some(vec![1.0, 100.0]),
            ..Measurement::default()
        };
        let line = rows_detail("a c1 r1 range", &m, &[1309, 130900]);
        assert_eq!(
            line,
            "a c1 r1 range: rows touched per statement [1.00, 100.00] (in all: [1309, 130900])"
        );
        let none = rows_detail("p", &Measurement::default(), &[]);
        assert!(none.contains("n/a"), "{none}");
    }
}
