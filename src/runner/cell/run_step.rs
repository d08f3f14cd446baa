//! One step of a cell: run from here ([`step::run`]) or by the agent on the target's host, its
//! CPU profile folded, its record filled and stored the moment it ends, and its line on the
//! terminal. A step that fails is stored as failed and the cell goes on; one whose server died
//! fails the target.
//!
//! Owns a step's path from its plan to the store. Must not: time database work (that is
//! `step`), fill the record's numbers (`measurement` does), or know a particular suite.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::CellRun;
use super::measurement::{fill_length, series_of, step_record};
use crate::engine::Server;
use crate::profiler::{self, Perf, Recorded};
use crate::progress::thousands;
use crate::results::{Measurement, Metric, OpHistograms, StepProfile};
use crate::runner::server::ClientsThere;
use crate::runner::step::{self, StepRun};
use crate::sampler::Probe;
use crate::workload::{self, StepPlan};

impl CellRun<'_> {
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
    pub fn step(&mut self, server: &dyn Server, probe: &Probe, step: &StepPlan) -> Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `-v` once printed the measured total (132374) as if it were per statement.
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
