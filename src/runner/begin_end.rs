//! A run's beginning and its end: the run recorded (its targets, options and label, its first
//! invocation) and held, its directory under the work directory claimed, `perf` checked for a
//! profiled run, the targets whose build failed recorded as failed; at the end the run
//! directory left (removed when empty, unless `--keep`) and the run and the invocation marked
//! finished.
//!
//! Shared by `execute`, `resume` and `grown`. Must not: run a cell, or time anything.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::server::StartServer;
use super::{Work, new_run_id, workdir};
use crate::plan::RunPlan;
use crate::profiler::{self, Perf, ProfileSettings};
use crate::progress::Progress;
use crate::results::{Profiling, RunInfo, TargetInfo};
use crate::store::Store;

/// A new run as it begins: recorded (with `targets`), its directory claimed.
pub(super) struct Begun {
    pub(super) run_id: String,
    run_dir: PathBuf,
    created_workdir: bool,
    lock: workdir::RunLock,
    invocation: u32,
    perf: Option<Perf>,
}

impl Begun {
    /// Record a new run of `plan` with its (options JSON, label) and `targets`, and claim its
    /// directory; stale run directories are named first.
    pub(super) fn new(
        plan: &RunPlan,
        store: &mut Store,
        progress: &Progress,
        (options, label): (&str, &crate::store::RunLabel),
        targets: &[TargetInfo],
    ) -> Result<Begun> {
        name_stale(plan, progress)?;
        let run_id = new_run_id();
        let (run_dir, created_workdir, lock) = make_run_dir(plan, &run_id)?;
        let mut info = run_info(plan, &run_id);
        let perf = check_perf(plan, &mut info, progress);
        store.begin_run(&info, targets)?;
        // A new id: nobody else holds it; held, another host's --resume of it is refused.
        store.hold_run(&run_id)?;
        store.set_run_options(&run_id, options)?;
        store.set_run_label(&run_id, label)?;
        let invocation = store.begin_invocation(&run_id, &info.started)?;
        Ok(Begun {
            run_id,
            run_dir,
            created_workdir,
            lock,
            invocation,
            perf,
        })
    }

    /// Where the run's cells work, their servers started by `start`.
    pub(super) fn work(&self, start: StartServer) -> Work<'_> {
        Work {
            run_id: &self.run_id,
            run_dir: &self.run_dir,
            created_workdir: self.created_workdir,
            lock: &self.lock,
            invocation: self.invocation,
            perf: self.perf.as_ref(),
            finished: BTreeMap::new(),
            start,
        }
    }
}

/// Say which stale run directories earlier interrupted runs left in the work directory.
fn name_stale(plan: &RunPlan, progress: &Progress) -> Result<()> {
    let stale = workdir::stale_runs(&plan.workdir)?;
    for s in &stale {
        progress.line(&format!("stale {}", s.describe()));
    }
    if !stale.is_empty() {
        progress.line(
            "  left by interrupted runs: `dbdelta run --resume RUN` or `dbdelta clean` removes them",
        );
    }
    Ok(())
}

/// The run's own directory under the work directory, claimed as this process's (a resumed
/// run's may exist already; refused while another dbdelta owns it); `true` when the work
/// directory itself was created here (and so is removed again when the run leaves it empty).
pub(super) fn make_run_dir(
    plan: &RunPlan,
    run_id: &str,
) -> Result<(std::path::PathBuf, bool, workdir::RunLock)> {
    let created_workdir = !plan.workdir.exists();
    std::fs::create_dir_all(&plan.workdir).with_context(|| {
        format!(
            "--workdir {}: cannot create the work directory",
            plan.workdir.display()
        )
    })?;
    let run_dir = plan.workdir.join(run_id);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create run directory {}", run_dir.display()))?;
    let lock = workdir::claim(&run_dir, run_id)?;
    Ok((run_dir, created_workdir, lock))
}

/// Targets that failed before the run (their build): recorded as failed with their log, so
/// the report says why they have no results; the other targets run.
pub(super) fn record_broken(
    plan: &RunPlan,
    run_id: &str,
    store: &mut Store,
    failures: &mut Vec<String>,
) -> Result<()> {
    for t in &plan.targets {
        if let Some(b) = &t.broken {
            let log = b.log.as_ref().map(|l| l.display().to_string());
            store.fail_target(run_id, &t.name, &b.error, log.as_deref())?;
            failures.push(format!("target {}: {}", t.name, b.error));
        }
    }
    Ok(())
}

/// The run's record as it starts.
pub(super) fn run_info(plan: &RunPlan, run_id: &str) -> RunInfo {
    RunInfo {
        id: run_id.to_string(),
        lab: plan.lab.name.clone(),
        lab_text: plan.lab.text.clone(),
        started: chrono::Utc::now().to_rfc3339(),
        finished: None,
        complete: false,
        host: crate::host::describe(),
        dbdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        quick: plan.quick,
        min_effect: Some(plan.lab.min_effect),
        looks: plan.auto.map(|a| a.looks()),
        profiling: None,
        invocations: Vec::new(),
    }
}

/// In a profiled run: whether perf can record here, recorded in `info` (and said on the
/// terminal when it cannot); `perf` when it can.
pub(super) fn check_perf(plan: &RunPlan, info: &mut RunInfo, progress: &Progress) -> Option<Perf> {
    let settings = plan.profile?;
    let checked = profiler::check(&settings);
    info.profiling = Some(profiling_info(&settings, &checked));
    if let Err(why) = &checked {
        progress.line(&format!("no CPU profiles: {why}"));
    }
    checked.ok()
}

/// What the run records of its profiling: the settings and `perf`'s version, or why there
/// are no profiles.
fn profiling_info(settings: &ProfileSettings, perf: &Result<Perf, String>) -> Profiling {
    Profiling {
        hz: settings.hz,
        call_graph: settings.call_graph.name().into(),
        perf: perf.as_ref().ok().map(|p| p.version.clone()),
        system_wide: perf.as_ref().is_ok_and(|p| p.system_wide),
        unavailable: perf.as_ref().err().cloned(),
    }
}

/// The targets' records as the run starts (server version and settings come later).
pub(super) fn target_infos(plan: &RunPlan) -> Vec<TargetInfo> {
    plan.targets
        .iter()
        .map(|t| TargetInfo {
            name: t.name.clone(),
            engine: t.engine.name().to_string(),
            config_name: t.config_name.clone(),
            config_text: t.settings.join("\n"),
            env: crate::engine::common::secret_env::redact_env(&t.env, &plan.lab.secret_env),
            placement: t.placement.name.clone(),
            server_cpus: t.placement.server.as_ref().map(|c| c.to_string()),
            client_cpus: t.placement.client.as_ref().map(|c| c.to_string()),
            build: t.built.clone(),
            connect: t.connect.as_ref().map(|c| c.shown()),
            sweep: t.sweep.clone(),
            ..Default::default()
        })
        .map(|mut info| {
            info.facts = crate::engine::facts(&info);
            info
        })
        .collect()
}

/// Leave the work directory and mark the run (and this invocation) finished.
pub(super) fn end_run(
    plan: &RunPlan,
    store: &mut Store,
    work: &Work<'_>,
    complete: bool,
) -> Result<()> {
    leave_run_dir(plan, work);
    let now = chrono::Utc::now().to_rfc3339();
    store.finish_run(work.run_id, &now, complete)?;
    store.finish_invocation(work.run_id, work.invocation, &now)
}

/// Unmark the run directory (what `--keep` keeps is not stale), then remove it (and a work
/// directory this run created) when empty, unless `--keep`: whatever is left in them is kept
/// for inspection.
fn leave_run_dir(plan: &RunPlan, work: &Work<'_>) {
    work.lock.unmark();
    if plan.keep {
        return;
    }
    let _ = std::fs::remove_dir(work.run_dir);
    if work.created_workdir {
        let _ = std::fs::remove_dir(&plan.workdir);
    }
}
