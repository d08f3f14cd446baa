//! What `dbdelta bisect` keeps with its run (table `bisections`): the metric that decided,
//! the steps judged and the one-line answer, so `dbdelta bisect --show RUN` prints it again
//! and `run --resume` refuses a bisection's run.
//!
//! Owns that table's reads and writes. Must not: judge anything (the runner's `bisect` does).

use anyhow::Result;

use super::Store;

/// A stored bisection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    /// `instructions`, `cpu` or `qps`.
    pub metric: String,
    /// The judged steps' labels, comma-separated.
    pub steps: String,
    /// `None`: the bisection did not end (interrupted or failed).
    pub answer: Option<String>,
}

impl Store {
    /// Record that run `run_id` bisects by `metric` on `steps` (as it begins).
    pub fn begin_bisection(&mut self, run_id: &str, metric: &str, steps: &str) -> Result<()> {
        self.db.get_mut().execute(
            "INSERT INTO bisections (run_id, metric, steps) VALUES (?1, ?2, ?3)",
            &[run_id.into(), metric.into(), steps.into()],
        )?;
        Ok(())
    }

    /// Keep the bisection's answer.
    pub fn set_bisection_answer(&mut self, run_id: &str, answer: &str) -> Result<()> {
        self.db.get_mut().execute(
            "UPDATE bisections SET answer = ?2 WHERE run_id = ?1",
            &[run_id.into(), answer.into()],
        )?;
        Ok(())
    }

    /// The bisection of run `run_id`; `None` when the run is no bisection.
    pub fn bisection(&self, run_id: &str) -> Result<Option<Bisection>> {
        let rows = self.db().query(
            "SELECT metric, steps, answer FROM bisections WHERE run_id = ?1",
            &[run_id.into()],
        )?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(Bisection {
            metric: r.get(0)?,
            steps: r.get(1)?,
            answer: r.get(2)?,
        }))
    }
}
