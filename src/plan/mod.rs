//! The run plan: a validated lab plus the command line's overrides, ready to execute. The
//! pipeline is lab ([`lab`]) → [`RunPlan`] ([`plan`]) → [`PreparedPlan`] ([`prepare`]: fetches
//! and builds resolved) → the runner; nothing changes a plan once it is built, and it keeps
//! only what it needs of the lab ([`LabInfo`], the targets, the suites' settings).
//!
//! Owns `--clients`/`--repeats`/`--cell` overrides, CPU placement resolved on this machine,
//! asking each suite of the lab for its `--quick`-scaled settings and for the steps
//! `--only`/`--skip` choose (through [`crate::suites`]; no suite is named here), the execution
//! order of target × clients × repeat cells (interleaved or sequential), `--dry-run`'s text and
//! the built-in demo lab. Every check here fails with an [`InputError`] before anything is
//! written. Must not: start servers, open the store, touch the work directory, or know any
//! suite's keys or steps.

pub mod estimate;
pub mod k8s;
pub mod lab;
pub mod preflight;
mod prepare;
pub mod resume;
pub mod stored_settings;
pub mod sweep;
pub mod template;

pub use prepare::{PreparedPlan, describe_fetches, prepare};

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cpus::{self, Machine, Placement};
use crate::engine::EngineKind;
use crate::error::InputError;
use crate::plan::lab::{AutoRepeats, Lab, LabTarget, Order};
use crate::profiler::ProfileSettings;
use crate::range;
use crate::suites::{Selection, SuiteSettings};
use crate::workload::{StepPlan, SuitePlan};

/// The lab `dbdelta run` uses when given none: the registry's first family's demo
/// ([`crate::engine::Family::demo_lab`]).
pub fn demo_lab() -> &'static str {
    (crate::engine::families::registry().into_iter())
        .find_map(|f| f.demo_lab())
        .unwrap_or_default()
}

/// Command-line choices that shape a run (stored with it as JSON, so `--resume` plans again
/// with the same ones).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RunOptions {
    pub quick: bool,
    pub only: Vec<String>,
    pub skip: Vec<String>,
    /// `--clients 1,4,16` as typed.
    pub clients: Option<String>,
    pub repeats: Option<u32>,
    pub keep: bool,
    pub workdir: PathBuf,
    /// `--profile`: CPU profiles of every measured step (with the lab's `profile_*` settings).
    pub profile: bool,
    /// `--rows N`: rows per table of the sysbench suite (over the lab's and `--quick`'s).
    pub rows: Option<u64>,
    /// `--tables N`: tables of the sysbench suite.
    pub tables: Option<u32>,
    /// `--time SECS`: the measured length of every step with a set length (sysbench's reads
    /// and writes, the Insert Benchmark's query steps, LinkBench's requests).
    pub time: Option<f64>,
    /// `--cell TARGET:CLIENTS:REPEAT` as typed: run only that cell of the plan.
    pub cell: Option<String>,
    /// `--instructions`: a counting pass per target (with the lab's `instruction_passes`).
    pub instructions: bool,
    /// `--reuse-load`: start each cell from a saved load when one matches (as the lab's
    /// `reuse_load = true`).
    pub reuse_load: bool,
    /// `--snapshots DIR`: where saved loads live (default: `<workdir>/snapshots`).
    pub snapshots: Option<PathBuf>,
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
    /// Version to fetch; `bin` is set once it is in the cache.
    pub version: Option<String>,
    /// Whose builds `version` fetches.
    pub product: Option<crate::provision::Product>,
    /// What the suite's CREATE statements add (MySQL/MariaDB).
    pub tables: crate::engine::TableDdl,
    /// Fixed loopback port (default: a free one).
    pub port: Option<u16>,
    pub config_name: Option<String>,
    /// Where the server and the client threads run (resolved against this machine's CPUs).
    pub placement: Placement,
    /// What to compile for this target before the run (`bin` or `library` is set once built).
    pub build: Option<crate::provision::build::BuildRequest>,
    /// SQLite: the shared library to open instead of the bundled one.
    pub library: Option<PathBuf>,
    /// How the target's build was compiled, once it is (recorded with the run).
    pub built: Option<crate::results::BuildInfo>,
    /// Why the target cannot run (its build failed): its cells are recorded as failed, the
    /// other targets run.
    pub broken: Option<BrokenTarget>,
    /// An already running server (`connect`): nothing to start, pin or stop.
    pub connect: Option<crate::engine::connect::ConnectUrl>,
    /// The host the server runs on (`host = "ssh://…"`), when it is not this one.
    pub remote: Option<crate::engine::remote::RemoteHost>,
    /// The sweep (`versions` in the lab) this target is one release of; its targets stand in
    /// release order.
    pub sweep: Option<String>,
}

/// A target that failed before its first cell.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenTarget {
    pub error: String,
    pub log: Option<PathBuf>,
}

impl TargetPlan {
    /// The product as reports name it (`mariadb` for MariaDB, which shares the `mysql`
    /// engine): from the fetched product, the build's recipe, or the server binary (Debian's
    /// install is MariaDB's `mariadbd`); `mysql` when none tells (a running server or another
    /// host: the report names it from its version), with `(myrocks)` as reports add it.
    pub fn product_name(&self) -> &'static str {
        let fetched = self.product.map(|p| p.id);
        let built = self.build.as_ref().map(|b| b.engine.name());
        (self.engine.family()).product_name(&self.spec(true), fetched, built)
    }

    /// What the engine needs to start this target, with the suite's `prepared`.
    pub fn spec(&self, prepared: bool) -> crate::engine::TargetSpec {
        crate::engine::TargetSpec {
            name: self.name.clone(),
            engine: self.engine,
            settings: self.settings.clone(),
            bin: self.bin.clone(),
            version: self.version.clone(),
            env: self.env.clone(),
            args: self.args.clone(),
            port: self.port,
            prepared,
            server_cpus: self.placement.server.clone(),
            tables: self.tables.clone(),
            library: self.library.clone(),
            connect: self.connect.clone(),
            remote: self.remote.clone(),
            listen: None,
            wrap: Vec::new(),
            counting: false,
            restored: false,
        }
    }
}

/// One unit of execution: a target's whole lifecycle at one client count and repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub target: usize,
    pub clients: u32,
    pub repeat: u32,
}

/// What a plan keeps of its lab file: its name and text (stored with the run, sent to a
/// remote agent, mounted into Kubernetes pods), where it came from, its verdict threshold, and
/// where it names CPUs of this host (which `--emit k8s` refuses).
#[derive(Debug, Clone, PartialEq)]
pub struct LabInfo {
    pub name: String,
    pub text: String,
    pub origin: String,
    pub min_effect: f64,
    /// `origin:line: [section] key` of the first `server_cpus`/`client_cpus` list.
    pub cpu_lists_at: Option<String>,
    /// The lab's `secret_env`: more environment names whose values are never shown or stored.
    pub secret_env: Vec<String>,
}

impl LabInfo {
    fn of(lab: &Lab) -> LabInfo {
        LabInfo {
            name: lab.name.clone(),
            text: lab.text.clone(),
            origin: lab.origin.clone(),
            min_effect: lab.min_effect,
            cpu_lists_at: lab.cpu_lists_at().map(str::to_string),
            secret_env: lab.secret_env.clone(),
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// What the run keeps of the lab besides its targets and suites.
    pub lab: LabInfo,
    pub targets: Vec<TargetPlan>,
    pub clients: Vec<u32>,
    /// Repeats of every cell (with `auto`, the first rounds).
    pub repeats: u32,
    /// `repeats = "auto"`: extra rounds for the undecided steps, up to a bound.
    pub auto: Option<AutoRepeats>,
    pub order: Order,
    /// The suites to run, each with its steps in run order (reported steps and, unless
    /// `--only` was given, the warm steps; the `.pre` steps only with `pre = true`). A suite
    /// left without a step is not in the list. Each runs on its own fresh data directory.
    pub suites: Vec<SuitePlan>,
    /// Every suite of the lab after `--quick` scaling, in the registry's order (also one that
    /// `--only`/`--skip` left without a step: the disk estimate and `--resume` count it).
    pub settings: Vec<Arc<dyn SuiteSettings>>,
    /// The CPUs dbdelta may use (placement was resolved against them).
    pub machine: Machine,
    pub quick: bool,
    pub keep: bool,
    pub workdir: PathBuf,
    /// CPU profiles of every measured (non-warm) step: the lab's `profile` or `--profile`.
    pub profile: Option<ProfileSettings>,
    /// A counting pass per target × suite after the timed cells: instructions per op.
    pub instructions: Option<crate::counter::Counting>,
    /// `--cell`: the one cell to run (a Kubernetes Job runs one); `None`: every cell.
    pub only_cell: Option<Cell>,
    /// `reuse_load`/`--reuse-load`: the directory of saved loads; `None`: every cell loads.
    pub reuse_load: Option<PathBuf>,
}

/// Where saved loads live when the lab or the command line asks to reuse them: `--snapshots`,
/// else `<workdir>/snapshots`. Only targets whose server starts here can be saved: a
/// `connect` or `host` target is bad input.
fn reuse_load(
    lab: &Lab,
    targets: &[TargetPlan],
    opts: &RunOptions,
) -> Result<Option<PathBuf>, InputError> {
    if !(lab.reuse_load || opts.reuse_load) {
        return Ok(None);
    }
    let elsewhere = targets
        .iter()
        .find(|t| t.connect.is_some() || t.remote.is_some());
    if let Some(t) = elsewhere {
        return Err(InputError::new(format!(
            "target {}: reuse_load (--reuse-load) needs a server dbdelta starts on this host; a `connect` or `host` target's data cannot be saved: drop reuse_load or the target",
            t.name
        )));
    }
    Ok(Some(
        (opts.snapshots.clone()).unwrap_or_else(|| opts.workdir.join("snapshots")),
    ))
}

/// Parse `--clients 1,4,16`.
pub fn parse_clients(text: &str) -> Result<Vec<u32>, InputError> {
    let bad = || {
        InputError::new(format!(
            "--clients {text}: expected a comma-separated list of client counts {}, e.g. --clients 1,4",
            range::CLIENTS.words()
        ))
    };
    text.split(',')
        .map(|s| (s.trim().parse::<i64>().ok()).and_then(|c| range::CLIENTS.get(c)))
        .map(|c| c.ok_or_else(bad))
        .collect()
}

/// Parse `--cell TARGET:CLIENTS:REPEAT` against the plan's targets, client counts and repeats
/// (target names hold no `:`).
fn parse_cell(
    text: &str,
    targets: &[TargetPlan],
    clients: &[u32],
    repeats: u32,
) -> Result<Cell, InputError> {
    let bad = |why: String| InputError::new(format!("--cell {text}: {why}"));
    let parts: Vec<&str> = text.split(':').collect();
    let [name, c, r] = parts[..] else {
        return Err(bad(
            "expected TARGET:CLIENTS:REPEAT, e.g. --cell pg17:4:2".into()
        ));
    };
    let target = (targets.iter().position(|t| t.name == name)).ok_or_else(|| {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        bad(format!(
            "the lab has no target {name}; use one of {}",
            names.join(", ")
        ))
    })?;
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let clients = (c.parse::<u32>().ok())
        .filter(|n| clients.contains(n))
        .ok_or_else(|| {
            bad(format!(
                "{c} is not a planned client count; use one of {} (or change --clients)",
                list(clients)
            ))
        })?;
    let repeat = (r.parse::<u32>().ok())
        .filter(|n| (1..=repeats).contains(n))
        .ok_or_else(|| bad(format!("repeat {r} is not in 1..={repeats}")))?;
    Ok(Cell {
        target,
        clients,
        repeat,
    })
}

/// The suites the lab runs with the steps `--only`/`--skip` choose, else the lab's `only` and
/// `skip` (over the labels of every suite of the lab); bad input when a pattern matches
/// nothing or no step is left.
fn suites(
    settings: &[Arc<dyn SuiteSettings>],
    opts: &RunOptions,
    lab: &Lab,
) -> Result<Vec<SuitePlan>, InputError> {
    let catalog: Vec<_> = settings.iter().flat_map(|s| s.catalog()).collect();
    let pre = settings.iter().any(|s| s.pre());
    let (only, only_lab) = match opts.only.is_empty() {
        true => (&lab.only, true),
        false => (&opts.only, false),
    };
    let (skip, skip_lab) = match opts.skip.is_empty() {
        true => (&lab.skip, true),
        false => (&opts.skip, false),
    };
    let selection = Selection::new(only, skip, &catalog, pre).map_err(|e| {
        // Name the lab key, not the flag, when the pattern came from the lab.
        let mut msg = e.0;
        for (from_lab, key) in [(only_lab, "only"), (skip_lab, "skip")] {
            if let Some(rest) = msg.strip_prefix(&format!("--{key} ")).filter(|_| from_lab) {
                msg = format!("{}: [lab] {key} {rest}", lab.origin);
            }
        }
        InputError::new(msg)
    })?;
    let mut suites: Vec<SuitePlan> = Vec::new();
    for s in settings {
        suites.extend(s.plan(&selection)?);
    }
    if suites.is_empty() {
        return Err(InputError::new(
            "--only/--skip leave no step to run; loosen them",
        ));
    }
    Ok(suites)
}

/// A lab target with its CPU placement resolved on `machine` (its own keys, else the lab's).
fn target_plan(t: &LabTarget, lab: &Lab, machine: &Machine) -> Result<TargetPlan, InputError> {
    let spec = t.placement.as_ref().unwrap_or(&lab.placement);
    let mut placement =
        cpus::resolve(spec, machine, t.engine.embedded()).map_err(InputError::new)?;
    if t.connect.is_some() || t.remote.is_some() {
        // A running server is not ours to pin, and a remote one runs on CPUs this machine
        // does not have; the client threads here still are.
        placement.server = None;
    }
    Ok(TargetPlan {
        name: t.name.clone(),
        engine: t.engine,
        settings: t.settings.clone(),
        bin: t.bin.clone(),
        env: t.env.clone(),
        args: t.args.clone(),
        version: t.version.clone(),
        product: t.product,
        tables: t.tables.clone(),
        port: t.port,
        config_name: t.config_name.clone(),
        placement,
        build: t.build.clone(),
        library: t.library.clone(),
        built: None,
        broken: None,
        connect: t.connect.clone(),
        remote: t.remote.clone(),
        sweep: t.sweep.clone(),
    })
}

/// What `--dry-run` says of a target's build: cached, or to be built and roughly how long.
fn describe_build(b: &crate::provision::build::BuildRequest) -> String {
    use crate::provision::build;
    match build::lookup(b) {
        Ok(Some(done)) => format!("cached: build {} in {}", b.describe(), done.info.dir),
        Ok(None) => format!(
            "not cached: will build {} (about {})",
            b.describe(),
            crate::progress::duration(Duration::from_secs_f64(build::estimate_secs(b)))
        ),
        Err(e) => format!(
            "not cached: will build {} (about {}; {e:#})",
            b.describe(),
            crate::progress::duration(Duration::from_secs_f64(build::estimate_secs(b)))
        ),
    }
}

/// `--rows`, `--tables` and `--time` within the ranges of `crate::range`.
fn scale_flags(opts: &RunOptions) -> Result<crate::suites::ScaleFlags, InputError> {
    if let Some(r) = opts.rows
        && i64::try_from(r).map_or(true, |r| !range::ROWS.contains(r))
    {
        return Err(InputError::new(format!(
            "--rows {r}: give rows per table {} (the hot-points and range steps need 200)",
            range::ROWS.words()
        )));
    }
    if let Some(t) = opts.tables
        && !range::TABLES.contains(t.into())
    {
        return Err(InputError::new(format!(
            "--tables {t}: give a number of tables {}",
            range::TABLES.words()
        )));
    }
    if let Some(t) = opts.time {
        range::STEP_SECS
            .check("--time", t)
            .map_err(|e| InputError::new(format!("--time {}: {e}", range::shown(t))))?;
    }
    Ok(crate::suites::ScaleFlags {
        rows: opts.rows,
        tables: opts.tables,
        time: opts.time,
    })
}

/// Refuse a plan of more than [`range::MAX_CELLS`] cells, before any is allocated.
fn check_cells(targets: usize, clients: usize, repeats: u32) -> Result<(), InputError> {
    let cells = (targets as u64)
        .saturating_mul(clients as u64)
        .saturating_mul(repeats.into());
    if cells <= range::MAX_CELLS {
        return Ok(());
    }
    Err(InputError::new(format!(
        "the plan has {cells} cells ({targets} targets × {clients} client counts × {repeats} repeats), at most {} are allowed: lower repeats (--repeats), the client counts (--clients) or the targets",
        range::MAX_CELLS
    )))
}

/// Combine a lab and the command line into a plan, on this machine's CPUs.
pub fn plan(lab: Lab, opts: &RunOptions) -> Result<RunPlan, InputError> {
    plan_on(lab, opts, crate::host::machine())
}

/// [`plan`] with the CPUs to resolve placement against; a sweep (`versions`) asks the
/// registries which builds exist.
pub fn plan_on(lab: Lab, opts: &RunOptions, machine: Machine) -> Result<RunPlan, InputError> {
    plan_listed(lab, opts, machine, &sweep::registry_listing)
}

/// [`plan_on`] with the listing a sweep expands from (tests hand in a fixed one).
pub fn plan_listed(
    mut lab: Lab,
    opts: &RunOptions,
    machine: Machine,
    listing: sweep::Listing<'_>,
) -> Result<RunPlan, InputError> {
    sweep::expand(&mut lab, listing)?;
    let clients = match &opts.clients {
        Some(text) => parse_clients(text)?,
        None => lab.clients.clone(),
    };
    let repeats = match opts.repeats {
        Some(r) if !range::REPEATS.contains(r.into()) => {
            return Err(InputError::new(format!(
                "--repeats {r}: give a whole number {}",
                range::REPEATS.words()
            )));
        }
        Some(r) => r,
        None => lab.repeats,
    };
    // `--repeats N` (and `--cell`, one Job's cell) run a fixed number of repeats.
    let auto = lab
        .auto
        .filter(|_| opts.repeats.is_none() && opts.cell.is_none());
    let flags = scale_flags(opts)?;
    let settings = (lab.suites.iter())
        .map(|s| s.scaled(opts.quick, &flags))
        .collect::<Result<Vec<_>, String>>()
        .map_err(InputError::new)?;
    let suites = suites(&settings, opts, &lab)?;
    let targets = (lab.targets.iter())
        .map(|t| target_plan(t, &lab, &machine))
        .collect::<Result<Vec<_>, InputError>>()?;
    check_cells(
        targets.len(),
        clients.len(),
        auto.map_or(repeats, |a| a.max),
    )?;
    let only_cell = (opts.cell.as_deref())
        .map(|c| parse_cell(c, &targets, &clients, repeats))
        .transpose()?;
    let reuse_load = reuse_load(&lab, &targets, opts)?;
    Ok(RunPlan {
        order: lab.order,
        targets,
        clients,
        repeats,
        auto,
        suites,
        settings,
        machine,
        quick: opts.quick,
        keep: opts.keep,
        workdir: opts.workdir.clone(),
        profile: lab
            .profile
            .or_else(|| opts.profile.then(ProfileSettings::default)),
        instructions: instructions(&lab, opts)?,
        only_cell,
        reuse_load,
        lab: LabInfo::of(&lab),
    })
}

/// The counting: the lab's, or `--instructions` with the lab's `instruction_passes` and
/// `count_jobs` (the flag and `instructions = true` are one switch); those keys with neither
/// would be ignored, so they are bad input.
fn instructions(
    lab: &Lab,
    opts: &RunOptions,
) -> Result<Option<crate::counter::Counting>, InputError> {
    match (lab.instructions, &lab.counting_keys, opts.instructions) {
        (Some(c), _, _) => Ok(Some(c)),
        (None, Some((c, _)), true) => Ok(Some(*c)),
        (None, None, on) => Ok(on.then(crate::counter::Counting::default)),
        (None, Some((_, at)), false) => Err(InputError::new(format!(
            "{at}: counts nothing without instructions = true in [lab] or --instructions; add one of them, or remove the key"
        ))),
    }
}

impl RunPlan {
    /// The scaled settings of suite `name`.
    pub fn suite(&self, name: &str) -> Option<&dyn SuiteSettings> {
        (self.settings.iter())
            .find(|s| s.name() == name)
            .map(|s| s.as_ref())
    }

    /// `--cell`'s text for `cell`: `TARGET:CLIENTS:REPEAT`.
    pub fn cell_arg(&self, cell: &Cell) -> String {
        let name = &self.targets[cell.target].name;
        format!("{name}:{}:{}", cell.clients, cell.repeat)
    }

    /// The cells in execution order: per client count, targets interleaved per repeat
    /// (A B A B) or sequential (A A B B); with `--cell`, only that one.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = self.ordered_cells();
        cells.retain(|c| self.only_cell.is_none_or(|one| one == *c));
        cells
    }

    /// Every cell of the lab in execution order, whatever `--cell` says.
    fn ordered_cells(&self) -> Vec<Cell> {
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

    /// Every planned step of every suite, in run order.
    pub fn steps(&self) -> impl Iterator<Item = &StepPlan> {
        self.suites.iter().flat_map(|s| s.steps.iter())
    }

    /// Lower bound of the run's wall time: warm-up plus measured time of every step (for an
    /// adaptive step, its minimum).
    pub fn estimated(&self) -> Duration {
        let per_cell: Duration = self.steps().map(|s| s.warmup + s.expected).sum();
        per_cell * self.cells().len() as u32
    }

    /// What `--dry-run` prints, but the time estimate (the caller's: [`estimate`] needs what
    /// the store measured).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "lab: {} ({})", self.lab.name, self.lab.origin);
        for suite in &self.suites {
            s.push_str(
                &self
                    .suite(suite.id())
                    .map_or(String::new(), |x| x.describe()),
            );
        }
        for t in &self.targets {
            describe_target(t, &mut s);
        }
        for suite in &self.suites {
            self.describe_steps(suite, &mut s);
        }
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
        if let Some(c) = &self.instructions {
            let _ = writeln!(
                s,
                "instructions: counted under callgrind after the timed cells, {} pass pair(s) per step over {} server start(s) per target, {} cell(s) at once",
                c.passes,
                c.starts.clamp(1, c.passes.max(1)),
                c.jobs
            );
        }
        if let Some(p) = &self.profile {
            let _ = writeln!(
                s,
                "profile: perf records every measured step at {} Hz, call graph {}",
                p.hz,
                p.call_graph.name()
            );
        }
        s
    }

    /// `describe`'s line of a suite's steps, the warm-ups in parentheses.
    fn describe_steps(&self, suite: &SuitePlan, s: &mut String) {
        let _ = writeln!(
            s,
            "{} steps ({} reported{}): {}",
            suite.id(),
            suite.steps.iter().filter(|s| !s.warm).count(),
            self.suite(suite.id()).map_or("", |x| x.steps_note()),
            suite
                .steps
                .iter()
                .map(|st| if st.warm {
                    format!("({})", st.label)
                } else {
                    st.label.clone()
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// `describe`'s lines of target `t`: its build, its remote host, its placement and settings.
fn describe_target(t: &TargetPlan, s: &mut String) {
    if let Some(b) = &t.build {
        let _ = writeln!(s, "target {}: {}", t.name, describe_build(b));
    }
    if let Some(r) = &t.remote {
        let clients = if r.client_remote { "there" } else { "here" };
        let _ = writeln!(
            s,
            "target {}: server on {}, clients {clients}",
            t.name, r.host
        );
    }
    let _ = writeln!(
        s,
        "target {}: {}, CPU placement {}, settings [{}]",
        t.name,
        t.product_name(),
        t.placement.describe(),
        t.settings
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::sysbench::steps as sysbench;
    use crate::suites::sysbench::{Scaled, StepLength, SysbenchConfig};

    /// The lab's `[suite.sysbench]`, to change.
    fn sb_cfg(lab: &mut Lab) -> &mut SysbenchConfig {
        lab.suite_mut::<SysbenchConfig>().unwrap()
    }

    /// The plan's sysbench settings.
    fn sb(p: &RunPlan) -> &sysbench::Settings {
        let s = p.suite("sysbench").unwrap();
        &s.as_any().downcast_ref::<Scaled>().unwrap().settings
    }
    use std::path::Path;

    fn demo() -> Lab {
        crate::plan::lab::parse(demo_lab(), "<built-in demo>", Path::new(".")).unwrap()
    }

    /// The demo without its `only` and `pre`: the whole catalog.
    fn whole() -> Lab {
        let mut lab = demo();
        lab.only.clear();
        sb_cfg(&mut lab).pre = false;
        lab
    }

    fn labels(p: &RunPlan) -> Vec<&str> {
        p.steps().map(|s| s.label.as_str()).collect()
    }

    /// `--rows`/`--tables`/`--time` win over the lab and `--quick`; a suite without rows or
    /// tables refuses them naming its own keys; `--time` lengthens every suite's steps.
    #[test]
    fn scale_flags_override_the_lab_and_quick() {
        let opts = RunOptions {
            quick: true,
            rows: Some(20_000),
            tables: Some(3),
            time: Some(1.5),
            ..Default::default()
        };
        let p = plan(demo(), &opts).unwrap();
        let s = sb(&p);
        assert_eq!((s.scale.tables, s.scale.rows), (3, 20_000));
        assert_eq!(s.read, Duration::from_secs_f64(1.5));
        assert_eq!(s.write, Duration::from_secs_f64(1.5));
        let text = "[lab]\nname = \"l\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
            [suite.linkbench]\n";
        let lb = || crate::plan::lab::parse(text, "l.toml", Path::new(".")).unwrap();
        let e = plan(lb(), &opts).unwrap_err().0;
        assert!(e.starts_with("--rows:") && e.contains("maxid1"), "{e}");
        let time = RunOptions {
            time: Some(4.0),
            ..Default::default()
        };
        let d = plan(lb(), &time).unwrap().describe();
        assert!(d.contains("requests 4 s"), "{d}");
        for (bad, flag) in [
            (
                RunOptions {
                    rows: Some(199),
                    ..Default::default()
                },
                "--rows 199:",
            ),
            (
                RunOptions {
                    tables: Some(1001),
                    ..Default::default()
                },
                "--tables 1001:",
            ),
            (
                RunOptions {
                    time: Some(f64::NAN),
                    ..Default::default()
                },
                "--time NaN:",
            ),
        ] {
            let e = plan(demo(), &bad).unwrap_err().0;
            assert!(e.starts_with(flag), "{e}");
        }
    }

    /// The plan once named MariaDB targets `mysql`, the reports `mariadb`.
    #[test]
    fn the_plan_names_the_product_as_reports_do() {
        let text = "[lab]\nname = \"n\"\n\
            [[target]]\nname = \"my\"\nengine = \"mysql\"\nversion = \"8.0\"\n\
            [[target]]\nname = \"ma\"\nengine = \"mariadb\"\nversion = \"11.4\"\n\
            [[target]]\nname = \"rocks\"\nengine = \"mariadb\"\nstorage_engine = \"rocksdb\"\n\
            [[target]]\nname = \"pg\"\nengine = \"postgres\"\n";
        let lab = crate::plan::lab::parse(text, "l.toml", Path::new(".")).unwrap();
        let p = plan(lab, &RunOptions::default()).unwrap();
        let names: Vec<_> = p.targets.iter().map(|t| t.product_name()).collect();
        assert_eq!(names, ["mysql", "mariadb", "mariadb (myrocks)", "postgres"]);
        let described = p.describe();
        assert!(described.contains("target ma: mariadb,"), "{described}");
    }

    #[test]
    fn demo_lab_fits_in_about_two_minutes() {
        let p = plan(demo(), &RunOptions::default()).unwrap();
        assert_eq!(p.targets.len(), 2);
        // Verdicts need repeats; interleaved, so drift falls on both targets alike.
        assert_eq!((p.repeats, p.order), (3, Order::Interleaved));
        let steps = labels(&p);
        assert_eq!(steps.len(), 14, "{steps:?}");
        // The reads run before the writes (the same data for both targets), and each report
        // group has at least 4 steps, so the moderated test can pool their noise.
        let groups: Vec<&str> = p.steps().map(|s| s.group.as_str()).collect();
        let count = |g: &str| groups.iter().filter(|x| **x == g).count();
        assert_eq!(
            (count("point-1"), count("range-1"), count("writes")),
            (4, 4, 6)
        );
        let first_write = groups.iter().position(|g| *g == "writes").unwrap();
        assert_eq!(first_write, 8, "{steps:?}");
        let est = p.estimated().as_secs();
        assert!((100..=130).contains(&est), "{est}");
        // The command line's --only replaces the lab's.
        let one = RunOptions {
            only: vec!["point-query".into()],
            ..Default::default()
        };
        assert_eq!(labels(&plan(demo(), &one).unwrap()), ["point-query"]);
        let q = plan(
            demo(),
            &RunOptions {
                quick: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(q.estimated().as_secs() <= 55, "{:?}", q.estimated());
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
    fn cell_flag_keeps_one_cell_and_names_what_is_wrong() {
        let mut lab = demo();
        lab.repeats = 3;
        let opts = |cell: &str| RunOptions {
            clients: Some("1,4".into()),
            cell: Some(cell.into()),
            ..Default::default()
        };
        let p = plan(lab.clone(), &opts("sqlite.sync-normal:4:2")).unwrap();
        let one = Cell {
            target: 1,
            clients: 4,
            repeat: 2,
        };
        assert_eq!(p.cells(), [one]);
        assert_eq!(p.cell_arg(&one), "sqlite.sync-normal:4:2", "round trip");
        assert!(p.describe().contains("order: sqlite.sync-normal@c4r2\n"));
        let all = plan(lab.clone(), &RunOptions::default()).unwrap();
        assert_eq!(all.cells().len(), 6, "without --cell every cell runs");
        for (bad, why) in [
            ("sqlite.sync-normal:4", "expected TARGET:CLIENTS:REPEAT"),
            (
                "nope:1:1",
                "the lab has no target nope; use one of sqlite.sync-full, sqlite.sync-normal",
            ),
            (
                "sqlite.sync-full:2:1",
                "2 is not a planned client count; use one of 1,4",
            ),
            ("sqlite.sync-full:1:0", "repeat 0 is not in 1..=3"),
            ("sqlite.sync-full:1:4", "repeat 4 is not in 1..=3"),
        ] {
            let e = plan(lab.clone(), &opts(bad)).unwrap_err().0;
            assert!(e.starts_with(&format!("--cell {bad}: {why}")), "{e}");
        }
    }

    #[test]
    fn only_and_skip_select_steps() {
        let opts = RunOptions {
            only: vec!["point-*".into(), "insert".into()],
            ..Default::default()
        };
        let p = plan(whole(), &opts).unwrap();
        let labels = labels(&p);
        assert_eq!(
            labels,
            vec!["point-query", "insert"],
            "--only runs exactly the named steps: no warm step"
        );
        assert!(p.suites[0].postwrite_after_load);
        let skip = RunOptions {
            skip: vec!["*".into()],
            ..Default::default()
        };
        assert!(
            plan(whole(), &skip)
                .unwrap_err()
                .0
                .contains("leave no step")
        );
        let p = plan(
            whole(),
            &RunOptions {
                skip: vec!["read-*".into(), "scan".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert!(p.steps().any(|s| s.label == "scan.warm"), "warm steps stay");
        assert!(!p.steps().any(|s| s.label.starts_with("read-")));
        assert!(
            !p.suites[0].postwrite_after_load,
            "postwrite follows point-query.warm"
        );
        let e = plan(
            whole(),
            &RunOptions {
                only: vec!["nope*".into()],
                ..Default::default()
            },
        );
        assert!(e.unwrap_err().0.contains("matches no step"));
        let e = plan(
            whole(),
            &RunOptions {
                only: vec!["*.pre".into()],
                ..Default::default()
            },
        );
        assert!(e.unwrap_err().0.contains("pre = true"));
    }

    #[test]
    fn pre_adds_fifteen_steps_and_five_groups() {
        let mut lab = whole();
        sb_cfg(&mut lab).pre = true;
        let p = plan(lab, &RunOptions::default()).unwrap();
        assert_eq!(p.steps().count(), 51);
        let labels = labels(&p);
        assert_eq!(
            &labels[..3],
            ["point-query.warm", "scan.warmpre", "point-query.pre"]
        );
        assert_eq!(labels[17], "update-inlist");
        let mut groups: Vec<&str> = p
            .steps()
            .filter(|s| !s.warm)
            .map(|s| s.group.as_str())
            .collect();
        groups.sort();
        groups.dedup();
        assert_eq!(
            groups,
            ["point-1", "point-2", "range-1", "range-2", "writes"]
        );
        let only = plan(
            {
                let mut l = whole();
                sb_cfg(&mut l).pre = true;
                l
            },
            &RunOptions {
                only: vec!["*.pre*".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(only.steps().count(), 15);
    }

    #[test]
    fn durations_and_threads_follow_the_rules() {
        let p = plan(demo(), &RunOptions::default()).unwrap();
        let step = |l: &str| sysbench::find(l).unwrap();
        assert_eq!(
            sb(&p).duration_of(step("write-only")),
            sb(&p).read,
            "write-only uses read_secs"
        );
        assert_eq!(sb(&p).duration_of(step("update-one")), sb(&p).write);
        assert_eq!(
            sb(&p).duration_of(step("scan.warm")),
            sb(&p).read.min(Duration::from_secs(60))
        );
        let mut lab = demo();
        sb_cfg(&mut lab).read_secs = 600.0;
        sb_cfg(&mut lab).tables = 8;
        let p = plan(lab, &RunOptions::default()).unwrap();
        assert_eq!(
            sb(&p).duration_of(step("scan.warmpre")),
            Duration::from_secs(60)
        );
        assert_eq!(
            sb(&p).threads_of(step("point-query.warm"), 2),
            8,
            "one per table"
        );
        assert_eq!(sb(&p).threads_of(step("point-query"), 2), 2);
    }

    #[test]
    fn linkbench_steps_need_the_load_and_the_index_and_the_check_follows_requests() {
        let lab = || {
            crate::plan::lab::parse(
                "[lab]\nname = \"l\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
                 [suite.linkbench]\nmaxid1 = 100000\nrequesters = [1, 2]\n",
                "lab.toml",
                Path::new("."),
            )
            .unwrap()
        };
        let only = |o: &str| RunOptions {
            only: vec![o.into()],
            quick: true,
            ..Default::default()
        };
        let e = plan(lab(), &only("linkbench.request.P2")).unwrap_err().0;
        assert!(
            e.contains("linkbench.request.P2 needs linkbench.load and linkbench.index"),
            "{e}"
        );
        let e = plan(lab(), &only("linkbench.index")).unwrap_err().0;
        assert!(e.contains("linkbench.index needs linkbench.load ("), "{e}");
        let p = plan(lab(), &only("linkbench.load,linkbench.index,*.P2")).unwrap();
        let labels: Vec<&str> = p.steps().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "linkbench.load",
                "linkbench.index",
                "linkbench.request.P2",
                "linkbench.check"
            ],
            "--only drops the warm step but keeps the check"
        );
        let lb = p.suite("linkbench").unwrap().as_any();
        let lb = &lb
            .downcast_ref::<crate::suites::linkbench::Scaled>()
            .unwrap()
            .settings;
        assert_eq!(lb.maxid1, 2_000, "--quick scale");
        let all = plan(lab(), &RunOptions::default()).unwrap();
        assert_eq!(all.steps().count(), 6);
    }

    #[test]
    fn insert_steps_need_the_steps_that_build_their_table() {
        let lab = || {
            crate::plan::lab::parse(
                "[lab]\nname = \"i\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
                 [suite.sysbench]\nrows = 1000\n[suite.insert]\nrows = 1000\n",
                "lab.toml",
                Path::new("."),
            )
            .unwrap()
        };
        let only = |o: &str| RunOptions {
            only: vec![o.into()],
            ..Default::default()
        };
        let e = plan(lab(), &only("qr100")).unwrap_err().0;
        assert!(
            e.contains("the insert step qr100 needs l.i0 and l.x") && e.contains("select them too"),
            "{e}"
        );
        let e = plan(lab(), &only("l.x")).unwrap_err().0;
        assert!(
            e.contains("l.x needs l.i0 (") && e.contains("select it too"),
            "{e}"
        );
        let p = plan(lab(), &only("l.i0,l.x,qr100,point-query")).unwrap();
        assert_eq!(labels(&p), ["point-query", "l.i0", "l.x", "qr100"]);
        assert_eq!(p.suites.len(), 2, "each suite on its own data directory");
        let skip = RunOptions {
            skip: vec!["l.i2,qp*".into()],
            ..Default::default()
        };
        let p = plan(lab(), &skip).unwrap();
        assert!(labels(&p).contains(&"qr1000") && !labels(&p).contains(&"l.i2"));
    }

    #[test]
    fn only_and_skip_take_comma_separated_lists() {
        let p = plan(
            whole(),
            &RunOptions {
                only: vec!["point-*, hot-points".into(), "insert".into()],
                ..Default::default()
            },
        )
        .unwrap();
        let labels = labels(&p);
        assert_eq!(labels, ["point-query", "hot-points", "insert"]);
        let p = plan(
            whole(),
            &RunOptions {
                skip: vec!["read-*,scan".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            !p.steps()
                .any(|s| s.label.starts_with("read-") || s.label == "scan")
        );
        let e = plan(
            whole(),
            &RunOptions {
                only: vec!["point-*,,insert".into()],
                ..Default::default()
            },
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("--only point-*,,insert: an empty step pattern"),
            "{e}"
        );
        let e = plan(
            whole(),
            &RunOptions {
                skip: vec!["insert,nope".into()],
                ..Default::default()
            },
        )
        .unwrap_err()
        .0;
        assert!(e.starts_with("--skip nope: matches no step"), "{e}");
        let e = plan(
            whole(),
            &RunOptions {
                only: vec!["hot-point".into()],
                ..Default::default()
            },
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("--only hot-point: matches no step; did you mean `hot-points`?"),
            "{e}"
        );
        let lab = demo_lab().replace("\"insert\",\n]", "\"insert\", \"nope\",\n]");
        let lab = crate::plan::lab::parse(&lab, "lab.toml", Path::new(".")).unwrap();
        let e = plan(lab, &RunOptions::default()).unwrap_err().0;
        assert!(
            e.starts_with("lab.toml: [lab] only nope: matches no step"),
            "{e}"
        );
    }

    /// `--instructions` and `instructions = true` are one switch: the lab's counting keys apply
    /// with either, and are refused (at their line) with neither.
    #[test]
    fn counting_keys_apply_with_the_flag_and_are_refused_without_counting() {
        let text = demo_lab().replace(
            "clients = [1]",
            "clients = [1]\ninstruction_passes = 2\ncount_jobs = 1",
        );
        let lab = || crate::plan::lab::parse(&text, "lab.toml", Path::new(".")).unwrap();
        let counted = RunOptions {
            instructions: true,
            ..Default::default()
        };
        let c = plan(lab(), &counted).unwrap().instructions.unwrap();
        assert_eq!((c.passes, c.jobs), (2, 1));
        let e = plan(lab(), &RunOptions::default()).unwrap_err().0;
        assert!(
            e.starts_with(
                "lab.toml:10: [lab] instruction_passes: counts nothing without instructions = true"
            ),
            "{e}"
        );
    }

    fn with_placement(lab_keys: &str, target_keys: &str) -> Lab {
        let text = demo_lab()
            .replace("clients = [1]", &format!("clients = [1]\n{lab_keys}"))
            .replace(
                "name = \"sqlite.sync-normal\"",
                &format!("name = \"sqlite.sync-normal\"\n{target_keys}"),
            )
            .replace("engine = \"sqlite\"", "engine = \"postgres\"");
        crate::plan::lab::parse(&text, "lab.toml", Path::new(".")).unwrap()
    }

    #[test]
    fn placement_resolves_per_target_on_the_machine() {
        let lab = with_placement("placement = \"split\"", "placement = \"shared\"");
        let p = plan_on(lab, &RunOptions::default(), Machine::simple(2)).unwrap();
        let lists: Vec<_> = p
            .targets
            .iter()
            .map(|t| (t.placement.name.as_str(), t.placement.describe()))
            .collect();
        assert_eq!(
            lists,
            [
                ("split", "split: server 0, client 1".to_string()),
                ("shared", "shared: server 0, client 0".to_string())
            ]
        );
        let p = plan_on(demo(), &RunOptions::default(), Machine::simple(2)).unwrap();
        assert_eq!(
            p.targets[0].placement,
            Placement::default(),
            "os by default"
        );
        let lab = with_placement("server_cpus = \"0\"", "client_cpus = \"2-3\"");
        let e = plan_on(lab, &RunOptions::default(), Machine::simple(2))
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "lab.toml:24: [[target]] client_cpus: CPU 2 does not exist on this host (online CPUs: 0-1); use CPUs from that list"
        );
        let lab = with_placement("placement = \"split\"", "");
        let e = plan_on(lab, &RunOptions::default(), Machine::simple(1))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("lab.toml:10: [lab] placement: \"split\" needs at least 2 CPUs"),
            "{e}"
        );
    }

    #[test]
    fn repeats_and_cells_are_capped_before_the_plan_allocates() {
        let with = |repeats: Option<u32>, clients: Option<&str>| RunOptions {
            repeats,
            clients: clients.map(str::to_string),
            ..RunOptions::default()
        };
        // `--repeats 4294967295` once allocated 4 GiB of cells and aborted.
        for r in [0, 1001, u32::MAX] {
            let e = plan(demo(), &with(Some(r), None)).unwrap_err().0;
            assert_eq!(
                e,
                format!("--repeats {r}: give a whole number from 1 to 1000")
            );
        }
        let p = plan(demo(), &with(Some(1000), None)).unwrap();
        assert_eq!(p.cells().len(), 2000);
        // 2 targets × 6 client counts × 1000 repeats.
        let e = plan(demo(), &with(Some(1000), Some("1,2,3,4,5,6")))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("the plan has 12000 cells (2 targets × 6 client counts × 1000 repeats), at most 10000"),
            "{e}"
        );
        let e = plan(demo(), &with(None, Some("100000"))).unwrap_err().0;
        assert!(e.contains("client counts from 1 to 10000"), "{e}");
    }

    #[test]
    fn adaptive_steps_run_up_to_their_fixed_length() {
        let mut lab = demo();
        sb_cfg(&mut lab).length = StepLength::Adaptive {
            precision: 0.02,
            min_secs: 10.0,
            max_secs: None,
        };
        sb_cfg(&mut lab).read_secs = 60.0;
        sb_cfg(&mut lab).write_secs = 90.0;
        let step = |l: &str| sysbench::find(l).unwrap();
        let p = plan(lab.clone(), &RunOptions::default()).unwrap();
        let a = sb(&p).adaptive.unwrap();
        assert_eq!(
            (a.precision, a.min, a.max),
            (0.02, Duration::from_secs(10), None)
        );
        assert_eq!(
            sb(&p).duration_of(step("point-query")),
            Duration::from_secs(60)
        );
        assert_eq!(
            sb(&p).duration_of(step("update-one")),
            Duration::from_secs(90)
        );
        assert_eq!(
            sb(&p).stop_rule(step("point-query")),
            Some((0.02, Duration::from_secs(10)))
        );
        assert_eq!(
            sb(&p).stop_rule(step("scan.warm")),
            None,
            "warm steps keep their length"
        );
        assert_eq!(
            sb(&p).duration_of(step("scan.warm")),
            Duration::from_secs(60)
        );
        let q = plan(
            lab.clone(),
            &RunOptions {
                quick: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            sb(&q).duration_of(step("point-query")),
            Duration::from_secs(5)
        );
        assert_eq!(
            sb(&q).stop_rule(step("point-query")),
            Some((0.02, Duration::from_secs(3)))
        );
        assert_eq!(
            sb(&q).duration_of(step("scan.warm")),
            Duration::from_millis(100)
        );
        sb_cfg(&mut lab).length = StepLength::Adaptive {
            precision: 0.02,
            min_secs: 10.0,
            max_secs: Some(20.0),
        };
        let p = plan(lab, &RunOptions::default()).unwrap();
        assert_eq!(
            sb(&p).duration_of(step("update-one")),
            Duration::from_secs(20)
        );
        assert!(p.describe().contains("adaptive"), "{}", p.describe());
    }
}
