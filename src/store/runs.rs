//! A run's and its targets' rows as the run goes: the run and its targets recorded as it
//! begins (or one target added to a run that grows), what each target's started server says
//! of itself, a target's failure, how the run counts instructions, and the run finished.
//!
//! Each write is one statement, or one transaction for a run with its targets. Must not: read
//! rows back (`read` does), or decide when a run begins or ends (the runner does).

use std::collections::BTreeMap;

use anyhow::Result;

use super::Store;
use super::sql::{Db, Lock, Tx, Value};
use crate::results::{RunInfo, TargetInfo};

impl Store {
    /// Record a new run (incomplete) and its targets.
    pub fn begin_run(&mut self, run: &RunInfo, targets: &[TargetInfo]) -> Result<()> {
        let db = &mut **self.db.get_mut();
        let mut tx = Tx::begin(db, Lock::Shared)?;
        tx.execute(
            "INSERT INTO runs (id, lab, lab_text, started, finished, complete, quick, host_cpu_model,
                host_cores, host_memory_bytes, host_kernel, dbdelta_version, min_effect,
                host_online_cpus, host_usable_cpus, host_cpu_topology_json, profiling_json, looks)
             VALUES (?1, ?2, ?3, ?4, NULL, 0, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            &[
                (&run.id).into(),
                (&run.lab).into(),
                (&run.lab_text).into(),
                (&run.started).into(),
                run.quick.into(),
                (&run.host.cpu_model).into(),
                run.host.cores.into(),
                run.host.memory_bytes.into(),
                (&run.host.kernel).into(),
                (&run.dbdelta_version).into(),
                run.min_effect.into(),
                (&run.host.online_cpus).into(),
                (&run.host.usable_cpus).into(),
                serde_json::to_string(&run.host.cpu_topology)?.into(),
                run.profiling.as_ref().map(serde_json::to_string).transpose()?.into(),
                run.looks.into(),
            ],
        )?;
        for (i, t) in targets.iter().enumerate() {
            insert_target(&mut *tx, &run.id, i, t)?;
        }
        tx.commit()
    }

    /// Record one more target of a begun run (a run that grows as `dbdelta bisect` probes),
    /// at its `position` in the lab.
    pub fn add_target(&mut self, run_id: &str, position: usize, t: &TargetInfo) -> Result<()> {
        insert_target(&mut **self.db.get_mut(), run_id, position, t)
    }

    /// Record why a target's server processes are not measured.
    pub fn set_target_unobserved(&mut self, run_id: &str, target: &str, why: &str) -> Result<()> {
        self.update_target(run_id, target, "unobserved = ?3", vec![why.into()])
    }

    /// Record what a started server said about itself.
    pub fn set_target_server(
        &mut self,
        run_id: &str,
        target: &str,
        version: &str,
        settings: &BTreeMap<String, String>,
    ) -> Result<()> {
        let settings = serde_json::to_string(settings)?;
        self.update_target(
            run_id,
            target,
            "server_version = ?3, settings_json = ?4",
            vec![version.into(), settings.into()],
        )
    }

    /// Record a counting server's version where no timed cell recorded the target's (a target
    /// counted only: `dbdelta calibrate`, explain's twins); its settings are not the target's
    /// (the counting server's background is held still) and are not recorded.
    pub fn set_target_version_if_unknown(
        &mut self,
        run_id: &str,
        target: &str,
        version: &str,
    ) -> Result<()> {
        let sql = "UPDATE targets SET server_version = ?3 WHERE run_id = ?1 AND name = ?2 \
                   AND server_version IS NULL";
        let params = vec![run_id.into(), target.into(), version.into()];
        self.db.get_mut().execute(sql, &params)?;
        Ok(())
    }

    /// Record what a started server's build says of itself (`engine::provenance`).
    pub fn set_target_provenance(
        &mut self,
        run_id: &str,
        target: &str,
        provenance: &crate::results::BinaryProvenance,
    ) -> Result<()> {
        let json = serde_json::to_string(provenance)?;
        self.update_target(run_id, target, "provenance_json = ?3", vec![json.into()])
    }

    /// Record that target `target` of run `run_id` runs the same build as target `from.1` of
    /// run `from.0` (explain's twins and the target they copy): that target's server version,
    /// build (`build_json`) and provenance, copied as they are stored.
    pub fn copy_target_build(
        &mut self,
        run_id: &str,
        target: &str,
        (from_run, from_target): (&str, &str),
    ) -> Result<()> {
        let of = |column: &str| {
            format!("{column} = (SELECT {column} FROM targets WHERE run_id = ?3 AND name = ?4)")
        };
        let set = ["server_version", "build_json", "provenance_json"].map(of);
        self.update_target(
            run_id,
            target,
            &set.join(", "),
            vec![from_run.into(), from_target.into()],
        )
    }

    /// Record the configuration a started server was given (the engine's own file), in place
    /// of the target's settings lines recorded when the run began.
    pub fn set_target_config(&mut self, run_id: &str, target: &str, config: &str) -> Result<()> {
        self.update_target(run_id, target, "config_text = ?3", vec![config.into()])
    }

    /// Mark a target failed with a one-line reason and where its log is.
    pub fn fail_target(
        &mut self,
        run_id: &str,
        target: &str,
        error: &str,
        log_path: Option<&str>,
    ) -> Result<()> {
        self.update_target(
            run_id,
            target,
            "failed = 1, error = ?3, log_path = ?4",
            vec![error.into(), log_path.into()],
        )
    }

    /// `UPDATE targets SET <set>` of one target; `set` takes its values from `?3` on.
    fn update_target(
        &mut self,
        run_id: &str,
        target: &str,
        set: &str,
        values: Vec<Value>,
    ) -> Result<()> {
        let mut params = vec![run_id.into(), target.into()];
        params.extend(values);
        self.db.get_mut().execute(
            &format!("UPDATE targets SET {set} WHERE run_id = ?1 AND name = ?2"),
            &params,
        )?;
        Ok(())
    }

    /// Record how the run counts instructions (the tool and its version, and whether hardware
    /// counters were there).
    pub fn set_run_instructions(&mut self, run_id: &str, how: &str) -> Result<()> {
        self.db.get_mut().execute(
            "UPDATE runs SET instructions = ?2 WHERE id = ?1",
            &[run_id.into(), how.into()],
        )?;
        Ok(())
    }

    /// Mark a run finished; `complete` is false when it was interrupted.
    pub fn finish_run(&mut self, run_id: &str, finished: &str, complete: bool) -> Result<()> {
        self.db.get_mut().execute(
            "UPDATE runs SET finished = ?2, complete = ?3 WHERE id = ?1",
            &[run_id.into(), finished.into(), complete.into()],
        )?;
        Ok(())
    }
}

/// One `targets` row, at its position in the lab.
fn insert_target(db: &mut dyn Db, run_id: &str, position: usize, t: &TargetInfo) -> Result<()> {
    db.execute(
        "INSERT INTO targets (run_id, position, name, engine, server_version, config_name,
            config_text, env_json, settings_json, failed, error, log_path, placement,
            server_cpus, client_cpus, build_json, connect, sweep, provenance_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
            ?19)",
        &[
            run_id.into(),
            (position as i64).into(),
            (&t.name).into(),
            (&t.engine).into(),
            t.server_version.as_deref().into(),
            t.config_name.as_deref().into(),
            (&t.config_text).into(),
            serde_json::to_string(&t.env)?.into(),
            serde_json::to_string(&t.settings)?.into(),
            t.failed.into(),
            t.error.as_deref().into(),
            t.log_path.as_deref().into(),
            (&t.placement).into(),
            t.server_cpus.as_deref().into(),
            t.client_cpus.as_deref().into(),
            t.build
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?
                .into(),
            t.connect.as_deref().into(),
            t.sweep.as_deref().into(),
            (t.provenance.as_ref())
                .map(serde_json::to_string)
                .transpose()?
                .into(),
        ],
    )?;
    Ok(())
}
