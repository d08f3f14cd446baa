//! Each step's floor per build (table `floors`, `dbdelta calibrate`): written by a
//! calibration, read with every run whose targets run a calibrated build.
//!
//! Owns that table. Must not: measure floors or judge with them (`calibrate` and the
//! report's verdicts do).

use super::Store;
use super::sql::{Value, upsert};
use crate::results::TargetInfo;
use crate::results::floors::{StepFloor, build_key};
use anyhow::Result;

impl Store {
    /// Keep `floor` as the floor of `step` (of `suite`, at `clients`) for `build`, measured by
    /// calibration run `run_id`, replacing an older one.
    pub fn set_floor(
        &mut self,
        build: &str,
        (suite, step, clients): (&str, &str, u32),
        floor: f64,
        run_id: &str,
    ) -> Result<()> {
        let row = vec![
            ("build", Value::from(build)),
            ("suite", suite.into()),
            ("step", step.into()),
            ("clients", i64::from(clients).into()),
            ("floor", floor.into()),
            ("run_id", run_id.into()),
        ];
        let keys = ["build", "suite", "step", "clients"];
        upsert(&mut **self.db.get_mut(), "floors", &keys, row)?;
        Ok(())
    }

    /// The floors stored for the builds of `targets`, per target.
    pub(super) fn floors_of(&self, targets: &[TargetInfo]) -> Result<Vec<StepFloor>> {
        let mut out = Vec::new();
        for t in targets {
            let Some(build) = build_key(t) else { continue };
            let rows = self.db().query(
                "SELECT suite, step, clients, floor, run_id FROM floors WHERE build = ?1 \
                 ORDER BY suite, step, clients",
                &[build.into()],
            )?;
            for r in rows {
                out.push(StepFloor {
                    target: t.name.clone(),
                    suite: r.col("suite")?,
                    step: r.col("step")?,
                    clients: u32::try_from(r.col::<i64>("clients")?).unwrap_or(0),
                    floor: r.col("floor")?,
                    run_id: r.col("run_id")?,
                });
            }
        }
        Ok(out)
    }
}
