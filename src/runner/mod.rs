//! The runner: executes a [`RunPlan`] cell by cell and persists every result as it appears.
//!
//! For each target × clients × repeat: fresh data directory, start the engine, record its
//! version and settings, load and index (timed here), postwrite cleanup, then every step
//! ([`step::run`]), each stored the moment it ends; stop the engine and remove the data directory
//! unless `--keep`. A failing target is recorded with its reason and the run goes on; Ctrl-C
//! stops the current step, cleans up and leaves the run marked incomplete.
//! Must not: render reports, or let drivers/workloads time themselves.

pub mod recorder;
pub mod step;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::engine::{self, Dialect, Server, Session, TableDdl};
use crate::plan::{Cell, RunPlan, TargetPlan};
use crate::progress::{Progress, thousands};
use crate::results::{LoadResult, Measurement, RunInfo, SecondSample, TargetInfo};
use crate::sampler::Probe;
use crate::stats;
use crate::store::Store;
use crate::workload::{self, Scale, StepDef, sql, sysbench};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub run_id: String,
    /// One line per failed target or step.
    pub failures: Vec<String>,
    pub interrupted: bool,
}

/// A new run id: sortable UTC time plus a random suffix.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now();
    format!(
        "{}-{:04x}",
        now.format("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

/// The server log of one cell: beside its data directory, so it outlives the directory.
fn log_path_for(run_dir: &Path, target: &str, clients: u32, repeat: u32) -> PathBuf {
    let dir = engine::data_dir_for(run_dir, target, clients, repeat);
    PathBuf::from(format!("{}.log", dir.display()))
}

/// Removes a data directory when dropped, unless told to keep it.
struct DataDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for DataDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Execute `plan`, writing into `store`. Returns how it ended; errors are only for failures
/// that stop the whole run (the store or the work directory).
pub fn execute(
    plan: &RunPlan,
    store: &mut Store,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
) -> Result<Outcome> {
    let run_id = new_run_id();
    let run = RunInfo {
        id: run_id.clone(),
        lab: plan.lab.name.clone(),
        lab_text: plan.lab.text.clone(),
        started: chrono::Utc::now().to_rfc3339(),
        finished: None,
        complete: false,
        host: crate::host::describe(),
        dbdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        quick: plan.quick,
        min_effect: Some(plan.lab.min_effect),
    };
    let targets: Vec<TargetInfo> = plan
        .targets
        .iter()
        .map(|t| TargetInfo {
            name: t.name.clone(),
            engine: t.engine.name().to_string(),
            config_name: t.config_name.clone(),
            config_text: t.settings.join("\n"),
            env: t.env.clone(),
            placement: t.placement.name.clone(),
            server_cpus: t.placement.server.as_ref().map(|c| c.to_string()),
            client_cpus: t.placement.client.as_ref().map(|c| c.to_string()),
            ..Default::default()
        })
        .collect();
    let created_workdir = !plan.workdir.exists();
    std::fs::create_dir_all(&plan.workdir).with_context(|| {
        format!(
            "--workdir {}: cannot create the work directory",
            plan.workdir.display()
        )
    })?;
    let run_dir = plan.workdir.join(&run_id);
    std::fs::create_dir(&run_dir)
        .with_context(|| format!("cannot create run directory {}", run_dir.display()))?;
    store.begin_run(&run, &targets)?;
    progress.line(&format!(
        "run {run_id}: {} — {} target(s), results in {}",
        plan.lab.name,
        plan.targets.len(),
        store.path().display()
    ));

    let mut outcome = Outcome {
        run_id: run_id.clone(),
        failures: Vec::new(),
        interrupted: false,
    };
    let mut recorded_server = vec![false; plan.targets.len()];
    for cell in plan.cells() {
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            outcome.interrupted = true;
            break;
        }
        let target = &plan.targets[cell.target];
        let log = log_path_for(&run_dir, &target.name, cell.clients, cell.repeat);
        let mut ctx = CellRun {
            plan,
            cell,
            target,
            run_id: &run_id,
            run_dir: &run_dir,
            store,
            progress,
            interrupt,
            record_server: !recorded_server[cell.target],
            failures: &mut outcome.failures,
            log: &log,
        };
        let result = ctx.run();
        let keep_log = plan.keep || result.is_err();
        if !keep_log {
            let _ = std::fs::remove_file(&log);
        }
        let log_shown = (keep_log && log.exists()).then(|| log.display().to_string());
        match result {
            Ok(CellEnd::Done) => recorded_server[cell.target] = true,
            Ok(CellEnd::Interrupted) => {
                outcome.interrupted = true;
                break;
            }
            Err(e) => {
                let msg = format!("{e:#}");
                let first_line = msg.lines().next().unwrap_or("").to_string();
                let log_note = log_shown
                    .as_deref()
                    .map(|l| format!(" (log: {l})"))
                    .unwrap_or_default();
                progress.line(&format!(
                    "target {} (clients {}, repeat {}) failed: {msg}{log_note}",
                    target.name, cell.clients, cell.repeat
                ));
                store.fail_target(&run_id, &target.name, &msg, log_shown.as_deref())?;
                outcome
                    .failures
                    .push(format!("target {}: {first_line}{log_note}", target.name));
            }
        }
    }
    if !plan.keep {
        // Only empty directories go: whatever is left in them is kept for inspection.
        let _ = std::fs::remove_dir(&run_dir);
        if created_workdir {
            let _ = std::fs::remove_dir(&plan.workdir);
        }
    }
    let complete = !outcome.interrupted;
    store.finish_run(&run_id, &chrono::Utc::now().to_rfc3339(), complete)?;
    Ok(outcome)
}

/// The client may be the bottleneck (metrics-and-reports.md §1): its CPU per op is at least half
/// the server's, or one client thread was busy more than 80% of the time.
pub fn client_bound(client_us: Option<f64>, server_us: Option<f64>, busiest: Option<f64>) -> bool {
    let by_cost = matches!((client_us, server_us), (Some(c), Some(s)) if s > 0.0 && c >= 0.5 * s);
    by_cost || busiest.is_some_and(|b| b > 0.8)
}

/// Create and fill the sysbench tables of `scale` on `session` (with the target's table DDL),
/// then build their secondary indexes. Returns (load seconds, index seconds), each timed here.
pub fn load_sysbench(
    session: &mut dyn Session,
    dialect: Dialect,
    ddl: &TableDdl,
    scale: Scale,
) -> Result<(f64, f64)> {
    let started = Instant::now();
    for t in 1..=scale.tables {
        session
            .execute_sql(&sql::create_table(dialect, t, ddl))
            .context("create table")?;
        let mut rows = sysbench::TableRows::new(scale.rows, 0x5eed ^ t as u64);
        session
            .bulk_load(&sql::table(t), &mut rows)
            .with_context(|| format!("loading {}", sql::table(t)))?;
    }
    let load_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for t in 1..=scale.tables {
        session
            .execute_sql(&sql::create_index(dialect, t, ddl))
            .context("create index")?;
    }
    Ok((load_secs, started.elapsed().as_secs_f64()))
}

enum CellEnd {
    Done,
    Interrupted,
}

/// One target × clients × repeat.
struct CellRun<'a> {
    plan: &'a RunPlan,
    cell: Cell,
    target: &'a TargetPlan,
    run_id: &'a str,
    run_dir: &'a Path,
    store: &'a mut Store,
    progress: &'a Progress,
    interrupt: &'a Arc<AtomicBool>,
    record_server: bool,
    failures: &'a mut Vec<String>,
    log: &'a Path,
}

impl CellRun<'_> {
    fn label(&self) -> String {
        format!(
            "{} c={} r={}",
            self.target.name, self.cell.clients, self.cell.repeat
        )
    }

    fn run(&mut self) -> Result<CellEnd> {
        let path = engine::data_dir_for(
            self.run_dir,
            &self.target.name,
            self.cell.clients,
            self.cell.repeat,
        );
        if path.exists() {
            return Err(crate::error::InputError::new(format!(
                "data directory {} exists; remove it or choose another --workdir",
                path.display()
            ))
            .into());
        }
        std::fs::create_dir(&path)
            .with_context(|| format!("cannot create data directory {}", path.display()))?;
        let _dir = DataDir {
            path: path.clone(),
            keep: self.plan.keep,
        };
        let server = engine::start(&self.target.spec(self.target.prepared), &path, self.log)?;
        if self.record_server {
            self.store.set_target_server(
                self.run_id,
                &self.target.name,
                &server.version(),
                &server.settings(),
            )?;
            if let Some(config) = server.config_text() {
                self.store
                    .set_target_config(self.run_id, &self.target.name, &config)?;
            }
        }
        self.progress.detail(&format!(
            "{}: {} started in {}",
            self.label(),
            server.version(),
            path.display()
        ));
        let end = self.load_and_steps(server.as_ref());
        server.stop()?;
        end
    }

    fn load_and_steps(&mut self, server: &dyn Server) -> Result<CellEnd> {
        let scale = self.plan.scale;
        let tables = sysbench::tables(scale);
        self.load(server)?;
        if self.plan.postwrite_after_load() {
            server
                .postwrite(&tables, self.plan.postwrite_budget)
                .context("postwrite cleanup after the load")?;
        }
        let probe = Probe::new(server.observed(), server.data_dir());
        for (index, step) in self.plan.steps.iter().copied().enumerate() {
            if self.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(CellEnd::Interrupted);
            }
            let step_index = sysbench::CATALOG
                .iter()
                .position(|s| s.label == step.label)
                .unwrap_or(index) as u32;
            let interrupted = self.step(server, &probe, step, step_index)?;
            if interrupted {
                return Ok(CellEnd::Interrupted);
            }
            if step.postwrite_after {
                server
                    .postwrite(&tables, self.plan.postwrite_budget)
                    .with_context(|| format!("postwrite cleanup after {}", step.label))?;
            }
        }
        Ok(CellEnd::Done)
    }

    fn load(&mut self, server: &dyn Server) -> Result<()> {
        let scale = self.plan.scale;
        let driver = server.driver();
        // The load's client is a client too: it runs on a thread placed like the step clients.
        let client_cpus = self.target.placement.client.as_ref();
        let (load_secs, index_secs) = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("dbdelta-load".into())
                .spawn_scoped(s, || -> Result<(f64, f64)> {
                    if let Some(c) = client_cpus {
                        crate::cpus::pin_current_thread(c)
                            .with_context(|| format!("pinning the load's client to CPUs {c}"))?;
                    }
                    let mut session = driver.connect().context("connecting for the load")?;
                    load_sysbench(
                        session.as_mut(),
                        driver.dialect(),
                        &self.target.tables,
                        scale,
                    )
                })
                .context("starting the load thread")?
                .join()
                .map_err(|_| anyhow::anyhow!("the load thread panicked"))?
        })?;
        let total = scale.rows * scale.tables as u64;
        let rows_per_sec = (load_secs > 0.0).then(|| total as f64 / load_secs);
        let load = LoadResult {
            target: self.target.name.clone(),
            suite: "sysbench".into(),
            clients: self.cell.clients,
            repeat: self.cell.repeat,
            tables: scale.tables,
            rows_per_table: scale.rows,
            load_secs,
            rows_per_sec,
            index_secs,
            db_size_bytes: server.db_size(),
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
        Ok(())
    }

    /// Run and store one step. Returns true when interrupted (nothing stored for it).
    fn step(
        &mut self,
        server: &dyn Server,
        probe: &Probe,
        step: &'static StepDef,
        step_index: u32,
    ) -> Result<bool> {
        let measure = self.plan.duration_of(step);
        let spec = step::StepSpec {
            step,
            scale: self.plan.scale,
            clients: self.plan.threads_of(step, self.cell.clients),
            warmup: self.plan.warmup,
            measure,
            seed: workload::step_seed(step_index, self.cell.repeat),
            client_cpus: self.target.placement.client.clone(),
            stop_rule: self.plan.stop_rule(step),
        };
        let prefix = format!("{} {}", self.label(), step.label);
        let bar = self.progress.step(&prefix, self.plan.warmup + measure);
        let driver = server.driver();
        let result = step::run(&spec, &driver, probe, &bar, self.interrupt);
        let mut m = Measurement {
            target: self.target.name.clone(),
            suite: "sysbench".into(),
            step: step.label.to_string(),
            step_index,
            group: self.plan.group_of(step).id().to_string(),
            warm: !step.reported(),
            statements_per_event: step.statements_per_event(),
            clients: self.cell.clients,
            repeat: self.cell.repeat,
            tables: self.plan.scale.tables,
            rows_per_table: self.plan.scale.rows,
            ..Default::default()
        };
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                let msg = format!("{e:#}");
                m.failed = true;
                m.error = Some(msg.clone());
                self.store.save_step(self.run_id, &m, &[], &[])?;
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
        m.db_size_bytes = server.db_size();
        let mut dead = None;
        if let Some(err) = &run.fatal {
            m.failed = true;
            m.error = Some(err.clone());
            if let Err(e) = server.check_alive() {
                m.error = Some(format!("{err}; {e:#}"));
                dead = Some(e);
            } else {
                self.failures.push(format!("{prefix}: {err}"));
            }
        }
        let series = series_of(&m, &run);
        Self::fill_length(&mut m, &run, &series);
        self.store
            .save_step(self.run_id, &m, &series, &run.merged.serialized_histogram())?;
        if let Some(e) = dead {
            bar.finish(&format!("{prefix}: FAILED: the server died"));
            return Err(e.context(format!("{prefix}: the server died during the step")));
        }
        bar.finish(&summary(&prefix, &m));
        self.progress.detail(&format!(
            "{prefix}: rows touched per statement {:?}",
            run.rows_touched
        ));
        Ok(false)
    }

    /// Everything `run` measured, into `m`: counts, rates, latency, costs per op, memory, the
    /// CPUs threads ran on, and the client-bound and wake-up-bound flags. `threads` is the
    /// number of client threads that ran.
    fn fill(&self, m: &mut Measurement, step: &StepDef, run: &step::StepRun, threads: u32) {
        let spe = u64::from(step.statements_per_event());
        let merged = &run.merged;
        m.seconds = run.seconds;
        m.events = merged.events;
        m.ops = merged.events * spe;
        m.errors = merged.errors;
        let rate = |n: u64| (run.seconds > 0.0 && n > 0).then(|| n as f64 / run.seconds);
        m.qps = rate(m.ops);
        m.tps = rate(m.events);
        m.latency_us = merged.latency();
        if step.is_scan() {
            m.scan_krows_per_sec = m
                .latency_us
                .filter(|l| l.mean > 0.0)
                .map(|l| self.plan.scale.rows as f64 / 1000.0 / (l.mean / 1e6));
        }
        // Rows touched by the measured events (failed ones included: they ran statements too).
        m.rows_per_statement =
            step.rows_per_statement(&run.rows_touched, merged.events + m.errors.total());
        m.rows_per_event = m.rows_per_statement.as_ref().map(|per| {
            per.iter()
                .zip(step.event)
                .map(|(r, (n, _))| r * f64::from(*n))
                .sum()
        });
        let per = run.costs.per_op(m.ops);
        m.server_cpu_us_per_op = per.proc_cpu_us;
        m.cs_per_op = per.proc_cs;
        m.proc_read_kb_per_op = per.proc_read_kb;
        m.proc_write_kb_per_op = per.proc_write_kb;
        if self.target.engine.embedded() {
            // In-process engines share our CPU: client cost is not separable from engine cost.
            m.client_cpu_us_per_op = None;
            m.client_bound = false;
        } else {
            m.client_cpu_us_per_op = per.client_cpu_us;
            m.client_bound = client_bound(per.client_cpu_us, per.proc_cpu_us, run.max_client_busy);
        }
        m.host_cpu_us_per_op = per.host_cpu_us;
        m.host_cs_per_op = per.host_cs;
        m.reads_per_op = per.reads;
        m.read_kb_per_op = per.read_kb;
        m.writes_per_op = per.writes;
        m.write_kb_per_op = per.write_kb;
        m.peak_rss_bytes = run.peaks.rss;
        m.peak_vsz_bytes = run.peaks.vsz;
        m.peak_pss_bytes = run.peaks.pss;
        let cpus = &run.cpus;
        m.server_cpus_seen = cpus.server_seen.to_option();
        m.server_cpus_allowed = cpus.server_allowed.to_option();
        m.client_cpus_seen = cpus.client_seen.to_option();
        m.client_cpus_allowed = cpus.client_allowed.to_option();
        let placement = &self.target.placement;
        m.wakeup_bound = crate::cpus::wakeup_bound(&crate::cpus::WakeupInputs {
            embedded: self.target.engine.embedded(),
            clients: threads,
            usable_cpus: self.plan.machine.usable.len(),
            one_shared_cpu: placement.one_shared_cpu(),
            server_io_kb_per_op: per.proc_read_kb.zip(per.proc_write_kb).map(|(r, w)| r + w),
            client_cpu_us_per_op: m.client_cpu_us_per_op,
            server_cpu_us_per_op: m.server_cpu_us_per_op,
            qps: m.qps,
        });
    }

    /// The step-length rule and how it ended, with the precision achieved as computed from
    /// the stored per-second `series` (the same function the adaptive rule uses).
    fn fill_length(m: &mut Measurement, run: &step::StepRun, series: &[SecondSample]) {
        let ops: Vec<f64> = series.iter().map(|s| s.ops as f64).collect();
        m.precision_achieved = stats::series_precision(&ops)
            .map(|p| p.half_width)
            .filter(|h| h.is_finite());
        match &run.adaptive {
            None => {
                m.duration_rule = "fixed".into();
                m.stop_reason = Some("deadline".into());
            }
            Some(end) => {
                m.duration_rule = "adaptive".into();
                m.precision_target = Some(end.target);
                m.stop_reason = Some(if end.reached { "precision" } else { "max" }.into());
            }
        }
    }
}

/// The per-second series of a step: whole seconds of the measured period only. A partial last
/// second (or the bucket of events that ended after the deadline) is not a rate and would read
/// as a stall. The last event ends a hair before the deadline, so 1 ms of slack is allowed:
/// 0.9999 s is one whole second.
fn series_of(m: &Measurement, run: &step::StepRun) -> Vec<SecondSample> {
    let spe = u64::from(m.statements_per_event);
    let whole_seconds = (run.seconds + 1e-3).floor() as usize;
    run.merged
        .seconds
        .iter()
        .take(whole_seconds)
        .enumerate()
        .map(|(i, (events, p99, max))| SecondSample {
            target: m.target.clone(),
            step: m.step.clone(),
            clients: m.clients,
            repeat: m.repeat,
            second: i as u32,
            ops: events * spe,
            p99_us: p99.map(|v| v as f64 / 1000.0),
            max_us: max.map(|v| v as f64 / 1000.0),
        })
        .collect()
}

/// The line that replaces a finished step's progress bar.
fn summary(prefix: &str, m: &Measurement) -> String {
    let (Some(qps), Some(lat)) = (&m.qps, &m.latency_us) else {
        return format!("{prefix}: no event completed ({} errors)", m.errors.total());
    };
    let mut out = format!(
        "{prefix}: {} qps, p99 {:.1} µs, {:.1} µs CPU/op",
        thousands(*qps),
        lat.p99,
        m.server_cpu_us_per_op.unwrap_or(f64::NAN),
    );
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
