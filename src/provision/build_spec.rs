//! What a build is, as the build modules share it: one compile's flags, what a PGO build trains
//! on, and how a failed build is reported (what is compiled, and how, is a family's recipe:
//! `crate::engine::common::recipe`). `build` re-exports them; `build_recipe`, `build_source` and
//! `build_train` take them from here, so no two of those files import each other in a loop.
//! Must not: build, fetch or run anything.

use std::path::PathBuf;

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
