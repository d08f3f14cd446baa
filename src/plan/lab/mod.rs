//! Lab files: TOML text → a validated [`Lab`], or one line naming the file, line and key at fault.
//!
//! Owns the lab file's schema (docs/lab.md) for `[lab]` and `[[target]]`, and every check that
//! needs only the file: unknown keys, wrong types, duplicate target names, unknown engines,
//! unreadable config files. Each `[suite.NAME]` table goes to the suite the registry names so
//! ([`crate::suites`]), which owns its keys and checks. Must not: look at the machine, apply CLI
//! flags (that is `plan`), know any suite's keys, or start anything.
//!
//! The folder: `raw` (the serde types), `keys` (`[lab]`), `target` (`[[target]]`), `build`
//! (where a build comes from), `remote` (`connect` and `host`); this file the checked [`Lab`]
//! and the entry points [`parse`] and [`load`].

mod build;
mod keys;
mod raw;
mod remote;
mod target;
#[cfg(test)]
mod tests;

pub use remote::for_agent;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cpus::PlacementSpec;
use crate::engine::connect::ConnectUrl;
use crate::engine::{EngineKind, TableDdl};
use crate::error::InputError;
use crate::profiler::ProfileSettings;
use crate::provision::Product;
use crate::provision::build::BuildRequest;
use crate::provision::sweep::VersionSet;
use crate::suites::{LabText as Source, SuiteConfig};
use keys::{
    clients, instructions, min_effect, order, placement, profile, repeats, secret_env,
    suite_sections,
};
use raw::RawLab;
pub use target::GoneConfig;
use target::targets;

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
    /// `instruction_passes`/`count_jobs` in a lab without `instructions = true`: they apply
    /// when `--instructions` counts; with where they stand, for the error when nothing does.
    pub counting_keys: Option<(crate::counter::Counting, String)>,
    /// `reuse_load = true`: each cell starts from a saved copy of its load when one matches
    /// (`runner::snapshot`), and saves one when none does.
    pub reuse_load: bool,
    /// `secret_env = [...]`: environment names whose values are secrets besides those named
    /// like one (`engine::common::secret_env`); never shown or stored.
    pub secret_env: Vec<String>,
}

/// Parse and validate a lab. `base_dir` resolves relative `config` paths (the lab file's folder).
pub fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Lab, InputError> {
    parse_with(text, origin, base_dir, GoneConfig::Fail)
}

/// [`parse`], where a `config =` file that is gone is read as empty (`GoneConfig::Empty`): a
/// stored run's lab planned again by `explain`, which takes the target's stored lines instead.
pub fn parse_with(
    text: &str,
    origin: &str,
    base_dir: &Path,
    gone: GoneConfig,
) -> Result<Lab, InputError> {
    let src = Source::new(text, origin);
    unknown_keys(&src)?;
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
    let secret_env = secret_env(&src, lab.secret_env.as_ref())?;
    let profile = profile(&src, &lab)?;
    let (instructions, counting_keys) = instructions(&src, &lab)?;
    let placement = placement(&src, lab.placement, lab.server_cpus, lab.client_cpus)?;
    let targets = targets(&src, raw.targets, (base_dir, gone))?;
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
        counting_keys,
        reuse_load: lab.reuse_load.unwrap_or(false),
        secret_env,
    })
}

/// Every key of `[lab]`, each `[[target]]` and its `build`, and the top level that the lab's
/// types do not know, all in one error; a file TOML cannot read is left to serde's message.
fn unknown_keys(src: &Source<'_>) -> Result<(), InputError> {
    use crate::suites::known_keys::{self as known, table, unknown_in};
    let Ok(doc) = toml::de::DeTable::parse(src.text()) else {
        return Ok(());
    };
    let doc = doc.into_inner();
    let mut found = unknown_in(&doc, known::of::<RawLab>());
    if let Some(lab) = doc.get("lab").and_then(table) {
        found.extend(unknown_in(lab, known::of::<raw::RawLabSection>()));
    }
    let targets = match doc.get("target").map(|t| t.get_ref()) {
        Some(toml::de::DeValue::Array(items)) => items.iter().filter_map(table).collect(),
        _ => Vec::new(),
    };
    for t in targets {
        found.extend(unknown_in(t, known::of::<raw::RawTarget>()));
        if let Some(build) = t.get("build").and_then(table) {
            found.extend(unknown_in(build, known::of::<raw::RawBuild>()));
        }
    }
    known::error(src, found).map_or(Ok(()), Err)
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
