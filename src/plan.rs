//! The run plan: a validated lab plus the command line's overrides, ready to execute.
//!
//! Owns `--quick` scaling, `--clients`/`--repeats` overrides, `--only`/`--skip` step selection,
//! the execution order of target × clients × repeat cells (interleaved or sequential), and the
//! built-in demo lab. Every check here fails with an [`InputError`] before anything is written.
//! Must not: start servers, open the store or touch the work directory.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::EngineKind;
use crate::error::InputError;
use crate::lab::{Lab, Order};
use crate::workload::{DurationRule, Scale, StepDef, sysbench};

/// The lab `dbdelta run` uses when given none: embedded SQLite, two targets that differ by one
/// setting, sized to finish in about two minutes.
pub const DEMO_LAB: &str = r#"# dbdelta's built-in demo: what does synchronous=NORMAL buy over FULL in WAL mode?
[lab]
name = "demo: SQLite WAL, synchronous=FULL vs NORMAL"
repeats = 1
clients = [1]

[[target]]
name = "sqlite.sync-full"
engine = "sqlite"
settings = ["journal_mode = WAL", "synchronous = FULL"]

[[target]]
name = "sqlite.sync-normal"
engine = "sqlite"
settings = ["journal_mode = WAL", "synchronous = NORMAL"]

[suite.sysbench]
tables = 1
rows = 100_000
read_secs = 7
write_secs = 7
warmup_secs = 2
"#;

/// Command-line choices that shape a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub quick: bool,
    pub only: Vec<String>,
    pub skip: Vec<String>,
    /// `--clients 1,4,16` as typed.
    pub clients: Option<String>,
    pub repeats: Option<u32>,
    pub keep: bool,
    pub workdir: PathBuf,
}

/// One target as the runner needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetPlan {
    pub name: String,
    pub engine: EngineKind,
    /// Engine settings, one per line (SQLite PRAGMAs; server config-file lines).
    pub settings: Vec<String>,
    /// Directory holding the server binaries (`bin = ...`); `None`: Debian's install.
    pub bin: Option<PathBuf>,
    /// Environment of the server process.
    pub env: std::collections::BTreeMap<String, String>,
    /// Extra command-line arguments of the server.
    pub args: Vec<String>,
    /// PostgreSQL version to fetch; `bin` is set once it is in the cache.
    pub version: Option<String>,
    /// Fixed loopback port (default: a free one).
    pub port: Option<u16>,
    pub config_name: Option<String>,
    /// Server-side prepared statements (the suite's `prepared`).
    pub prepared: bool,
}

/// One unit of execution: a target's whole lifecycle at one client count and repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub target: usize,
    pub clients: u32,
    pub repeat: u32,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub lab: Lab,
    pub targets: Vec<TargetPlan>,
    pub clients: Vec<u32>,
    pub repeats: u32,
    pub order: Order,
    pub steps: Vec<&'static StepDef>,
    pub scale: Scale,
    pub warmup: Duration,
    pub read: Duration,
    pub write: Duration,
    /// Time a postwrite cleanup may take: min(60 s + 1 s per million rows, 1200 s)
    /// (methodology §2.6); 1 s with `--quick`.
    pub postwrite_budget: Duration,
    pub quick: bool,
    pub keep: bool,
    pub workdir: PathBuf,
}

/// Parse `--clients 1,4,16`.
pub fn parse_clients(text: &str) -> Result<Vec<u32>, InputError> {
    let bad = || {
        InputError::new(format!(
            "--clients {text}: expected a comma-separated list of client counts ≥ 1, e.g. --clients 1,4"
        ))
    };
    let list: Vec<u32> = text
        .split(',')
        .map(|s| s.trim().parse::<u32>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if list.is_empty() || list.iter().any(|&c| c == 0 || c > 10_000) {
        return Err(bad());
    }
    Ok(list)
}

fn select_steps(only: &[String], skip: &[String]) -> Result<Vec<&'static StepDef>, InputError> {
    let compile = |flag: &str, pats: &[String]| -> Result<Vec<glob::Pattern>, InputError> {
        pats.iter()
            .map(|p| {
                let pat = glob::Pattern::new(p).map_err(|e| {
                    InputError::new(format!("--{flag} {p}: not a valid glob ({e})"))
                })?;
                if !sysbench::CATALOG.iter().any(|s| pat.matches(s.label)) {
                    return Err(InputError::new(format!(
                        "--{flag} {p}: matches no step; `dbdelta list steps` shows the catalog"
                    )));
                }
                Ok(pat)
            })
            .collect()
    };
    let only = compile("only", only)?;
    let skip = compile("skip", skip)?;
    let steps: Vec<_> = sysbench::CATALOG
        .iter()
        .filter(|s| only.is_empty() || only.iter().any(|p| p.matches(s.label)))
        .filter(|s| !skip.iter().any(|p| p.matches(s.label)))
        .collect();
    if steps.is_empty() {
        return Err(InputError::new(
            "--only/--skip leave no step to run; loosen them",
        ));
    }
    Ok(steps)
}

/// Combine a lab and the command line into a plan.
pub fn plan(lab: Lab, opts: &RunOptions) -> Result<RunPlan, InputError> {
    let clients = match &opts.clients {
        Some(text) => parse_clients(text)?,
        None => lab.clients.clone(),
    };
    let repeats = match opts.repeats {
        Some(0) => {
            return Err(InputError::new(
                "--repeats 0: a run needs at least one repeat",
            ));
        }
        Some(r) => r,
        None => lab.repeats,
    };
    let steps = select_steps(&opts.only, &opts.skip)?;
    let sb = &lab.sysbench;
    let secs = Duration::from_secs_f64;
    let (scale, warmup, read, write) = if opts.quick {
        (
            Scale {
                tables: 1,
                rows: sb.rows.min(10_000),
            },
            secs(sb.warmup_secs.min(0.5)),
            secs(sb.read_secs.min(1.5)),
            secs(sb.write_secs.min(1.5)),
        )
    } else {
        (
            Scale {
                tables: sb.tables,
                rows: sb.rows,
            },
            secs(sb.warmup_secs),
            secs(sb.read_secs),
            secs(sb.write_secs),
        )
    };
    let targets = lab
        .targets
        .iter()
        .map(|t| TargetPlan {
            name: t.name.clone(),
            engine: t.engine,
            settings: t.settings.clone(),
            bin: t.bin.clone(),
            env: t.env.clone(),
            args: t.args.clone(),
            version: t.version.clone(),
            port: t.port,
            config_name: t.config_name.clone(),
            prepared: sb.prepared,
        })
        .collect();
    let total_rows = scale.rows * u64::from(scale.tables);
    let postwrite_budget = match (sb.postwrite_secs, opts.quick) {
        (Some(s), quick) => secs(if quick { s.min(1.0) } else { s }),
        (None, true) => Duration::from_secs(1),
        (None, false) => Duration::from_secs((60 + total_rows / 1_000_000).min(1200)),
    };
    Ok(RunPlan {
        postwrite_budget,
        order: lab.order,
        targets,
        clients,
        repeats,
        steps,
        scale,
        warmup,
        read,
        write,
        quick: opts.quick,
        keep: opts.keep,
        workdir: opts.workdir.clone(),
        lab,
    })
}

impl RunPlan {
    /// The cells in execution order: per client count, targets interleaved per repeat
    /// (A B A B) or sequential (A A B B).
    pub fn cells(&self) -> Vec<Cell> {
        let mut out = Vec::new();
        for &clients in &self.clients {
            match self.order {
                Order::Interleaved => {
                    for repeat in 1..=self.repeats {
                        for target in 0..self.targets.len() {
                            out.push(Cell {
                                target,
                                clients,
                                repeat,
                            });
                        }
                    }
                }
                Order::Sequential => {
                    for target in 0..self.targets.len() {
                        for repeat in 1..=self.repeats {
                            out.push(Cell {
                                target,
                                clients,
                                repeat,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Measured duration of a step.
    pub fn duration_of(&self, step: &StepDef) -> Duration {
        match step.duration {
            DurationRule::Read => self.read,
            DurationRule::Write => self.write,
        }
    }

    /// Lower bound of the run's wall time: warm-up plus measured time of every step.
    pub fn estimated(&self) -> Duration {
        let per_cell: Duration = self
            .steps
            .iter()
            .map(|s| self.warmup + self.duration_of(s))
            .sum();
        per_cell * self.cells().len() as u32
    }

    /// What `--dry-run` prints.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "lab: {} ({})", self.lab.name, self.lab.origin);
        let _ = writeln!(
            s,
            "scale: {} table(s) × {} rows; warm-up {:.1} s, reads {:.1} s, writes {:.1} s{}",
            self.scale.tables,
            self.scale.rows,
            self.warmup.as_secs_f64(),
            self.read.as_secs_f64(),
            self.write.as_secs_f64(),
            if self.quick { " (--quick)" } else { "" }
        );
        for t in &self.targets {
            let _ = writeln!(
                s,
                "target {}: {} settings [{}]",
                t.name,
                t.engine.name(),
                t.settings
                    .iter()
                    .map(|l| l.trim())
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        let _ = writeln!(
            s,
            "steps: {}",
            self.steps
                .iter()
                .map(|st| st.label)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let order: Vec<String> = self
            .cells()
            .iter()
            .map(|c| {
                format!(
                    "{}@c{}r{}",
                    self.targets[c.target].name, c.clients, c.repeat
                )
            })
            .collect();
        let _ = writeln!(s, "order: {}", order.join(" → "));
        let _ = writeln!(
            s,
            "estimated time: at least {:.0} s",
            self.estimated().as_secs_f64()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn demo() -> Lab {
        crate::lab::parse(DEMO_LAB, "<built-in demo>", Path::new(".")).unwrap()
    }

    #[test]
    fn demo_lab_fits_in_about_two_minutes() {
        let p = plan(demo(), &RunOptions::default()).unwrap();
        assert_eq!(p.targets.len(), 2);
        let est = p.estimated().as_secs();
        assert!((90..=120).contains(&est), "{est}");
        let q = plan(
            demo(),
            &RunOptions {
                quick: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(q.estimated().as_secs() <= 25, "{:?}", q.estimated());
    }

    #[test]
    fn clients_flag_is_validated() {
        assert_eq!(parse_clients("1, 4,16").unwrap(), vec![1, 4, 16]);
        for bad in ["0", "1,,2", "x", "-1", ""] {
            let e = parse_clients(bad).unwrap_err().0;
            assert!(e.starts_with(&format!("--clients {bad}:")), "{e}");
        }
    }

    #[test]
    fn cells_interleave_targets() {
        let mut lab = demo();
        lab.repeats = 2;
        let p = plan(lab.clone(), &RunOptions::default()).unwrap();
        let order: Vec<_> = p.cells().iter().map(|c| (c.target, c.repeat)).collect();
        assert_eq!(order, vec![(0, 1), (1, 1), (0, 2), (1, 2)]);
        lab.order = Order::Sequential;
        let p = plan(lab, &RunOptions::default()).unwrap();
        let order: Vec<_> = p.cells().iter().map(|c| (c.target, c.repeat)).collect();
        assert_eq!(order, vec![(0, 1), (0, 2), (1, 1), (1, 2)]);
    }

    #[test]
    fn only_and_skip_select_steps() {
        let opts = RunOptions {
            only: vec!["point-*".into(), "insert".into()],
            ..Default::default()
        };
        let p = plan(demo(), &opts).unwrap();
        let labels: Vec<_> = p.steps.iter().map(|s| s.label).collect();
        assert_eq!(labels, vec!["point-query", "insert"]);
        let e = plan(
            demo(),
            &RunOptions {
                only: vec!["nope*".into()],
                ..Default::default()
            },
        );
        assert!(e.unwrap_err().0.contains("matches no step"));
    }
}
