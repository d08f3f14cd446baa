//! What a build is, as the build modules share it: the engine compiled ([`BuildEngine`]), one
//! compile's flags, what a PGO build trains on, and how a failed build is reported. `build`
//! re-exports them; `build_recipe`, `build_source` and `build_train` take them from here, so no
//! two of those files import each other in a loop. Must not: build, fetch or run anything.

use std::path::PathBuf;

/// What can be built from source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildEngine {
    Postgres,
    Sqlite,
    /// MariaDB (and Oracle MySQL) with CMake.
    Mariadb,
}

impl BuildEngine {
    /// A lab's or the command line's engine name: `postgres`, `sqlite`, `mariadb` or `mysql`.
    pub fn parse(name: &str) -> Option<BuildEngine> {
        match name {
            "postgres" | "postgresql" => Some(BuildEngine::Postgres),
            "sqlite" => Some(BuildEngine::Sqlite),
            "mariadb" | "mysql" => Some(BuildEngine::Mariadb),
            _ => None,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            BuildEngine::Postgres => "postgres",
            BuildEngine::Sqlite => "sqlite",
            BuildEngine::Mariadb => "mariadb",
        }
    }

    /// The Debian source package used when no source is named (SQLite only: a server's major
    /// version is the user's choice).
    pub fn default_source(self) -> Option<&'static str> {
        match self {
            BuildEngine::Sqlite => Some("sqlite3"),
            _ => None,
        }
    }

    /// Rough wall-clock seconds of one compile stage on a 2-CPU machine, for `--dry-run` when
    /// the cache holds no earlier build of this engine.
    pub(super) fn default_stage_secs(self) -> f64 {
        match self {
            BuildEngine::Postgres => 360.0,
            BuildEngine::Sqlite => 60.0,
            BuildEngine::Mariadb => 5400.0,
        }
    }
}

/// Flags for one compile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Flags {
    pub cflags: String,
    pub ldflags: String,
}

impl Flags {
    pub(super) fn with_extra(mut self, extra: &Flags) -> Flags {
        for (mine, more) in [
            (&mut self.cflags, &extra.cflags),
            (&mut self.ldflags, &extra.ldflags),
        ] {
            if !more.is_empty() {
                if !mine.is_empty() {
                    mine.push(' ');
                }
                mine.push_str(more);
            }
        }
        self
    }
}

/// What a PGO build trains its profile on: a suite at a scale, and the lab table its training
/// run uses, which the suite gives (`suites::pgo_training`; this layer names no suite).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Training {
    /// The suite's name (`sysbench` unless the lab or `--train` says otherwise).
    pub suite: String,
    /// `quick` (the `--quick` scale) or `small`.
    pub scale: String,
    /// The `[suite.NAME]` table of the training lab.
    pub section: String,
}

impl Training {
    pub const SCALES: [&'static str; 2] = ["quick", "small"];

    pub fn describe(&self) -> String {
        format!("{} at {} scale", self.suite, self.scale)
    }
}

/// A build that failed: what, the compiler's last lines and where the whole log is.
#[derive(Debug, thiserror::Error)]
#[error("build of {what} failed at {stage}; last lines of {}:\n{tail}", log.display())]
pub struct BuildFailed {
    pub what: String,
    pub stage: String,
    pub tail: String,
    pub log: PathBuf,
}
