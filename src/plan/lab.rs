//! Lab files: TOML text → a validated [`Lab`], or one line naming the file, line and key at fault.
//!
//! Owns the lab file's schema (docs/lab.md) for `[lab]` and `[[target]]`, and every check that
//! needs only the file: unknown keys, wrong types, duplicate target names, unknown engines,
//! unreadable config files. Each `[suite.NAME]` table goes to the suite the registry names so
//! ([`crate::suites`]), which owns its keys and checks. Must not: look at the machine, apply CLI
//! flags (that is `plan`), know any suite's keys, or start anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::cpus::{CpuSet, PlacementSpec, Shorthand};
use crate::engine::connect::ConnectUrl;
use crate::engine::{EngineKind, TableDdl};
use crate::error::InputError;
use crate::profiler::{CallGraph, ProfileSettings};
use crate::provision::Product;
use crate::provision::build::{BuildEngine, BuildRequest, Flags, Training};
use crate::provision::sweep::{self, VersionSet};
use crate::range;
use crate::suites::{LabText as Source, Section, SuiteConfig};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    lab: RawLabSection,
    #[serde(rename = "target", default)]
    targets: Vec<RawTarget>,
    /// Each `[suite.NAME]` table is parsed by its suite (see [`suite_sections`]).
    #[serde(default, rename = "suite")]
    _suite: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabSection {
    name: String,
    #[serde(default = "one")]
    repeats: Spanned<RawRepeats>,
    #[serde(default)]
    min_repeats: Option<Spanned<i64>>,
    #[serde(default)]
    max_repeats: Option<Spanned<i64>>,
    #[serde(default)]
    order: Option<Spanned<String>>,
    #[serde(default)]
    only: Vec<String>,
    #[serde(default)]
    skip: Vec<String>,
    #[serde(default)]
    clients: Option<Spanned<Vec<i64>>>,
    #[serde(default)]
    min_effect: Option<Spanned<f64>>,
    #[serde(default)]
    placement: Option<Spanned<String>>,
    #[serde(default)]
    server_cpus: Option<Spanned<String>>,
    #[serde(default)]
    client_cpus: Option<Spanned<String>>,
    #[serde(default)]
    profile: Option<Spanned<bool>>,
    #[serde(default)]
    profile_hz: Option<Spanned<i64>>,
    #[serde(default)]
    profile_call_graph: Option<Spanned<String>>,
    #[serde(default)]
    instructions: Option<Spanned<bool>>,
    #[serde(default)]
    instruction_passes: Option<Spanned<i64>>,
    count_jobs: Option<Spanned<i64>>,
    #[serde(default)]
    reuse_load: Option<bool>,
}

/// A target's `build = { source = "postgresql-15", variant = "lto" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuild {
    #[serde(default)]
    source: Option<String>,
    #[serde(default = "defaults::variant")]
    variant: String,
    #[serde(default)]
    cflags: Option<String>,
    #[serde(default)]
    ldflags: Option<String>,
    #[serde(default = "defaults::train")]
    train: String,
    #[serde(default = "defaults::train_scale")]
    train_scale: String,
}

/// `repeats = 3` or `repeats = "auto"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawRepeats {
    Count(i64),
    Word(String),
}

fn one() -> Spanned<RawRepeats> {
    Spanned::new(0..0, RawRepeats::Count(1))
}

/// `repeats = "auto"`: the first rounds every step runs, and the most rounds an undecided step
/// gets. Each extra round runs only the steps still undecided; the verdicts multiply p-values by
/// [`AutoRepeats::looks`] so that stopping a step once it is decided keeps their error rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoRepeats {
    pub first: u32,
    pub max: u32,
}

impl AutoRepeats {
    /// Default first rounds and bound.
    pub const DEFAULT: AutoRepeats = AutoRepeats { first: 3, max: 8 };

    /// How many times the run may look at a step: after the first rounds and after each extra
    /// one.
    pub fn looks(self) -> u32 {
        self.max - self.first + 1
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Spanned<String>,
    engine: Spanned<String>,
    #[serde(default)]
    config: Option<Spanned<String>>,
    #[serde(default)]
    settings: Vec<String>,
    #[serde(default)]
    bin: Option<Spanned<String>>,
    #[serde(default)]
    env: Option<Spanned<BTreeMap<String, String>>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    version: Option<Spanned<String>>,
    #[serde(default)]
    versions: Option<Spanned<RawVersions>>,
    #[serde(default)]
    malloc: Option<Spanned<String>>,
    #[serde(default)]
    port: Option<Spanned<i64>>,
    #[serde(default)]
    storage_engine: Option<Spanned<String>>,
    #[serde(default)]
    table_options: Option<Spanned<String>>,
    #[serde(default)]
    index_options: Option<Spanned<String>>,
    #[serde(default)]
    placement: Option<Spanned<String>>,
    #[serde(default)]
    server_cpus: Option<Spanned<String>>,
    #[serde(default)]
    client_cpus: Option<Spanned<String>>,
    #[serde(default)]
    build: Option<Spanned<RawBuild>>,
    #[serde(default)]
    library: Option<Spanned<String>>,
    #[serde(default)]
    connect: Option<Spanned<String>>,
    #[serde(default)]
    host: Option<Spanned<String>>,
    #[serde(default)]
    client: Option<Spanned<String>>,
    #[serde(default)]
    ssh_config: Option<Spanned<String>>,
}

/// `versions = "16.*"` (a pattern or a range) or `versions = ["16.2", "16.9"]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawVersions {
    One(String),
    Many(Vec<String>),
}

mod defaults {
    pub fn variant() -> String {
        "o2".into()
    }
    pub fn train() -> String {
        "sysbench".into()
    }
    pub fn train_scale() -> String {
        "small".into()
    }
}

/// How repeats of several targets are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// A B A B: each repeat runs every target before the next repeat starts.
    Interleaved,
    /// A A B B.
    Sequential,
}

/// One target of a lab.
#[derive(Debug, Clone, PartialEq)]
pub struct LabTarget {
    pub name: String,
    pub engine: EngineKind,
    /// Engine settings: the config file's lines, then the `settings` list.
    pub settings: Vec<String>,
    /// The config file as written in the lab.
    pub config_name: Option<String>,
    /// Directory of the server binaries.
    pub bin: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub args: Vec<String>,
    /// Version to fetch (`17`, `8.0`, `10.2`, exact), when no `bin` is given.
    pub version: Option<String>,
    /// Whose builds `version` (or `versions`) fetches (from the engine name as written: `mysql`
    /// is Oracle MySQL, `mariadb` MariaDB); set with `version` or `versions`.
    pub product: Option<Product>,
    /// `versions = …`: a sweep, which the plan expands into one target per release
    /// ([`crate::plan`]); `None` on every target of an expanded lab.
    pub versions: Option<VersionSet>,
    /// The sweep this target is one release of (the `[[target]]` name that had `versions`);
    /// set by the expansion, in release order.
    pub sweep: Option<String>,
    /// Fixed loopback port (default: a free one).
    pub port: Option<u16>,
    /// What the suite's CREATE statements add (`storage_engine`, `table_options`,
    /// `index_options`; MySQL/MariaDB only).
    pub tables: TableDdl,
    /// This target's own placement keys; `None`: the `[lab]` ones apply.
    pub placement: Option<PlacementSpec>,
    /// Compile the binaries (servers) or the library (SQLite) from source on first use.
    pub build: Option<BuildRequest>,
    /// SQLite: a shared library opened at run time instead of the bundled SQLite.
    pub library: Option<PathBuf>,
    /// An already running server to connect to: dbdelta starts and stops nothing.
    pub connect: Option<ConnectUrl>,
    /// The host the server runs on (`host = "ssh://…"`), when it is not this one.
    pub remote: Option<crate::engine::remote::RemoteHost>,
}

/// A validated lab.
#[derive(Debug, Clone)]
pub struct Lab {
    pub name: String,
    /// The file's text, kept with the run.
    pub text: String,
    /// Where it came from (`lab.toml`, or `<built-in demo>`), for messages.
    pub origin: String,
    /// Repeats of every cell (with `auto`: its first rounds).
    pub repeats: u32,
    /// `repeats = "auto"`: rounds added for undecided steps, up to a bound.
    pub auto: Option<AutoRepeats>,
    pub order: Order,
    /// `only = [...]`, `skip = [...]`: step globs, as `--only`/`--skip` (which replace them).
    pub only: Vec<String>,
    pub skip: Vec<String>,
    pub clients: Vec<u32>,
    /// Smallest change a verdict calls a regression or improvement, as a fraction (0.02 = 2%).
    pub min_effect: f64,
    pub targets: Vec<LabTarget>,
    /// The `[suite.NAME]` sections, each checked by its suite, in the registry's order; a lab
    /// with no suite section runs the default suite (sysbench) with its defaults.
    pub suites: Vec<Box<dyn SuiteConfig>>,
    /// The `[lab]` placement keys (default: `os`, nothing pinned).
    pub placement: PlacementSpec,
    /// `profile = true` (with `profile_hz`, `profile_call_graph`): CPU profiles of every
    /// measured step; `None`: not profiled.
    pub profile: Option<ProfileSettings>,
    /// `instructions = true` (with `instruction_passes`): a counting pass per target that
    /// counts every step's instructions per op under callgrind; `None`: none.
    pub instructions: Option<crate::counter::Counting>,
    /// `reuse_load = true`: each cell starts from a saved copy of its load when one matches
    /// (`runner::snapshot`), and saves one when none does.
    pub reuse_load: bool,
}

/// The placement keys of one section, checked for syntax (the CPUs themselves are checked
/// against the machine by `plan`).
fn placement(
    src: &Source<'_>,
    placement: Option<Spanned<String>>,
    server: Option<Spanned<String>>,
    client: Option<Spanned<String>>,
) -> Result<PlacementSpec, InputError> {
    let shorthand = match placement {
        None => None,
        Some(p) => match Shorthand::parse(p.get_ref()) {
            Some(s) => Some((s, src.locate(p.span()))),
            None => {
                return Err(src.error_at(
                    p.span(),
                    format!(
                        "placement must be one of {}, not \"{}\"",
                        Shorthand::NAMES
                            .iter()
                            .map(|n| format!("\"{n}\""))
                            .collect::<Vec<_>>()
                            .join(", "),
                        p.get_ref()
                    ),
                ));
            }
        },
    };
    let list = |v: Option<Spanned<String>>| -> Result<Option<(CpuSet, String)>, InputError> {
        let Some(v) = v else { return Ok(None) };
        let set = CpuSet::parse(v.get_ref()).map_err(|e| src.error_at(v.span(), e))?;
        Ok(Some((set, src.locate(v.span()))))
    };
    Ok(PlacementSpec {
        shorthand,
        server: list(server)?,
        client: list(client)?,
    })
}

/// Parse and validate a lab. `base_dir` resolves relative `config` paths (the lab file's folder).
pub fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Lab, InputError> {
    let src = Source::new(text, origin);
    let raw: RawLab = toml::from_str(text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        if msg.trim() == "missing field `lab`" {
            return src
                .error("the [lab] section is missing: start the file with [lab] and name = \"…\"");
        }
        match e.span() {
            Some(span) => src.error_at(span, msg.trim()),
            None => src.error(msg.trim()),
        }
    })?;
    let lab = raw.lab;
    let (repeats, auto) = repeats(&src, &lab)?;
    let order = order(&src, lab.order.as_ref())?;
    let clients = clients(&src, lab.clients.as_ref())?;
    let min_effect = min_effect(&src, lab.min_effect.as_ref())?;
    let profile = profile(&src, &lab)?;
    let instructions = instructions(&src, &lab)?;
    let placement = placement(&src, lab.placement, lab.server_cpus, lab.client_cpus)?;
    let targets = targets(&src, raw.targets, base_dir)?;
    let suites = suite_sections(&src)?;
    Ok(Lab {
        placement,
        name: lab.name,
        text: text.to_string(),
        origin: origin.to_string(),
        repeats,
        auto,
        order,
        only: lab.only,
        skip: lab.skip,
        clients,
        min_effect,
        targets,
        suites,
        profile,
        instructions,
        reuse_load: lab.reuse_load.unwrap_or(false),
    })
}

/// The `[suite.NAME]` tables, each parsed by the suite the registry names so; a lab with none
/// runs the default suites. A name no suite has is bad input.
fn suite_sections(src: &Source<'_>) -> Result<Vec<Box<dyn SuiteConfig>>, InputError> {
    let doc = toml::de::DeTable::parse(src.text()).map_err(|e| src.error(e.message().trim()))?;
    let mut tables = BTreeMap::new();
    for (key, value) in doc.into_inner() {
        if key.get_ref().as_ref() != "suite" {
            continue;
        }
        let span = value.span();
        let toml::de::DeValue::Table(t) = value.into_inner() else {
            return Err(src.error_at(span, "suite must hold [suite.NAME] tables"));
        };
        for (name, table) in t {
            tables.insert(name.get_ref().to_string(), (name.span(), table));
        }
    }
    let kinds = crate::suites::registry();
    if let Some((name, (span, _))) =
        (tables.iter()).find(|(n, _)| kinds.iter().all(|k| k.name() != *n))
    {
        let names: Vec<String> = kinds.iter().map(|k| format!("`{}`", k.name())).collect();
        return Err(src.error_at(
            span.clone(),
            format!(
                "unknown field `{name}`, expected one of {}",
                names.join(", ")
            ),
        ));
    }
    let none = tables.is_empty();
    let mut out = Vec::new();
    for kind in kinds {
        let value = tables.remove(kind.name()).map(|(_, v)| v);
        if value.is_some() || (none && kind.by_default()) {
            out.push(kind.parse(&Section { value, lab: src })?);
        }
    }
    Ok(out)
}

impl Lab {
    /// Where the lab first names CPUs of this host: `server_cpus`/`client_cpus` of `[lab]`,
    /// then of each target, as `origin:line: [section] key`.
    pub fn cpu_lists_at(&self) -> Option<&str> {
        let specs = self.targets.iter().filter_map(|t| t.placement.as_ref());
        (std::iter::once(&self.placement).chain(specs)).find_map(|spec| {
            let (_, at) = spec.server.as_ref().or(spec.client.as_ref())?;
            Some(at.as_str())
        })
    }

    /// The parsed `[suite.NAME]` section of type `T`, when the lab runs that suite.
    pub fn suite<T: 'static>(&self) -> Option<&T> {
        self.suites.iter().find_map(|s| s.as_any().downcast_ref())
    }

    /// [`Lab::suite`], to change (tests).
    pub fn suite_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.suites
            .iter_mut()
            .find_map(|s| s.as_any_mut().downcast_mut())
    }
}

/// `profile = true`, `profile_hz` (1..=10000, default 99), `profile_call_graph` (`dwarf` or
/// `fp`, default `dwarf`); the last two only with the first.
fn profile(src: &Source<'_>, lab: &RawLabSection) -> Result<Option<ProfileSettings>, InputError> {
    let on = lab.profile.as_ref().is_some_and(|p| *p.get_ref());
    let mut settings = ProfileSettings::default();
    if let Some(hz) = &lab.profile_hz {
        if !on {
            return Err(src.error_at(hz.span(), "profile_hz needs profile = true"));
        }
        let v = *hz.get_ref();
        settings.hz = u32::try_from(v).ok().filter(|h| (1..=10_000).contains(h)).ok_or_else(|| {
            src.error_at(
                hz.span(),
                format!("profile_hz must be a sampling rate from 1 to 10000 per second, e.g. 99, not {v}"),
            )
        })?;
    }
    if let Some(cg) = &lab.profile_call_graph {
        if !on {
            return Err(src.error_at(cg.span(), "profile_call_graph needs profile = true"));
        }
        settings.call_graph = match cg.get_ref().as_str() {
            "dwarf" => CallGraph::Dwarf,
            "fp" => CallGraph::Fp,
            other => {
                return Err(src.error_at(
                    cg.span(),
                    format!("profile_call_graph must be \"dwarf\" or \"fp\", not \"{other}\""),
                ));
            }
        };
    }
    Ok(on.then_some(settings))
}

/// `instructions = true` and `instruction_passes` (1..=20 pairs of counting passes per step,
/// default 3; only with the first).
fn instructions(
    src: &Source<'_>,
    lab: &RawLabSection,
) -> Result<Option<crate::counter::Counting>, InputError> {
    let on = lab.instructions.as_ref().is_some_and(|p| *p.get_ref());
    let mut counting = crate::counter::Counting::default();
    if let Some(p) = &lab.instruction_passes {
        if !on {
            return Err(src.error_at(p.span(), "instruction_passes needs instructions = true"));
        }
        let v = *p.get_ref();
        counting.passes = u32::try_from(v).ok().filter(|n| (1..=20).contains(n)).ok_or_else(|| {
            src.error_at(
                p.span(),
                format!("instruction_passes must be a number of pass pairs from 1 to 20 (3 gives a spread), not {v}"),
            )
        })?;
    }
    if let Some(j) = &lab.count_jobs {
        if !on {
            return Err(src.error_at(j.span(), "count_jobs needs instructions = true"));
        }
        let v = *j.get_ref();
        counting.jobs = u32::try_from(v).ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
            src.error_at(
                j.span(),
                format!("count_jobs must be a number of counting cells at once from 1 to 64 (default: the CPUs dbdelta may use), not {v}"),
            )
        })?;
    }
    Ok(on.then_some(counting))
}

/// `order = "interleaved" | "sequential"`.
fn order(src: &Source<'_>, o: Option<&Spanned<String>>) -> Result<Order, InputError> {
    let Some(o) = o else {
        return Ok(Order::Interleaved);
    };
    match o.get_ref().as_str() {
        "interleaved" => Ok(Order::Interleaved),
        "sequential" => Ok(Order::Sequential),
        other => Err(src.error_at(
            o.span(),
            format!("order must be \"interleaved\" or \"sequential\", not \"{other}\""),
        )),
    }
}

/// `clients = [1, 4]` (default `[1]`).
fn clients(src: &Source<'_>, c: Option<&Spanned<Vec<i64>>>) -> Result<Vec<u32>, InputError> {
    let Some(c) = c else { return Ok(vec![1]) };
    let list = c.get_ref();
    if list.is_empty() || list.iter().any(|n| !range::CLIENTS.contains(*n)) {
        return Err(src.error_at(
            c.span(),
            format!(
                "clients must be a non-empty list of client counts {}, e.g. [1, 4]",
                range::CLIENTS.words()
            ),
        ));
    }
    Ok(list.iter().map(|n| *n as u32).collect())
}

/// `min_effect`, a fraction (default [`crate::stats::MIN_EFFECT`]).
/// `repeats` (a whole number ≥ 1, or `"auto"` with `min_repeats` and `max_repeats`).
fn repeats(
    src: &Source<'_>,
    lab: &RawLabSection,
) -> Result<(u32, Option<AutoRepeats>), InputError> {
    let bad = format!(
        "repeats must be a whole number {}, or \"auto\" (repeat undecided steps)",
        range::REPEATS.words()
    );
    let word = match lab.repeats.get_ref() {
        RawRepeats::Count(n) => {
            let n =
                (range::REPEATS.get(*n)).ok_or_else(|| src.error_at(lab.repeats.span(), &bad))?;
            if let Some(key) = lab.min_repeats.as_ref().or(lab.max_repeats.as_ref()) {
                return Err(src.error_at(
                    key.span(),
                    "min_repeats and max_repeats go with repeats = \"auto\"; remove them or set it",
                ));
            }
            return Ok((n, None));
        }
        RawRepeats::Word(w) => w,
    };
    if word != "auto" {
        return Err(src.error_at(lab.repeats.span(), &bad));
    }
    let bound = |key: &Option<Spanned<i64>>, default: u32, least: u32| match key {
        None => Ok(default),
        Some(k) => {
            let within = range::Count {
                min: least.into(),
                max: range::AUTO_REPEATS_MAX,
            };
            (within.get(*k.get_ref())).ok_or_else(|| {
                src.error_at(k.span(), format!("give a whole number {}", within.words()))
            })
        }
    };
    let first = bound(&lab.min_repeats, AutoRepeats::DEFAULT.first, 2)?;
    let max = bound(&lab.max_repeats, AutoRepeats::DEFAULT.max.max(first), first)?;
    Ok((first, Some(AutoRepeats { first, max })))
}

fn min_effect(src: &Source<'_>, m: Option<&Spanned<f64>>) -> Result<f64, InputError> {
    let Some(m) = m else {
        return Ok(crate::stats::MIN_EFFECT);
    };
    let v = *m.get_ref();
    if !(0.0..1.0).contains(&v) {
        return Err(src.error_at(
            m.span(),
            format!("min_effect must be a fraction from 0 up to 1, e.g. 0.02 for 2%, not {v}"),
        ));
    }
    Ok(v)
}

/// Every `[[target]]`, each checked on its own and names checked for uniqueness.
fn targets(
    src: &Source<'_>,
    raw: Vec<RawTarget>,
    base_dir: &Path,
) -> Result<Vec<LabTarget>, InputError> {
    if raw.is_empty() {
        return Err(src.error(
            "the lab has no [[target]]; add at least one, e.g. [[target]] name = \"a\" engine = \"sqlite\"",
        ));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    raw.into_iter()
        .map(|t| {
            let name = target_name(src, &t.name, &mut seen)?;
            target(src, t, name, base_dir)
        })
        .collect()
}

/// A target's name: usable as a directory name, and not used before.
fn target_name(
    src: &Source<'_>,
    name: &Spanned<String>,
    seen: &mut BTreeMap<String, usize>,
) -> Result<String, InputError> {
    let text = name.get_ref().clone();
    let valid = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !valid {
        return Err(src.error_at(
            name.span(),
            format!(
                "target name \"{text}\" may only use letters, digits, '.', '_' and '-' (it names directories)"
            ),
        ));
    }
    let line = src.line_of(name.span().start);
    if let Some(first) = seen.insert(text.clone(), line) {
        return Err(src.error_at(
            name.span(),
            format!(
                "target name \"{text}\" is used twice (first at line {first}); give each target a unique name"
            ),
        ));
    }
    Ok(text)
}

/// One `[[target]]` after its name.
fn target(
    src: &Source<'_>,
    t: RawTarget,
    name: String,
    base_dir: &Path,
) -> Result<LabTarget, InputError> {
    let engine = EngineKind::parse(t.engine.get_ref()).ok_or_else(|| {
        src.error_at(
            t.engine.span(),
            format!(
                "unknown engine \"{}\"; this version supports: {}, mariadb (an alias of mysql: the same family)",
                t.engine.get_ref(),
                EngineKind::names().join(", ")
            ),
        )
    })?;
    let embedded = engine.embedded();
    let connect = connect(src, &t, engine)?;
    let remote = remote(src, &t, engine, base_dir)?;
    let (mut settings, config_name) = config_settings(src, t.config.as_ref(), base_dir)?;
    settings.extend(t.settings.iter().cloned());
    one_statement_each(src, &name, engine, &settings)?;
    let bin = bin_dir(src, t.bin.as_ref(), embedded, remote.is_some(), base_dir)?;
    let oracle = t.version.is_some() && t.engine.get_ref() == "mysql";
    let tables = table_ddl(src, &t, engine, oracle)?;
    let (version, product) = version(src, &t, engine, bin.is_some())?;
    let (versions, product) = match versions(src, &t, engine)? {
        Some((set, p)) => (Some(set), Some(p)),
        None => (None, product),
    };
    let library = library(src, &t, embedded, base_dir)?;
    let build = build(src, &t, base_dir)?;
    let env = server_env(src, t.env, t.malloc.as_ref(), embedded)?;
    let port = port(src, t.port.as_ref(), embedded)?;
    if let Some(s) = &t.server_cpus
        && embedded
    {
        return Err(src.error_at(
            s.span(),
            "SQLite has no server process: its engine runs in the client threads; use client_cpus",
        ));
    }
    let own = placement(src, t.placement, t.server_cpus, t.client_cpus)?;
    Ok(LabTarget {
        placement: (!own.is_empty()).then_some(own),
        build,
        library,
        connect,
        remote,
        name,
        engine,
        settings,
        config_name,
        bin,
        env,
        args: t.args,
        version,
        product,
        versions,
        sweep: None,
        port,
        tables,
    })
}

/// A server target's environment: `env` as written, plus `LD_PRELOAD` for `malloc`; both are
/// bad input for SQLite, which runs inside dbdelta's own process.
fn server_env(
    src: &Source<'_>,
    env: Option<Spanned<BTreeMap<String, String>>>,
    malloc: Option<&Spanned<String>>,
    embedded: bool,
) -> Result<BTreeMap<String, String>, InputError> {
    let mut env = match env {
        Some(e) if embedded => {
            return Err(src.error_at(
                e.span(),
                "env is for server engines; SQLite runs inside dbdelta's own process",
            ));
        }
        Some(e) => e.into_inner(),
        None => BTreeMap::new(),
    };
    if let Some(m) = malloc {
        if embedded {
            return Err(src.error_at(
                m.span(),
                "malloc preloads an allocator into a server; SQLite runs inside dbdelta",
            ));
        }
        let lib = malloc_library(m.get_ref()).map_err(|e| src.error_at(m.span(), e))?;
        env.insert("LD_PRELOAD".into(), lib);
    }
    Ok(env)
}

/// Every setting is one line, and SQLite's (sent as `PRAGMA <line>`) one statement: a `;` or a
/// line break would smuggle in a second statement or config line, so it is bad input, never
/// executed.
fn one_statement_each(
    src: &Source<'_>,
    name: &str,
    engine: EngineKind,
    settings: &[String],
) -> Result<(), InputError> {
    for s in settings {
        if s.contains('\n') || s.contains('\r') {
            return Err(src.error(format!(
                "[[target]] {name}: the setting {s:?} spans lines; write one setting per list item"
            )));
        }
        if engine.embedded() && s.contains(';') {
            return Err(src.error(format!(
                "[[target]] {name}: the SQLite setting {s:?} holds a ';': each setting is one \
                 PRAGMA (e.g. \"cache_size = -65536\"); put a second one in its own list item"
            )));
        }
    }
    Ok(())
}

/// `connect = "postgres://…"`: a running server of the target's engine. It takes none of the
/// keys that start, configure or place a server dbdelta would start.
fn connect(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
) -> Result<Option<ConnectUrl>, InputError> {
    let Some(c) = &t.connect else {
        return Ok(None);
    };
    let url = ConnectUrl::parse(c.get_ref()).map_err(|e| src.error_at(c.span(), e))?;
    if url.engine != engine || engine.embedded() {
        return Err(src.error_at(
            c.span(),
            format!(
                "connect: a {} URL on an engine = \"{}\" target; use postgres:// for postgres, \
                 mysql:// for mysql and mariadb (SQLite has no server to connect to)",
                c.get_ref().split("://").next().unwrap_or(""),
                t.engine.get_ref()
            ),
        ));
    }
    let starts: [(&str, bool); 12] = [
        ("config", t.config.is_some()),
        ("settings", !t.settings.is_empty()),
        ("bin", t.bin.is_some()),
        ("env", t.env.is_some()),
        ("args", !t.args.is_empty()),
        ("version", t.version.is_some()),
        ("versions", t.versions.is_some()),
        ("malloc", t.malloc.is_some()),
        ("port", t.port.is_some()),
        ("build", t.build.is_some()),
        ("server_cpus", t.server_cpus.is_some()),
        ("placement", t.placement.is_some()),
    ];
    if let Some((key, _)) = starts.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            c.span(),
            format!(
                "connect names a server that is already running, so {key} (which starts, \
                 configures or places a server dbdelta runs) cannot apply; remove {key} or connect"
            ),
        ));
    }
    Ok(Some(url))
}

/// `host = "ssh://user@host[:port]"`: the server runs on that host, started there by dbdelta's
/// agent over SSH (`ssh_config` names an ssh config file for it); `client = "local"` is where
/// the load runs (`"remote"`: dbdelta's agent there runs the load and the steps' clients too).
/// `bin` is then a directory on that host; a `version` is fetched here and its
/// build copied there; what compiles here (`build`) does not apply.
fn remote(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    base_dir: &Path,
) -> Result<Option<crate::engine::remote::RemoteHost>, InputError> {
    let Some(h) = &t.host else {
        for (key, v) in [("client", &t.client), ("ssh_config", &t.ssh_config)] {
            if let Some(v) = v {
                return Err(src.error_at(
                    v.span(),
                    format!("{key} is for a target on another host; add host = \"ssh://user@host\" or remove {key}"),
                ));
            }
        }
        return Ok(None);
    };
    let host = crate::engine::remote::SshHost::parse(h.get_ref())
        .map_err(|e| src.error_at(h.span(), e))?;
    if engine.embedded() {
        return Err(src.error_at(
            h.span(),
            "host: SQLite runs inside dbdelta's own process; a remote host needs a server engine (postgres, mysql, mariadb)",
        ));
    }
    let client_remote = match t.client.as_ref().map(|c| (c, c.get_ref().as_str())) {
        None | Some((_, "local")) => false,
        Some((_, "remote")) => true,
        Some((c, other)) => {
            return Err(src.error_at(
                c.span(),
                format!("client = \"{other}\": expected \"local\" (this host) or \"remote\" (the server's host)"),
            ));
        }
    };
    let here_only: [(&str, bool); 3] = [
        ("connect", t.connect.is_some()),
        ("build", t.build.is_some()),
        ("server_cpus", t.server_cpus.is_some()),
    ];
    if let Some((key, _)) = here_only.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            h.span(),
            format!(
                "host runs the server on another host, where {key} does not apply in this version; remove {key} (bin names a directory on that host)"
            ),
        ));
    }
    let ssh_config = match &t.ssh_config {
        None => None,
        Some(c) => {
            let path = base_dir.join(c.get_ref());
            if !path.is_file() {
                return Err(src.error_at(
                    c.span(),
                    format!(
                        "ssh_config \"{}\" ({}) is not a file",
                        c.get_ref(),
                        path.display()
                    ),
                ));
            }
            Some(path)
        }
    };
    Ok(Some(crate::engine::remote::RemoteHost {
        host,
        ssh_config,
        ship: None,
        client_remote,
    }))
}

/// The lab a remote target's agent plans its steps from (`client = "remote"`): this lab's
/// `[lab]` (less what places or profiles, which is this host's business) and its suites, with
/// `target` alone as a plain target of its engine (the agent starts the server from the
/// target's own spec; the lab only yields the suites' steps).
pub fn for_agent(text: &str, target: &str, engine: EngineKind) -> Result<String, String> {
    let mut doc: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
    if let Some(toml::Value::Table(lab)) = doc.get_mut("lab") {
        for key in [
            "placement",
            "server_cpus",
            "client_cpus",
            "profile",
            "profile_hz",
            "profile_call_graph",
            "instructions",
            "instruction_passes",
            "count_jobs",
            "reuse_load",
        ] {
            lab.remove(key);
        }
    }
    let mut t = toml::Table::new();
    t.insert("name".into(), target.into());
    t.insert("engine".into(), engine.name().into());
    doc.insert("target".into(), toml::Value::Array(vec![t.into()]));
    toml::to_string(&doc).map_err(|e| format!("{e}"))
}

/// The lines of a target's `config` file (relative paths start at the lab's folder) and the
/// name it was given.
fn config_settings(
    src: &Source<'_>,
    config: Option<&Spanned<String>>,
    base_dir: &Path,
) -> Result<(Vec<String>, Option<String>), InputError> {
    let Some(c) = config else {
        return Ok((Vec::new(), None));
    };
    let rel = PathBuf::from(c.get_ref());
    let path = if rel.is_absolute() {
        rel.clone()
    } else {
        base_dir.join(&rel)
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    let body = std::fs::read_to_string(&path).map_err(|e| {
        src.error_at(
            c.span(),
            format!(
                "cannot read config file \"{}\" ({}): {e}; fix the path (relative paths start at the lab file's folder)",
                c.get_ref(),
                path.display()
            ),
        )
    })?;
    Ok((
        body.lines().map(str::to_string).collect(),
        Some(c.get_ref().clone()),
    ))
}

/// A server target's `bin` directory, which must exist.
fn bin_dir(
    src: &Source<'_>,
    bin: Option<&Spanned<String>>,
    embedded: bool,
    remote: bool,
    base_dir: &Path,
) -> Result<Option<PathBuf>, InputError> {
    let Some(b) = bin else { return Ok(None) };
    if embedded {
        return Err(src.error_at(
            b.span(),
            "bin is for server engines; SQLite is the library built into dbdelta",
        ));
    }
    if remote {
        // A directory on the target's host: its agent looks for the binaries there.
        return Ok(Some(PathBuf::from(b.get_ref())));
    }
    let rel = PathBuf::from(b.get_ref());
    let path = if rel.is_absolute() {
        rel
    } else {
        base_dir.join(rel)
    };
    if !path.is_dir() {
        return Err(src.error_at(
            b.span(),
            format!(
                "bin directory \"{}\" ({}) does not exist; point bin at the folder holding the server binaries",
                b.get_ref(),
                path.display()
            ),
        ));
    }
    Ok(Some(path))
}

/// Whose fetched builds serve the engine as the target writes it (`mariadb`: MariaDB's), when
/// its family lists that name among its products.
fn fetched_product(t: &RawTarget, engine: EngineKind) -> Option<Product> {
    let written = t.engine.get_ref().as_str();
    (engine.family().products().contains(&written))
        .then(|| Product::parse(written))
        .flatten()
}

/// A target's `version` to fetch and whose builds it names.
fn version(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    has_bin: bool,
) -> Result<(Option<String>, Option<Product>), InputError> {
    let Some(v) = &t.version else {
        return Ok((None, None));
    };
    if engine.embedded() {
        return Err(src.error_at(
            v.span(),
            "version fetches server builds (postgres, mysql, mariadb); SQLite is built into dbdelta",
        ));
    }
    if has_bin {
        return Err(src.error_at(v.span(), "set either bin or version, not both"));
    }
    let product = fetched_product(t, engine).ok_or_else(|| {
        src.error_at(
            t.engine.span(),
            "version needs engine = \"postgres\", \"mysql\" (Oracle MySQL) or \"mariadb\"",
        )
    })?;
    let prefix = format!("{}@", product.id());
    let text = v.get_ref().trim();
    Ok((
        Some(text.strip_prefix(&prefix).unwrap_or(text).to_string()),
        Some(product),
    ))
}

/// A target's `versions` (a sweep) and whose builds it names; it replaces `version`, `bin`
/// and `build`.
fn versions(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
) -> Result<Option<(VersionSet, Product)>, InputError> {
    let Some(v) = &t.versions else {
        return Ok(None);
    };
    let Some(product) = fetched_product(t, engine) else {
        return Err(src.error_at(
            v.span(),
            "versions sweeps fetched server builds: it needs engine = \"postgres\", \"mysql\" (Oracle MySQL) or \"mariadb\"",
        ));
    };
    let other = [
        ("version", t.version.is_some()),
        ("bin", t.bin.is_some()),
        ("build", t.build.is_some()),
    ];
    if let Some((key, _)) = other.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            v.span(),
            format!("set either versions or {key}, not both: versions makes one target per fetched build"),
        ));
    }
    let prefix = format!("{}@", product.id());
    let bare = |s: &str| {
        s.trim()
            .strip_prefix(&prefix)
            .unwrap_or(s.trim())
            .to_string()
    };
    let set = match v.get_ref() {
        RawVersions::One(s) => VersionSet::parse(&bare(s)),
        RawVersions::Many(l) => VersionSet::list(l.iter().map(|s| bare(s)).collect()),
    };
    let set = set.ok_or_else(|| {
        let written = match v.get_ref() {
            RawVersions::One(s) => format!("\"{s}\""),
            RawVersions::Many(l) => format!("{l:?}"),
        };
        src.error_at(
            v.span(),
            format!(
                "versions = {written} is not {}; for one build write version = \"…\"",
                sweep::SYNTAX
            ),
        )
    })?;
    Ok(Some((set, product)))
}

/// A SQLite target's `library`, which must exist.
fn library(
    src: &Source<'_>,
    t: &RawTarget,
    embedded: bool,
    base_dir: &Path,
) -> Result<Option<PathBuf>, InputError> {
    let Some(l) = &t.library else { return Ok(None) };
    if !embedded {
        return Err(src.error_at(
            l.span(),
            "library is for SQLite targets (a libsqlite3.so to load); a server target takes bin",
        ));
    }
    let path = base_dir.join(l.get_ref());
    if !path.is_file() {
        return Err(src.error_at(
            l.span(),
            format!(
                "library \"{}\" ({}) does not exist; give the path of a libsqlite3.so (`dbdelta build sqlite` prints one)",
                l.get_ref(),
                path.display()
            ),
        ));
    }
    Ok(Some(path))
}

/// A target's `build = {…}`: what to compile, checked without compiling anything.
fn build(
    src: &Source<'_>,
    t: &RawTarget,
    base_dir: &Path,
) -> Result<Option<BuildRequest>, InputError> {
    let Some(b) = &t.build else { return Ok(None) };
    let err = |m: String| src.error_at(b.span(), m);
    if t.bin.is_some() || t.version.is_some() || t.library.is_some() {
        return Err(err(
            "build compiles the target's binaries: remove bin, version and library from it".into(),
        ));
    }
    let engine = BuildEngine::parse(t.engine.get_ref())
        .filter(|_| t.engine.get_ref() != "mysql")
        .ok_or_else(|| {
            err(format!(
                "build: dbdelta builds postgres, sqlite and mariadb from source, not {}",
                t.engine.get_ref()
            ))
        })?;
    let raw = b.get_ref();
    let source = raw.source.as_ref().map(|s| match s.contains('/') {
        true => base_dir.join(s).display().to_string(),
        false => s.clone(),
    });
    let extra = Flags {
        cflags: raw.cflags.clone().unwrap_or_default(),
        ldflags: raw.ldflags.clone().unwrap_or_default(),
    };
    let training = Training {
        suite: raw.train.clone(),
        scale: raw.train_scale.clone(),
    };
    BuildRequest::new(engine, source, &raw.variant, extra, training)
        .map(Some)
        .map_err(|e| err(format!("{}: {}", e.key, e.message)))
}

/// A server target's fixed `port`.
fn port(
    src: &Source<'_>,
    p: Option<&Spanned<i64>>,
    embedded: bool,
) -> Result<Option<u16>, InputError> {
    let Some(p) = p else { return Ok(None) };
    if embedded {
        return Err(src.error_at(p.span(), "port is for server engines"));
    }
    u16::try_from(*p.get_ref())
        .ok()
        .filter(|p| *p >= 1024)
        .map(Some)
        .ok_or_else(|| src.error_at(p.span(), "port must be from 1024 to 65535"))
}

/// `storage_engine`, `table_options` and `index_options` of a MySQL/MariaDB target.
fn table_ddl(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    oracle: bool,
) -> Result<TableDdl, InputError> {
    let keys = [
        ("storage_engine", &t.storage_engine),
        ("table_options", &t.table_options),
        ("index_options", &t.index_options),
    ];
    let mut out = TableDdl::default();
    for (key, value) in keys {
        let Some(v) = value else { continue };
        if !engine.family().table_options() {
            return Err(src.error_at(
                v.span(),
                format!("{key} is for MySQL/MariaDB targets (engine = \"mysql\" or \"mariadb\")"),
            ));
        }
        let text = v.get_ref().trim();
        if text.is_empty() || text.contains(';') || text.contains('\n') {
            return Err(src.error_at(
                v.span(),
                format!(
                    "{key} must be one line of DDL options without ';', e.g. {}",
                    match key {
                        "table_options" => "\"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8\"",
                        "index_options" => "\"COMMENT 'cfname=cf1'\"",
                        _ => "\"rocksdb\"",
                    }
                ),
            ));
        }
        match key {
            "storage_engine" => {
                let name = match text.to_ascii_lowercase().as_str() {
                    "innodb" => "InnoDB",
                    "rocksdb" if oracle => {
                        return Err(src.error_at(
                            v.span(),
                            "Oracle MySQL builds have no MyRocks; use engine = \"mariadb\" (Debian's MariaDB with mariadb-plugin-rocksdb)",
                        ));
                    }
                    "rocksdb" => "ROCKSDB",
                    other => {
                        return Err(src.error_at(
                            v.span(),
                            format!(
                                "unknown storage_engine \"{other}\"; use \"innodb\" or \"rocksdb\""
                            ),
                        ));
                    }
                };
                out.engine = Some(name.to_string());
            }
            "table_options" => out.table_options = Some(text.to_string()),
            _ => out.index_options = Some(text.to_string()),
        }
    }
    Ok(out)
}

/// The Debian library behind `malloc = "jemalloc" | "tcmalloc" | "mimalloc"`.
fn malloc_library(name: &str) -> Result<String, String> {
    let (file, package) = match name {
        "jemalloc" => ("libjemalloc.so.2", "libjemalloc2"),
        "tcmalloc" => ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
        "mimalloc" => ("libmimalloc.so.2", "libmimalloc2.0"),
        other => {
            return Err(format!(
                "unknown allocator \"{other}\"; use jemalloc, tcmalloc or mimalloc, or set env LD_PRELOAD"
            ));
        }
    };
    let path = Path::new("/usr/lib/x86_64-linux-gnu").join(file);
    if path.is_file() {
        Ok(path.display().to_string())
    } else {
        Err(format!(
            "malloc = \"{name}\" needs {} which is not installed; apt-get install {package}",
            path.display()
        ))
    }
}

/// Read and parse a lab file.
pub fn load(path: &Path) -> Result<Lab, InputError> {
    let bytes = std::fs::read(path).map_err(|e| {
        InputError(format!(
            "cannot read lab file {}: {e}; check the path",
            path.display()
        ))
    })?;
    let text = utf8(&bytes, &path.display().to_string())?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, &path.display().to_string(), base)
}

/// A lab file's bytes as text; otherwise where it stops being UTF-8 (a UTF-16 file by its
/// byte-order mark), and the fix.
fn utf8(bytes: &[u8], origin: &str) -> Result<String, InputError> {
    let e = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(text.to_string()),
        Err(e) => e,
    };
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(InputError(format!(
            "{origin}: is UTF-16 text, a lab file must be UTF-8; save it as UTF-8"
        )));
    }
    let good = &bytes[..e.valid_up_to()];
    let line = good.iter().filter(|b| **b == b'\n').count() + 1;
    let column = good.iter().rev().take_while(|b| **b != b'\n').count() + 1;
    Err(InputError(format!(
        "{origin}:{line}: is not UTF-8 text (byte 0x{:02X} at column {column}; Latin-1?); save the lab as UTF-8",
        bytes[e.valid_up_to()]
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::sysbench::SysbenchConfig;

    #[test]
    fn a_lab_that_is_not_utf8_says_where_and_what_to_do() {
        let e = utf8(b"[lab]\nname = \"caf\xe9\"\n", "lab.toml")
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "lab.toml:2: is not UTF-8 text (byte 0xE9 at column 12; Latin-1?); save the lab as UTF-8"
        );
        let e = utf8(b"\xff\xfe[\x00l\x00", "lab.toml").unwrap_err().0;
        assert!(e.contains("is UTF-16 text"), "{e}");
        assert_eq!(utf8(b"[lab]", "x").unwrap(), "[lab]");
    }

    fn err(text: &str) -> String {
        parse(text, "lab.toml", Path::new(".")).unwrap_err().0
    }

    const OK: &str = r#"
[lab]
name = "t"

[[target]]
name = "a"
engine = "sqlite"
settings = ["synchronous = NORMAL"]

[suite.sysbench]
rows = 1000
read_secs = 0.5
"#;

    #[test]
    fn count_jobs_needs_instructions_and_a_count_from_1_to_64() {
        let with =
            |extra: &str| OK.replacen("name = \"t\"\n", &format!("name = \"t\"\n{extra}"), 1);
        let lab = parse(
            &with("instructions = true\ncount_jobs = 2\n"),
            "lab.toml",
            Path::new("."),
        );
        assert_eq!(lab.unwrap().instructions.unwrap().jobs, 2);
        let e = err(&with("count_jobs = 2\n"));
        assert!(e.contains("count_jobs needs instructions = true"), "{e}");
        let e = err(&with("instructions = true\ncount_jobs = 0\n"));
        assert!(e.contains("count_jobs must be a number"), "{e}");
    }

    #[test]
    fn parses_a_lab_with_defaults() {
        let lab = parse(OK, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.repeats, 1);
        assert_eq!(lab.order, Order::Interleaved);
        assert_eq!(lab.clients, vec![1]);
        assert_eq!(lab.suite::<SysbenchConfig>().unwrap().rows, 1000);
        assert_eq!(lab.suite::<SysbenchConfig>().unwrap().read_secs, 0.5);
        assert_eq!(lab.suite::<SysbenchConfig>().unwrap().write_secs, 90.0);
        assert!(!lab.suite::<SysbenchConfig>().unwrap().pre);
        let lab = parse(
            &OK.replace("read_secs = 0.5", "read_secs = 0.5\npre = true"),
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        assert!(
            lab.suite::<SysbenchConfig>().unwrap().pre,
            "pre = true is accepted"
        );
        assert_eq!(
            lab.targets[0].settings,
            vec!["synchronous = NORMAL".to_string()]
        );
    }

    #[test]
    fn unknown_key_names_file_line_section_and_key() {
        let e = err(&OK.replace("rows = 1000", "rowz = 1000"));
        assert!(
            e.starts_with("lab.toml:11: [suite.sysbench] unknown field `rowz`"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = err(&OK.replace("rows = 1000", "rows = \"many\""));
        assert!(
            e.starts_with("lab.toml:11: [suite.sysbench] rows: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_target_names_are_rejected() {
        let text = format!("{OK}\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n");
        let e = err(&text);
        assert!(
            e.contains(":15: [[target]] name: target name \"a\" is used twice (first at line 6)"),
            "{e}"
        );
    }

    #[test]
    fn missing_config_file_is_named() {
        let e = err(&OK.replace("settings = [", "config = \"nope.conf\"\nsettings = ["));
        assert!(
            e.starts_with("lab.toml:8: [[target]] config: cannot read config file \"nope.conf\""),
            "{e}"
        );
    }

    #[test]
    fn unknown_engine_and_bad_clients() {
        let e = err(&OK.replace("engine = \"sqlite\"", "engine = \"oracle\""));
        assert!(
            e.contains("unknown engine \"oracle\"; this version supports: sqlite")
                && e.contains("mariadb"),
            "{e}"
        );
        let e = err(&OK.replace("name = \"t\"", "name = \"t\"\nclients = [0]"));
        assert!(e.starts_with("lab.toml:4: [lab] clients:"), "{e}");
    }

    fn target(lines: &str) -> Result<LabTarget, String> {
        let text = format!("[lab]\nname = \"t\"\n\n[[target]]\nname = \"a\"\n{lines}\n");
        parse(&text, "lab.toml", Path::new("."))
            .map(|mut l| l.targets.remove(0))
            .map_err(|e| e.0)
    }

    #[test]
    fn versions_fetch_postgres_mysql_and_mariadb() {
        let t = target("engine = \"mysql\"\nversion = \"mysql@8.0\"").unwrap();
        assert_eq!(t.version.as_deref(), Some("8.0"));
        assert_eq!(t.product, Some(Product::Mysql));
        let t = target("engine = \"mariadb\"\nversion = \"10.2\"").unwrap();
        assert_eq!(t.product, Some(Product::Mariadb));
        assert_eq!(t.engine.name(), "mysql");
        let t = target("engine = \"postgres\"\nversion = \"postgres@17\"").unwrap();
        assert_eq!(
            (t.version.as_deref(), t.product),
            (Some("17"), Some(Product::Postgres))
        );
        let e = target("engine = \"sqlite\"\nversion = \"3\"").unwrap_err();
        assert!(e.contains("SQLite is built into dbdelta"), "{e}");
    }

    /// `versions` (a sweep) is kept unexpanded here: the plan expands it from the registries.
    #[test]
    fn versions_take_a_pattern_a_range_or_a_list_and_exclude_version_bin_and_build() {
        use crate::provision::sweep::VersionSet;
        let t = target("engine = \"postgres\"\nversions = \"postgres@16.*\"").unwrap();
        assert_eq!(t.versions, Some(VersionSet::Prefix("16".into())));
        assert_eq!((t.product, t.version), (Some(Product::Postgres), None));
        let t = target("engine = \"mariadb\"\nversions = \"10.2..10.5\"").unwrap();
        assert_eq!(
            t.versions,
            Some(VersionSet::Range("10.2".into(), "10.5".into()))
        );
        assert_eq!(t.product, Some(Product::Mariadb));
        let t = target("engine = \"mysql\"\nversions = [\"5.7\", \"8.0.31\"]").unwrap();
        assert_eq!(
            t.versions,
            Some(VersionSet::List(vec!["5.7".into(), "8.0.31".into()]))
        );
        let e = target("engine = \"postgres\"\nversions = \"16\"").unwrap_err();
        assert_eq!(
            e,
            "lab.toml:7: [[target]] versions: versions = \"16\" is not a pattern \"16.*\", an inclusive range \"16.2..16.8\" or a list [\"16.2\", \"16.9\"]; for one build write version = \"…\""
        );
        let e = target("engine = \"postgres\"\nversion = \"16\"\nversions = \"16.*\"").unwrap_err();
        assert!(
            e.contains("set either versions or version, not both"),
            "{e}"
        );
        let e = target("engine = \"postgres\"\nbin = \"/\"\nversions = \"16.*\"").unwrap_err();
        assert!(e.contains("set either versions or bin, not both"), "{e}");
        let e = target("engine = \"sqlite\"\nversions = \"3.*\"").unwrap_err();
        assert!(e.contains("versions sweeps fetched server builds"), "{e}");
    }

    #[test]
    fn table_ddl_keys_are_checked() {
        let t = target(
            "engine = \"mariadb\"\nstorage_engine = \"RocksDB\"\nindex_options = \"COMMENT 'cfname=cf1'\"",
        )
        .unwrap();
        assert_eq!(t.tables.engine.as_deref(), Some("ROCKSDB"));
        assert!(t.tables.rocksdb());
        assert_eq!(
            t.tables.index_options.as_deref(),
            Some("COMMENT 'cfname=cf1'")
        );
        let t = target(
            "engine = \"mysql\"\nversion = \"8.0\"\ntable_options = \"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8\"",
        )
        .unwrap();
        assert_eq!(
            t.tables.table_options.as_deref(),
            Some("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
        );
        let e = target("engine = \"mysql\"\nversion = \"8.0\"\nstorage_engine = \"rocksdb\"")
            .unwrap_err();
        assert!(e.contains("Oracle MySQL builds have no MyRocks"), "{e}");
        let e = target("engine = \"mariadb\"\nstorage_engine = \"myisam\"").unwrap_err();
        assert!(e.contains("unknown storage_engine \"myisam\""), "{e}");
        let e = target("engine = \"postgres\"\ntable_options = \"x\"").unwrap_err();
        assert!(
            e.contains("table_options is for MySQL/MariaDB targets"),
            "{e}"
        );
        let e = target("engine = \"mysql\"\ntable_options = \"x; DROP TABLE y\"").unwrap_err();
        assert!(e.contains("without ';'"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn remote_targets_take_an_ssh_host_and_nothing_that_only_works_here() {
        let pg = |extra: &str| {
            OK.replace(
                "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
                &format!("engine = \"postgres\"\nhost = \"ssh://bench@db1:2222\"{extra}"),
            )
        };
        let lab = parse(
            &pg("\nbin = \"/opt/pg/bin\"\nclient = \"local\""),
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        let r = lab.targets[0].remote.as_ref().unwrap();
        assert_eq!(r.host.to_string(), "ssh://bench@db1:2222");
        // bin names a directory on that host: not looked for here.
        assert_eq!(
            lab.targets[0].bin.as_deref(),
            Some(Path::new("/opt/pg/bin"))
        );
        assert_eq!(
            err(&pg(
                "\nbuild = { source = \"postgresql-15\", variant = \"o2\" }"
            )),
            "lab.toml:8: [[target]] host: host runs the server on another host, where build does not apply in this version; remove build (bin names a directory on that host)"
        );
        let lab = parse(&pg("\nclient = \"remote\""), "lab.toml", Path::new(".")).unwrap();
        assert!(lab.targets[0].remote.as_ref().unwrap().client_remote);
        let e = err(&pg("\nclient = \"there\""));
        assert!(e.contains("client = \"there\": expected \"local\""), "{e}");
        // The agent's lab: the suites, this target alone, nothing that places or profiles.
        let text = pg("\nclient = \"remote\"").replace("[lab]\n", "[lab]\nplacement = \"split\"\n");
        let agent = for_agent(&text, "a", EngineKind::parse("postgres").unwrap()).unwrap();
        let lab = parse(&agent, "agent", Path::new(".")).unwrap();
        assert_eq!(lab.targets.len(), 1);
        assert!(lab.targets[0].remote.is_none() && lab.placement.shorthand.is_none());
        assert_eq!(lab.suite::<SysbenchConfig>().cloned().unwrap().rows, 1000);
        let e = err(&pg("\nssh_config = \"missing\""));
        assert!(e.contains("ssh_config \"missing\""), "{e}");
        let e = err(&pg("").replace("ssh://bench@db1:2222", "ssh://u:secret@db1"));
        assert!(e.contains("a password does not belong in the lab"), "{e}");
        let e = err(&OK.replace("settings = [", "host = \"ssh://h\"\nsettings = ["));
        assert!(
            e.contains("SQLite runs inside dbdelta's own process"),
            "{e}"
        );
        let e = err(&OK.replace("settings = [", "client = \"local\"\nsettings = ["));
        assert!(e.contains("client is for a target on another host"), "{e}");
    }

    #[test]
    fn connect_targets_take_a_postgres_url_and_nothing_that_starts_a_server() {
        let pg = |extra: &str| {
            OK.replace(
                "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
                &format!(
                    "engine = \"postgres\"\nconnect = \"postgres://u@127.0.0.1:6000/db\"{extra}"
                ),
            )
        };
        let lab = parse(&pg(""), "lab.toml", Path::new(".")).unwrap();
        let url = lab.targets[0].connect.as_ref().unwrap();
        assert_eq!((url.user.as_str(), url.port), ("u", 6000));
        assert_eq!(
            err(&pg("\nbin = \"/usr/lib/postgresql/15/bin\"")),
            "lab.toml:8: [[target]] connect: connect names a server that is already running, so bin (which starts, configures or places a server dbdelta runs) cannot apply; remove bin or connect"
        );
        let e = err(&pg("").replace("postgres://u@127.0.0.1:6000/db", "mysql://root@h/db"));
        assert!(
            e.contains("a mysql URL on an engine = \"postgres\" target"),
            "{e}"
        );
        let e = err(&pg("").replace("postgres://u@127.0.0.1:6000/db", "postgres://h:x/db"));
        assert!(
            e.starts_with("lab.toml:8: [[target]] connect: connect = \"postgres://h:x/db\": port"),
            "{e}"
        );
        let my = OK.replace(
            "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
            "engine = \"mariadb\"\nconnect = \"mysql://root@127.0.0.1/db\"",
        );
        let lab = parse(&my, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.targets[0].connect.as_ref().unwrap().database, "db");
        // dbdelta's MySQL client logs in with a password too.
        let lab = parse(&my.replace("root@", "root:pw@"), "lab.toml", Path::new(".")).unwrap();
        let url = lab.targets[0].connect.as_ref().unwrap();
        assert_eq!(url.password.as_deref(), Some("pw"));
    }

    #[test]
    fn a_lab_without_its_section_and_settings_with_second_statements_are_bad_input() {
        let e = err("[[target]]\nname = \"a\"\nengine = \"sqlite\"\n");
        assert_eq!(
            e,
            "lab.toml: the [lab] section is missing: start the file with [lab] and name = \"…\""
        );
        let e = err(&OK.replace(
            "settings = [\"synchronous = NORMAL\"]",
            "settings = [\"synchronous = NORMAL; DROP TABLE sbtest1\"]",
        ));
        assert!(
            e.contains("[[target]] a: the SQLite setting") && e.contains("holds a ';'"),
            "{e}"
        );
        let e = err(&OK.replace(
            "settings = [\"synchronous = NORMAL\"]",
            "settings = [\"synchronous = NORMAL\\nfoo = 1\"]",
        ));
        assert!(e.contains("spans lines"), "{e}");
    }

    #[test]
    fn profile_keys_need_profile_and_are_checked() {
        let with = |v: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\n{v}"));
        let lab = parse(&with(""), "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.profile, None);
        let lab = parse(&with("profile = true"), "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.profile, Some(ProfileSettings::default()));
        let text = with("profile = true\nprofile_hz = 499\nprofile_call_graph = \"fp\"");
        let lab = parse(&text, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(
            lab.profile,
            Some(ProfileSettings {
                hz: 499,
                call_graph: CallGraph::Fp
            })
        );
        assert_eq!(
            err(&with("profile_hz = 99")),
            "lab.toml:4: [lab] profile_hz: profile_hz needs profile = true"
        );
        assert_eq!(
            err(&with("profile = true\nprofile_hz = 0")),
            "lab.toml:5: [lab] profile_hz: profile_hz must be a sampling rate from 1 to 10000 per second, e.g. 99, not 0"
        );
        assert_eq!(
            err(&with("profile = true\nprofile_call_graph = \"lbr\"")),
            "lab.toml:5: [lab] profile_call_graph: profile_call_graph must be \"dwarf\" or \"fp\", not \"lbr\""
        );
        assert!(
            err(&with("profile = \"yes\"")).starts_with("lab.toml:4: [lab] profile: invalid type")
        );
    }

    #[test]
    fn repeats_auto_has_bounds_and_clear_errors() {
        let with = |keys: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\n{keys}"));
        let lab = parse(&with("repeats = \"auto\""), "lab.toml", Path::new(".")).unwrap();
        assert_eq!((lab.repeats, lab.auto), (3, Some(AutoRepeats::DEFAULT)));
        assert_eq!(AutoRepeats::DEFAULT.looks(), 6);
        let keys = "repeats = \"auto\"\nmin_repeats = 2\nmax_repeats = 4";
        let lab = parse(&with(keys), "lab.toml", Path::new(".")).unwrap();
        assert_eq!(
            (lab.repeats, lab.auto),
            (2, Some(AutoRepeats { first: 2, max: 4 }))
        );
        assert_eq!(lab.auto.unwrap().looks(), 3);
        // A first round count above the default bound raises the bound with it.
        let lab = parse(
            &with("repeats = \"auto\"\nmin_repeats = 10"),
            "x",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(lab.auto, Some(AutoRepeats { first: 10, max: 10 }));
        assert_eq!(
            err(&with("repeats = \"often\"")),
            "lab.toml:4: [lab] repeats: repeats must be a whole number from 1 to 1000, or \"auto\" (repeat undecided steps)"
        );
        // 2^32 wrapped to a u32 would be 0; the range is stated whatever the number.
        for n in ["4294967296", "4294967295", "1001", "0", "-1"] {
            let e = err(&with(&format!("repeats = {n}")));
            assert!(e.contains("from 1 to 1000"), "{n}: {e}");
        }
        assert_eq!(
            parse(&with("repeats = 1000"), "x", Path::new("."))
                .unwrap()
                .repeats,
            1000
        );
        assert!(err(&with("repeats = 3\nmax_repeats = 5")).contains("go with repeats = \"auto\""));
        let e = err(&with("repeats = \"auto\"\nmin_repeats = 1"));
        assert!(
            e.contains("min_repeats") && e.contains("from 2 to 50"),
            "{e}"
        );
        let e = err(&with(
            "repeats = \"auto\"\nmin_repeats = 4\nmax_repeats = 3",
        ));
        assert!(
            e.contains("max_repeats") && e.contains("from 4 to 50"),
            "{e}"
        );
    }

    #[test]
    fn min_effect_is_a_fraction_with_a_default() {
        let lab = parse(OK, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.min_effect, 0.02);
        let with = |v: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\nmin_effect = {v}"));
        let lab = parse(&with("0.05"), "lab.toml", Path::new(".")).unwrap();
        assert_eq!(lab.min_effect, 0.05);
        let e = err(&with("2"));
        assert_eq!(
            e,
            "lab.toml:4: [lab] min_effect: min_effect must be a fraction from 0 up to 1, e.g. 0.02 for 2%, not 2"
        );
        assert!(err(&with("\"2%\"")).starts_with("lab.toml:4: [lab] min_effect: invalid type"));
    }

    #[test]
    fn placement_keys_in_lab_and_targets() {
        let text = OK.replace(
            "name = \"t\"",
            "name = \"t\"\nplacement = \"split\"\nclient_cpus = \"1\"",
        ) + "\n[[target]]\nname = \"b\"\nengine = \"sqlite\"\nplacement = \"shared\"\n";
        let lab = parse(&text, "lab.toml", Path::new(".")).unwrap();
        let (short, at) = lab.placement.shorthand.clone().unwrap();
        assert_eq!(
            (short, at.as_str()),
            (Shorthand::Split, "lab.toml:4: [lab] placement")
        );
        let (client, at) = lab.placement.client.clone().unwrap();
        assert_eq!(
            (client.to_string(), at.as_str()),
            ("1".into(), "lab.toml:5: [lab] client_cpus")
        );
        assert_eq!(lab.targets[0].placement, None, "the [lab] keys apply");
        let own = lab.targets[1].placement.clone().unwrap();
        assert_eq!(own.shorthand.unwrap().0, Shorthand::Shared);
        assert!(
            own.client.is_none(),
            "a target's keys replace the lab's as a whole"
        );

        let e = err(&OK.replace("name = \"t\"", "name = \"t\"\nplacement = \"pinned\""));
        assert_eq!(
            e,
            "lab.toml:4: [lab] placement: placement must be one of \"os\", \"shared\", \"split\", not \"pinned\""
        );
        let e = err(&OK.replace(
            "engine = \"sqlite\"",
            "engine = \"postgres\"\nclient_cpus = \"0-\"",
        ));
        assert!(
            e.starts_with("lab.toml:8: [[target]] client_cpus: \"0-\" is not a CPU list"),
            "{e}"
        );
        let e = err(&OK.replace(
            "engine = \"sqlite\"",
            "engine = \"sqlite\"\nserver_cpus = \"0\"",
        ));
        assert!(
            e.starts_with("lab.toml:8: [[target]] server_cpus: SQLite has no server process"),
            "{e}"
        );
    }
}
