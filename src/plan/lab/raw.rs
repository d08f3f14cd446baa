//! The lab file as serde reads it: `[lab]`, `[[target]]` and `build` tables with every value
//! spanned, so a check can name the line. Must not: check anything beyond TOML's types (the
//! other files of `lab` do) or hold a default a check would need to know.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) lab: RawLabSection,
    #[serde(rename = "target", default)]
    pub(super) targets: Vec<RawTarget>,
    /// Each `[suite.NAME]` table is parsed by its suite (see [`suite_sections`]).
    #[serde(default, rename = "suite")]
    pub(super) _suite: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLabSection {
    pub(super) name: String,
    #[serde(default = "one")]
    pub(super) repeats: Spanned<RawRepeats>,
    #[serde(default)]
    pub(super) min_repeats: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) max_repeats: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) order: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) only: Vec<String>,
    #[serde(default)]
    pub(super) skip: Vec<String>,
    #[serde(default)]
    pub(super) clients: Option<Spanned<Vec<i64>>>,
    #[serde(default)]
    pub(super) min_effect: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) placement: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) server_cpus: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) client_cpus: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) profile: Option<Spanned<bool>>,
    #[serde(default)]
    pub(super) profile_hz: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) profile_call_graph: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) instructions: Option<Spanned<bool>>,
    #[serde(default)]
    pub(super) instruction_passes: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) instruction_starts: Option<Spanned<i64>>,
    pub(super) count_jobs: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) reuse_load: Option<bool>,
    /// Environment names whose values are secrets besides those `engine::common::secret_env`
    /// knows by name.
    #[serde(default)]
    pub(super) secret_env: Option<Spanned<Vec<String>>>,
}

/// A target's `build = { source = "postgresql-15", variant = "lto" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBuild {
    #[serde(default)]
    pub(super) source: Option<String>,
    #[serde(default = "defaults::variant")]
    pub(super) variant: String,
    #[serde(default)]
    pub(super) cflags: Option<String>,
    #[serde(default)]
    pub(super) ldflags: Option<String>,
    #[serde(default = "defaults::train")]
    pub(super) train: String,
    #[serde(default = "defaults::train_scale")]
    pub(super) train_scale: String,
}

/// `repeats = 3` or `repeats = "auto"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawRepeats {
    Count(i64),
    Word(String),
}

pub(super) fn one() -> Spanned<RawRepeats> {
    Spanned::new(0..0, RawRepeats::Count(1))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) name: Spanned<String>,
    pub(super) engine: Spanned<String>,
    #[serde(default)]
    pub(super) config: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) settings: Vec<String>,
    #[serde(default)]
    pub(super) bin: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) env: Option<Spanned<BTreeMap<String, String>>>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) version: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) versions: Option<Spanned<RawVersions>>,
    #[serde(default)]
    pub(super) malloc: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) port: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) storage_engine: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) table_options: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) index_options: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) placement: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) server_cpus: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) client_cpus: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) build: Option<Spanned<RawBuild>>,
    #[serde(default)]
    pub(super) library: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) connect: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) host: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) client: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) ssh_config: Option<Spanned<String>>,
}

/// `versions = "16.*"` (a pattern or a range) or `versions = ["16.2", "16.9"]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawVersions {
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
