//! How long a run of a plan takes: every cell's server start, load, postwrite settles, idle
//! probe and steps, and the counting cells of `--instructions`, each phase from what this host
//! measured before ([`Calibration`], built from the store's `cells.phases_json`) or else from
//! its family's defaults (docs/commands.md, `plan`).
//!
//! Owns the arithmetic. Must not: open the store (the caller hands it the
//! stored phases), time anything, or know a suite (steps, loads and budgets come from the
//! [`SuitePlan`]s).

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Cell, RunPlan};
use crate::engine::EngineKind;
use crate::results::{CellPhases, StoredPhases};
use crate::workload::SuitePlan;

/// The newest stored cells an estimate is calibrated from.
pub const CALIBRATION_CELLS: u32 = 500;

/// What a phase costs on an engine when the store has not measured it on this host: its
/// family's guess ([`crate::engine::Family::pace`]).
pub type Defaults = crate::engine::Pace;

/// The defaults of `engine`, from its family (measured on a loaded 2-core host; a family
/// without its own gets the slowest server's until the store has measured it here).
pub fn defaults(engine: EngineKind) -> Defaults {
    engine.family().pace(!cfg!(debug_assertions))
}

/// What the store measured on this host, per engine (and suite, for loads and counting).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calibration {
    engines: BTreeMap<String, Fitted>,
    /// (engine, suite) → rows per second of the stored loads.
    loads: BTreeMap<(String, String), Mean>,
    /// (engine, suite) → stored counting cell's seconds over what the defaults give it.
    counting: BTreeMap<(String, String), Mean>,
    /// The stored cells it was built from.
    pub cells: usize,
}

/// The per-engine means of the stored timed cells.
#[derive(Debug, Clone, Default, PartialEq)]
struct Fitted {
    server: Mean,
    postwrite_extra: Mean,
    step_extra: Mean,
}

/// A running mean.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.sum += v;
            self.n += 1;
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
}

impl Calibration {
    /// From the phases of cells stored on this host (newest first; any order works).
    pub fn from_stored(stored: &[StoredPhases]) -> Calibration {
        let mut c = Calibration::default();
        for s in stored {
            let Some(engine) = EngineKind::parse(&s.engine) else {
                continue;
            };
            let p = &s.phases;
            let key = (s.engine.clone(), s.suite.clone());
            c.cells += 1;
            if p.counting {
                // The work callgrind slows, apart from the budgets' waits, which it does not.
                let shape = CountShape::of(p, engine);
                let waits =
                    f64::from(shape.starts * shape.postwrites) * shape.postwrite_budget_secs;
                let work = counting_secs(&defaults(engine), &shape, 1.0) - waits;
                if work > 0.0 {
                    c.counting
                        .entry(key)
                        .or_default()
                        .add((p.secs - waits).max(0.0) / work);
                }
                continue;
            }
            let f = c.engines.entry(s.engine.clone()).or_default();
            f.server.add(p.server_secs);
            if p.postwrites > 0 {
                let each = p.postwrite_secs / f64::from(p.postwrites);
                f.postwrite_extra
                    .add((each - p.postwrite_budget_secs).max(0.0));
            }
            if p.steps > 0 {
                let extra = (p.steps_secs - p.planned_steps_secs) / f64::from(p.steps);
                f.step_extra.add(extra.max(0.0));
            }
            if p.rows > 0 && p.load_secs > 0.0 {
                c.loads
                    .entry(key)
                    .or_default()
                    .add(p.rows as f64 / p.load_secs);
            }
        }
        c
    }

    /// The defaults of `engine` with every phase this calibration measured put in.
    fn for_engine(&self, engine: EngineKind, suite: &str) -> (Defaults, bool) {
        let mut d = defaults(engine);
        let mut measured = false;
        let mut take = |slot: &mut f64, m: Option<&Mean>| {
            if let Some(v) = m.and_then(Mean::get) {
                *slot = v;
                measured = true;
            }
        };
        let f = self.engines.get(engine.name());
        take(&mut d.server_secs, f.map(|f| &f.server));
        take(&mut d.postwrite_extra_secs, f.map(|f| &f.postwrite_extra));
        take(&mut d.step_extra_secs, f.map(|f| &f.step_extra));
        let key = (engine.name().to_string(), suite.to_string());
        take(&mut d.load_rows_per_sec, self.loads.get(&key));
        (d, measured)
    }

    /// The counting cells' factor over the defaults for `engine` × `suite` (1: none stored).
    fn counting_factor(&self, engine: EngineKind, suite: &str) -> Option<f64> {
        let key = (engine.name().to_string(), suite.to_string());
        self.counting.get(&key).and_then(Mean::get)
    }
}

/// The seconds of each part of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Parts {
    /// Starting and stopping servers.
    pub servers: f64,
    pub loads: f64,
    /// Postwrite cleanups with their settle waits, and the idle probes.
    pub settles: f64,
    /// Warm-up and measured time of every step, with what each costs beyond it.
    pub steps: f64,
    /// The counting cells, as wall time (`count_jobs` at once).
    pub counting: f64,
}

impl Parts {
    pub fn total(&self) -> f64 {
        self.servers + self.loads + self.settles + self.steps + self.counting
    }
}

/// One cell × suite of the plan and its estimated seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellEstimate {
    pub cell: Cell,
    /// The suite's index in the plan.
    pub suite: usize,
    pub counting: bool,
    pub secs: f64,
}

/// The estimate of a whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub parts: Parts,
    /// Timed cells × suites in run order, then the counting cells × suites.
    pub cells: Vec<CellEstimate>,
    /// Engine × suite pairs whose phases came from the store, and the stored cells read.
    pub calibrated: Vec<String>,
    pub stored_cells: usize,
}

impl Estimate {
    pub fn total(&self) -> Duration {
        Duration::from_secs_f64(self.parts.total().max(0.0))
    }

    /// `estimated time: about 9 min 10 s (steps 2 min, loads 20 s, settles 4 min 10 s, …)` and
    /// where the figures came from.
    pub fn describe(&self, plan: &RunPlan) -> String {
        let d = |s: f64| crate::progress::duration(Duration::from_secs_f64(s));
        let p = &self.parts;
        let mut parts = vec![format!("steps {}", d(p.steps))];
        for (name, secs) in [
            ("loads", p.loads),
            ("settles", p.settles),
            ("server starts", p.servers),
            ("counting", p.counting),
        ] {
            if secs >= 0.5 {
                parts.push(format!("{name} {}", d(secs)));
            }
        }
        let source = match self.calibrated.is_empty() {
            true => {
                "from the defaults (no earlier cell of these engines on this host in the store)"
                    .to_string()
            }
            false => format!(
                "calibrated by {} cell(s) this host ran before ({})",
                self.stored_cells,
                self.calibrated.join(", ")
            ),
        };
        let more = match plan.auto {
            Some(a) => format!(
                "; repeats = \"auto\" may add up to {} round(s)",
                a.max.saturating_sub(a.first)
            ),
            None => String::new(),
        };
        format!(
            "estimated time: about {} ({}), {source}{more}",
            d(p.total()),
            parts.join(", ")
        )
    }
}

/// The estimate of `plan`'s run with `cal`.
pub fn estimate(plan: &RunPlan, cal: &Calibration) -> Estimate {
    let mut parts = Parts::default();
    let mut cells = Vec::new();
    let mut calibrated = std::collections::BTreeSet::new();
    for cell in plan.cells() {
        let target = &plan.targets[cell.target];
        for (index, suite) in plan.suites.iter().enumerate() {
            let (d, measured) = cal.for_engine(target.engine, suite.id());
            if measured {
                calibrated.insert(format!("{} {}", target.engine.name(), suite.id()));
            }
            let p = timed_cell(target.engine, suite, cell.clients, &d, plan.quick);
            parts.servers += p.servers;
            parts.loads += p.loads;
            parts.settles += p.settles;
            parts.steps += p.steps;
            cells.push(CellEstimate {
                cell,
                suite: index,
                counting: false,
                secs: p.total(),
            });
        }
    }
    let counting = counting_cells(plan, cal, &mut calibrated);
    let jobs = plan.instructions.map_or(1, |c| c.jobs.max(1)) as usize;
    parts.counting = pool_wall(&counting.iter().map(|c| c.secs).collect::<Vec<_>>(), jobs);
    cells.extend(counting);
    Estimate {
        parts,
        cells,
        calibrated: calibrated.into_iter().collect(),
        stored_cells: cal.cells,
    }
}

/// One timed cell of `suite` on `engine` at `clients`, by phase.
fn timed_cell(
    engine: EngineKind,
    suite: &SuitePlan,
    clients: u32,
    d: &Defaults,
    quick: bool,
) -> Parts {
    let server = !engine.embedded();
    let steps: f64 = (suite.steps.iter())
        .map(|s| (s.warmup + s.expected).as_secs_f64() + d.step_extra_secs)
        .sum();
    let postwrites = postwrites(suite);
    let postwrite = match server {
        true => postwrites as f64 * (suite.postwrite_budget.as_secs_f64() + d.postwrite_extra_secs),
        false => 0.0,
    };
    let probe = match (server, quick) {
        (false, _) => Duration::ZERO,
        (true, true) => crate::sampler::QUICK_IDLE_PROBE,
        (true, false) => crate::sampler::IDLE_PROBE,
    };
    Parts {
        servers: d.server_secs,
        loads: load_secs(suite, clients, d),
        settles: postwrite + probe.as_secs_f64(),
        steps,
        counting: 0.0,
    }
}

/// The postwrites of a cell of `suite`: after the load, and after each step that carries one.
fn postwrites(suite: &SuitePlan) -> u32 {
    u32::from(suite.postwrite_after_load)
        + suite.steps.iter().filter(|s| s.postwrite_after).count() as u32
}

/// The load of `suite` at `clients` (none when its first step is its load).
fn load_secs(suite: &SuitePlan, clients: u32, d: &Defaults) -> f64 {
    match suite.suite.records_load() && d.load_rows_per_sec > 0.0 {
        true => suite.suite.rows_loaded(clients) as f64 / d.load_rows_per_sec,
        false => 0.0,
    }
}

/// What a counting cell's time follows from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountShape {
    /// Rows loaded and the seconds the engine's defaults give that load.
    pub load_secs: f64,
    pub postwrites: u32,
    pub postwrite_budget_secs: f64,
    /// Counted steps and pass pairs per step.
    pub steps: u32,
    pub passes: u32,
    /// Server starts the pairs are spread over (each loads and sizes again; an engine that
    /// drops its first pair drops one per start).
    pub starts: u32,
    pub drops_first: bool,
}

impl CountShape {
    fn of(p: &CellPhases, engine: EngineKind) -> CountShape {
        CountShape {
            load_secs: p.load_secs,
            postwrites: p.postwrites,
            postwrite_budget_secs: p.postwrite_budget_secs,
            steps: p.steps,
            passes: p.passes,
            starts: p.starts.max(1),
            drops_first: engine.drops_first_pair(),
        }
    }
}

/// The defaults' seconds of a counting cell of `shape`, times `factor` (a calibration's).
/// Its postwrites wait out their budget whatever callgrind costs.
/// Each server start starts, loads and waits out the postwrites again, sizes each step again
/// (about a quarter of a pair) and, where the engine drops its first pair, drops one more.
fn counting_secs(d: &Defaults, shape: &CountShape, factor: f64) -> f64 {
    let starts = f64::from(shape.starts.max(1));
    let per_extra_start = if shape.drops_first { 1.0 } else { 0.25 };
    let pairs = f64::from(shape.passes) + (starts - 1.0) * per_extra_start;
    let work = starts * (d.count_server_secs + shape.load_secs * d.count_load_factor)
        + f64::from(shape.steps) * pairs * d.count_pair_secs;
    work * factor + starts * f64::from(shape.postwrites) * shape.postwrite_budget_secs
}

/// The counting cells of `plan` (one per target on this host × suite, as the runner's).
fn counting_cells(
    plan: &RunPlan,
    cal: &Calibration,
    calibrated: &mut std::collections::BTreeSet<String>,
) -> Vec<CellEstimate> {
    let Some(counting) = plan.instructions else {
        return Vec::new();
    };
    let clients = plan.cells().iter().map(|c| c.clients).min().unwrap_or(1);
    let mut out = Vec::new();
    for (t, target) in plan.targets.iter().enumerate() {
        if target.remote.is_some() || target.connect.is_some() {
            continue;
        }
        for (index, suite) in plan.suites.iter().enumerate() {
            let shape = count_shape(target.engine, suite, clients, counting);
            let factor = cal.counting_factor(target.engine, suite.id());
            if factor.is_some() {
                calibrated.insert(format!("{} {} counting", target.engine.name(), suite.id()));
            }
            let d = defaults(target.engine);
            out.push(CellEstimate {
                cell: Cell {
                    target: t,
                    clients,
                    repeat: 0,
                },
                suite: index,
                counting: true,
                secs: counting_secs(&d, &shape, factor.unwrap_or(1.0)),
            });
        }
    }
    out
}

/// What a counting cell of `suite` on `engine` does (also what the runner stores with it).
pub fn count_shape(
    engine: EngineKind,
    suite: &SuitePlan,
    clients: u32,
    counting: crate::counter::Counting,
) -> CountShape {
    let d = defaults(engine);
    let server = !engine.embedded();
    CountShape {
        load_secs: load_secs(suite, clients, &d),
        postwrites: if server { postwrites(suite) } else { 0 },
        postwrite_budget_secs: suite.postwrite_budget.as_secs_f64(),
        steps: suite.steps.iter().filter(|s| !s.warm).count() as u32,
        passes: counting.passes,
        starts: counting.starts.clamp(1, counting.passes.max(1)),
        drops_first: engine.drops_first_pair(),
    }
}

/// The wall time of cells of `secs` run `jobs` at once, longest first, each to the worker
/// free first (the counting cells; the run's clock counts them as one step).
pub fn pool_wall(secs: &[f64], jobs: usize) -> f64 {
    let mut sorted = secs.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let mut workers = vec![0.0_f64; jobs.max(1)];
    for s in sorted {
        let first = (workers.iter_mut()).min_by(|a, b| a.total_cmp(b));
        if let Some(w) = first {
            *w += s;
        }
    }
    workers.into_iter().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, demo_lab, plan};

    /// The plan of `lab` (with `--instructions` when asked).
    fn planned(lab: &str, instructions: bool) -> RunPlan {
        let lab = crate::plan::lab::parse(lab, "<test>", std::path::Path::new(".")).unwrap();
        let opts = RunOptions {
            instructions,
            ..RunOptions::default()
        };
        plan(lab, &opts).unwrap()
    }

    /// Two PostgreSQL targets, 2 repeats of 2 steps of 5 s with a 1 s warm-up, 100,000 rows.
    const PG_LAB: &str = r#"
[lab]
name = "pg"
repeats = 2
only = ["point-query", "update-index"]
[[target]]
name = "a"
engine = "postgres"
[[target]]
name = "b"
engine = "postgres"
settings = ["shared_buffers = '256MB'"]
[suite.sysbench]
tables = 1
rows = 100_000
read_secs = 5
write_secs = 5
warmup_secs = 1
"#;

    fn stored(engine: &str, phases: CellPhases) -> StoredPhases {
        StoredPhases {
            engine: engine.into(),
            suite: "sysbench".into(),
            phases,
        }
    }

    #[test]
    fn counting_cells_share_the_workers_longest_first() {
        assert_eq!(pool_wall(&[10.0, 10.0, 10.0], 1), 30.0);
        assert_eq!(pool_wall(&[10.0, 10.0, 10.0], 2), 20.0);
        assert_eq!(pool_wall(&[30.0, 10.0, 10.0, 10.0], 2), 30.0);
        assert_eq!(pool_wall(&[], 4), 0.0);
    }

    /// Each timed cell is its server, load, settles (postwrites with their budget and the idle
    /// probe) and steps; SQLite has no server to start, settle or probe.
    #[test]
    fn a_cell_is_the_sum_of_its_phases() {
        let p = planned(PG_LAB, false);
        let e = estimate(&p, &Calibration::default());
        let d = defaults(EngineKind::parse("postgres").unwrap());
        assert_eq!(e.cells.len(), 4);
        let suite = &p.suites[0];
        let budget = suite.postwrite_budget.as_secs_f64();
        assert_eq!(budget, 60.0, "the settle after the load");
        let pw = postwrites(suite);
        assert!(pw >= 1, "{pw}");
        let steps: f64 = (suite.steps.iter())
            .map(|s| (s.warmup + s.expected).as_secs_f64() + d.step_extra_secs)
            .sum();
        let cell = d.server_secs
            + 100_000.0 / d.load_rows_per_sec
            + f64::from(pw) * (budget + d.postwrite_extra_secs)
            + crate::sampler::IDLE_PROBE.as_secs_f64()
            + steps;
        for c in &e.cells {
            assert!((c.secs - cell).abs() < 1e-9, "{} vs {cell}", c.secs);
        }
        assert!((e.parts.total() - 4.0 * cell).abs() < 1e-9);
        assert!(e.parts.settles > 4.0 * 60.0, "{:?}", e.parts);
        let demo = estimate(&planned(demo_lab(), false), &Calibration::default());
        assert_eq!(demo.parts.settles, 0.0);
        assert!(demo.parts.servers < 1.0, "{:?}", demo.parts);
        assert_eq!(demo.cells.len(), 6);
    }

    /// `--instructions` adds one counting cell per target × suite, run `count_jobs` at once.
    #[test]
    fn counting_cells_are_estimated_per_target() {
        let mut p = planned(PG_LAB, true);
        let one = estimate(&planned(PG_LAB, false), &Calibration::default());
        p.instructions = Some(crate::counter::Counting {
            jobs: 1,
            ..Default::default()
        });
        let e = estimate(&p, &Calibration::default());
        let counting: Vec<&CellEstimate> = e.cells.iter().filter(|c| c.counting).collect();
        assert_eq!(counting.len(), 2);
        assert!(counting.iter().all(|c| c.cell.repeat == 0));
        let shape = count_shape(
            EngineKind::parse("postgres").unwrap(),
            &p.suites[0],
            1,
            crate::counter::Counting::default(),
        );
        assert_eq!(shape.steps, 2);
        let each = counting_secs(
            &defaults(EngineKind::parse("postgres").unwrap()),
            &shape,
            1.0,
        );
        assert!((e.parts.counting - 2.0 * each).abs() < 1e-9);
        assert!((e.parts.total() - one.parts.total() - 2.0 * each).abs() < 1e-9);
        p.instructions = Some(crate::counter::Counting {
            jobs: 2,
            ..Default::default()
        });
        assert!((estimate(&p, &Calibration::default()).parts.counting - each).abs() < 1e-9);
    }

    /// What the store measured replaces each default it covers (means over the stored cells),
    /// and the estimate says so.
    #[test]
    fn stored_phases_calibrate_the_defaults() {
        let timed = |server: f64, postwrite: f64| CellPhases {
            secs: 100.0,
            server_secs: server,
            load_secs: 10.0,
            rows: 100_000,
            postwrite_secs: postwrite,
            postwrites: 1,
            postwrite_budget_secs: 60.0,
            steps: 4,
            steps_secs: 26.0,
            planned_steps_secs: 24.0,
            ..Default::default()
        };
        let p = planned(PG_LAB, true);
        let shape = count_shape(
            EngineKind::parse("postgres").unwrap(),
            &p.suites[0],
            1,
            crate::counter::Counting::default(),
        );
        let model = counting_secs(
            &defaults(EngineKind::parse("postgres").unwrap()),
            &shape,
            1.0,
        );
        let work = model - f64::from(shape.starts * shape.postwrites) * shape.postwrite_budget_secs;
        let counted = CellPhases {
            secs: model + work, // twice the defaults' work, the same budgets
            counting: true,
            load_secs: shape.load_secs,
            postwrites: shape.postwrites,
            postwrite_budget_secs: shape.postwrite_budget_secs,
            steps: shape.steps,
            passes: 3,
            starts: shape.starts,
            ..Default::default()
        };
        let cal = Calibration::from_stored(&[
            stored("postgres", timed(4.0, 61.0)),
            stored("postgres", timed(6.0, 63.0)),
            stored("postgres", counted),
            stored("nosuchengine", timed(1.0, 1.0)),
        ]);
        assert_eq!(cal.cells, 3);
        let (d, measured) = cal.for_engine(EngineKind::parse("postgres").unwrap(), "sysbench");
        assert!(measured);
        assert_eq!(d.server_secs, 5.0);
        assert_eq!(d.postwrite_extra_secs, 2.0);
        assert_eq!(d.step_extra_secs, 0.5);
        assert_eq!(d.load_rows_per_sec, 10_000.0);
        assert!(
            (cal.counting_factor(EngineKind::parse("postgres").unwrap(), "sysbench")
                .unwrap()
                - 2.0)
                .abs()
                < 1e-9
        );
        // Another engine keeps its defaults.
        let (s, measured) = cal.for_engine(EngineKind::parse("sqlite").unwrap(), "sysbench");
        assert!(!measured);
        assert_eq!(s, defaults(EngineKind::parse("sqlite").unwrap()));
        let e = estimate(&p, &cal);
        let text = e.describe(&p);
        assert!(text.contains("calibrated by 3 cell(s)"), "{text}");
        assert!(text.contains("postgres sysbench counting"), "{text}");
        let plain = estimate(&p, &Calibration::default()).describe(&p);
        assert!(plain.contains("from the defaults"), "{plain}");
    }
}
