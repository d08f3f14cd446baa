//! A cell's load: fresh on the steps' server (from here, on a thread placed like the step
//! clients, or by the agent on the target's host), or with `reuse_load` copied from a saved
//! snapshot, or else loaded on a server of its own, stopped and saved; stored when the suite
//! records its load, and said on the terminal.
//!
//! Owns where the load comes from and its record. Must not: time the load itself
//! ([`timed_load`] does), run a step, or know a particular suite.

use std::path::Path;

use anyhow::{Context, Result};

use super::{CellRun, Loaded};
use crate::engine::{self, Server};
use crate::progress::thousands;
use crate::results::LoadResult;
use crate::runner::server::TargetServer;
use crate::runner::snapshot::{self, Found, RestoreError, Restored};
use crate::runner::timed_load;

impl CellRun<'_> {
    /// `reuse_load`: copy a matching saved load into the empty `path`, or else load on a
    /// server of its own there, stop it cleanly and save the load. `None`: this cell's load
    /// cannot be saved (said why); the steps' server loads it.
    pub fn reuse(
        &mut self,
        root: &Path,
        spec: &engine::TargetSpec,
        path: &Path,
    ) -> Result<Option<Loaded>> {
        let label = self.label();
        let target = (spec, self.plan.lab.secret_env.as_slice());
        let w = match snapshot::wanted(root, target, self.suite.suite.as_ref(), self.cell.clients) {
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
    pub fn record_reused(&mut self, server: &dyn Server, r: Restored) -> Result<()> {
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

    /// Create and fill the suite's tables on a thread placed like the step clients, and store
    /// the load when the suite has one of its own; the load's and the index build's seconds.
    pub fn load(&mut self, server: &dyn Server) -> Result<(f64, f64)> {
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
}
