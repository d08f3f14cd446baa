//! What the store keeps so an interrupted run can be resumed: the options that shaped its plan,
//! each invocation of `dbdelta run` that worked on it, and each finished cell (target × suite ×
//! clients × repeat) with the invocation that ran it.
//!
//! A cell is finished when its row in `cells` exists: the runner writes it after the cell's
//! last step is stored and its server stopped, so a cell cut off anywhere before that has no
//! row, and `--resume` deletes what it stored ([`Store::discard_cell`]) and runs it whole.
//! Plain portable SQL only (the same statements must run on PostgreSQL).
//! Must not: decide what to run (the runner does) or render anything.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Store;
use super::sql::{Lock, Tx, Value};
use crate::results::{CellPhases, HostInfo, Invocation, RunData, StoredPhases};

/// One cell of a run as the store names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey {
    pub target: String,
    pub suite: String,
    pub clients: u32,
    pub repeat: u32,
}

/// `run_id = ?1 AND target = ?2 AND suite = ?3 AND clients = ?4 AND repeat = ?5` and its values.
fn of_cell(run_id: &str, cell: &CellKey) -> (&'static str, Vec<Value>) {
    (
        "run_id = ?1 AND target = ?2 AND suite = ?3 AND clients = ?4 AND repeat = ?5",
        vec![
            run_id.into(),
            (&cell.target).into(),
            (&cell.suite).into(),
            cell.clients.into(),
            cell.repeat.into(),
        ],
    )
}

impl Store {
    /// Record that this process starts working on `run_id`; returns its invocation number
    /// (1 for a new run, then one more per `--resume`).
    pub fn begin_invocation(&mut self, run_id: &str, started: &str) -> Result<u32> {
        let db = &mut **self.db.get_mut();
        let mut tx = Tx::begin(db, Lock::Exclusive)?;
        let rows = tx.query(
            "SELECT COALESCE(MAX(number), 0) FROM invocations WHERE run_id = ?1",
            &[run_id.into()],
        )?;
        let last: u32 = rows.first().map(|r| r.get(0)).transpose()?.unwrap_or(0);
        tx.execute(
            "INSERT INTO invocations (run_id, number, started, pid) VALUES (?1, ?2, ?3, ?4)",
            &[
                run_id.into(),
                (last + 1).into(),
                started.into(),
                std::process::id().into(),
            ],
        )?;
        tx.commit()?;
        Ok(last + 1)
    }

    /// Record that invocation `number` ended (normally or by Ctrl-C).
    pub fn finish_invocation(&mut self, run_id: &str, number: u32, finished: &str) -> Result<()> {
        self.db.get_mut().execute(
            "UPDATE invocations SET finished = ?3 WHERE run_id = ?1 AND number = ?2",
            &[run_id.into(), number.into(), finished.into()],
        )?;
        Ok(())
    }

    /// Keep the command-line options that shaped the run's plan (JSON), for `--resume`.
    pub fn set_run_options(&mut self, run_id: &str, json: &str) -> Result<()> {
        self.db.get_mut().execute(
            "UPDATE runs SET options_json = ?2 WHERE id = ?1",
            &[run_id.into(), json.into()],
        )?;
        Ok(())
    }

    /// The options stored with the run; `None` for runs stored before schema v11.
    pub fn run_options(&self, run_id: &str) -> Result<Option<String>> {
        let rows = self.db().query(
            "SELECT options_json FROM runs WHERE id = ?1",
            &[run_id.into()],
        )?;
        Ok(rows.first().map(|r| r.get(0)).transpose()?.flatten())
    }

    /// The newest lab run that is not complete (explain's twins are counted again by
    /// `dbdelta explain`, never resumed).
    pub fn latest_incomplete_run(&self) -> Result<Option<String>> {
        let rows = self.db().query(
            "SELECT id FROM runs WHERE complete = 0 AND kind IS NULL
             ORDER BY started DESC, id DESC LIMIT 1",
            &[],
        )?;
        rows.first().map(|r| r.get(0)).transpose()
    }

    /// Record that a cell finished in invocation `invocation`, with where its time went.
    pub fn finish_cell(
        &mut self,
        run_id: &str,
        cell: &CellKey,
        invocation: u32,
        phases: &CellPhases,
    ) -> Result<()> {
        let (_, mut values) = of_cell(run_id, cell);
        values.push(invocation.into());
        values.push(chrono::Utc::now().to_rfc3339().into());
        values.push(serde_json::to_string(phases)?.into());
        self.db.get_mut().execute(
            "INSERT INTO cells (run_id, target, suite, clients, repeat, invocation, finished, phases_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &values,
        )?;
        Ok(())
    }

    /// The phases of the newest finished cells (at most `limit`) that runs on a host like
    /// `host` (same CPU model and core count) stored, each with its target's engine and its
    /// suite: what `dbdelta plan` calibrates from. Cells stored before schema v21 have none.
    pub fn cell_phases(&self, host: &HostInfo, limit: u32) -> Result<Vec<StoredPhases>> {
        let rows = self.db().query(
            "SELECT t.engine, c.suite, c.phases_json FROM cells c
             JOIN runs r ON r.id = c.run_id
             JOIN targets t ON t.run_id = c.run_id AND t.name = c.target
             WHERE c.phases_json IS NOT NULL AND r.host_cpu_model = ?1 AND r.host_cores = ?2
             ORDER BY c.finished DESC LIMIT ?3",
            &[(&host.cpu_model).into(), host.cores.into(), limit.into()],
        )?;
        let mut out = Vec::new();
        for r in &rows {
            let text: String = r.get(2)?;
            // A row another version wrote in a shape this one cannot read is skipped: the
            // estimate is calibrated from the rest.
            if let Ok(phases) = serde_json::from_str(&text) {
                out.push(StoredPhases {
                    engine: r.get(0)?,
                    suite: r.get(1)?,
                    phases,
                });
            }
        }
        Ok(out)
    }

    /// The run's finished cells, each with the invocation that ran it.
    pub fn finished_cells(&self, run_id: &str) -> Result<BTreeMap<CellKey, u32>> {
        let rows = self.db().query(
            "SELECT target, suite, clients, repeat, invocation FROM cells WHERE run_id = ?1",
            &[run_id.into()],
        )?;
        rows.iter()
            .map(|r| {
                let key = CellKey {
                    target: r.get(0)?,
                    suite: r.get(1)?,
                    clients: r.get(2)?,
                    repeat: r.get(3)?,
                };
                Ok((key, r.get(4)?))
            })
            .collect()
    }

    /// Delete everything an unfinished cell stored (its load, steps, series, operation rows
    /// profiles and per-function counts), in one transaction, so it can run again whole. Returns the steps deleted.
    pub fn discard_cell(&mut self, run_id: &str, cell: &CellKey) -> Result<usize> {
        let (where_cell, key) = of_cell(run_id, cell);
        let db = &mut **self.db.get_mut();
        let mut tx = Tx::begin(db, Lock::Shared)?;
        // `series` has no suite column: its steps are the cell's measured steps (every
        // placeholder appears in the statement, as PostgreSQL needs each one's type).
        tx.execute(
            &format!(
                "DELETE FROM series WHERE run_id = ?1 AND target = ?2 AND clients = ?4
                 AND repeat = ?5 AND step IN (SELECT step FROM measurements WHERE {where_cell})"
            ),
            &key,
        )?;
        for table in [
            "step_ops",
            "profiles",
            "step_functions",
            "explanations",
            "loads",
        ] {
            tx.execute(&format!("DELETE FROM {table} WHERE {where_cell}"), &key)?;
        }
        let steps = tx.execute(
            &format!("DELETE FROM measurements WHERE {where_cell}"),
            &key,
        )?;
        tx.commit()?;
        Ok(steps as usize)
    }

    /// Mark a run as running again: incomplete, not finished, and its targets' failures
    /// cleared (the cells that failed run again and record theirs anew).
    pub fn reopen_run(&mut self, run_id: &str) -> Result<()> {
        let db = &mut **self.db.get_mut();
        let mut tx = Tx::begin(db, Lock::Shared)?;
        tx.execute(
            "UPDATE runs SET complete = 0, finished = NULL WHERE id = ?1",
            &[run_id.into()],
        )?;
        tx.execute(
            "UPDATE targets SET failed = 0, error = NULL, log_path = NULL WHERE run_id = ?1",
            &[run_id.into()],
        )?;
        tx.commit()
    }

    /// The run's invocations, and each measurement's: the invocation of its finished cell, or
    /// (a cell cut off in an incomplete run) the last one.
    pub(super) fn attach_invocations(&self, data: &mut RunData) -> Result<()> {
        let run_id = data.run.id.clone();
        let rows = self.db().query(
            "SELECT number, started, finished FROM invocations WHERE run_id = ?1 ORDER BY number",
            &[(&run_id).into()],
        )?;
        data.run.invocations = rows
            .iter()
            .map(|r| {
                Ok(Invocation {
                    number: r.get(0)?,
                    started: r.get(1)?,
                    finished: r.get(2)?,
                })
            })
            .collect::<Result<_>>()?;
        let last = data.run.invocations.last().map_or(0, |i| i.number);
        let cells = self.finished_cells(&run_id)?;
        for m in &mut data.measurements {
            let key = CellKey {
                target: m.target.clone(),
                suite: m.suite.clone(),
                clients: m.clients,
                repeat: m.repeat,
            };
            m.invocation = cells.get(&key).copied().unwrap_or(last);
        }
        Ok(())
    }
}
