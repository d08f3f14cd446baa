//! What the lab-reading fuzz targets share: the scratch directory a lab's relative paths
//! resolve in, the guard that keeps a fuzzed lab from reading this machine's files, and the
//! dry-run planning that follows a parsed lab (`dbdelta run --dry-run` / `dbdelta plan`).
//!
//! Must not: start a server, open a store, create a work directory or fetch anything; the
//! plan is made against a fixed two-CPU machine, so the host's CPUs change nothing.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use dbdelta::cpus::Machine;
use dbdelta::plan::{self, RunOptions, lab::Lab};

/// The directory relative paths of the lab resolve in, made once per process.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dbdelta-fuzz-lab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        std::fs::write(
            dir.join("pg.conf"),
            "shared_buffers = '128MB'\n# a comment\nwork_mem = 4MB; x\n",
        )
        .expect("a config file in the scratch directory");
        dir
    })
}

/// False when a `[[target]]` names a `config` that could be read from outside the scratch
/// directory. Text that is not TOML is parsed as it is: the parser rejects it before it
/// reads any file.
#[allow(dead_code)] // `lab_numbers` writes no `config`.
pub fn configs_stay_inside(text: &str) -> bool {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return true;
    };
    let Some(targets) = doc.get("target").and_then(|t| t.as_array()) else {
        return true;
    };
    targets
        .iter()
        .all(|t| match t.get("config").and_then(|c| c.as_str()) {
            None => true,
            Some(path) => Path::new(path)
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir)),
        })
}

/// Plan `lab` with `opts` as a dry run does, and use everything the dry run prints: the
/// description, the cells, the time and disk estimates. An `Err` is a fine answer.
pub fn dry_run(lab: Lab, opts: &RunOptions) {
    let Ok(plan) = plan::plan_on(lab, opts, Machine::simple(2)) else {
        return;
    };
    // `describe` looks up a `build` target in the build cache; a fuzzed lab's build request
    // names no cached build, and the lookup only reads.
    let _ = plan.describe();
    let _ = plan.cells();
    let _ = plan.estimated();
    let _ = plan::preflight::disk_need(&plan);
}
