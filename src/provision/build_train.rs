//! The training run of a PGO build: a lab with one target (the instrumented build) and one
//! suite at a named scale, run by `dbdelta run` in a child process, so the instrumented code
//! writes its profile when the processes that ran it exit (the server's processes at shutdown;
//! dbdelta's own process for an embedded engine's library).
//!
//! Owns the training lab's text and running it; the lab, its results store and the run's log
//! stay in the build's `training/` directory, named in reports. Must not: run a suite in this
//! process (the runner is a higher layer) or decide what the profile is used for (`build`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::build_spec::Training;
use crate::engine::common::process::Listed;
use crate::engine::common::recipe::Recipe;

/// Write the training lab under `entry/training/` and run it against the instrumented build.
pub fn train(
    recipe: &dyn Recipe,
    training: &Training,
    bin: &Path,
    library: Option<&Path>,
    entry: &Path,
) -> Result<()> {
    let dir = entry.join("training");
    std::fs::create_dir_all(&dir)?;
    let lab = dir.join("lab.toml");
    std::fs::write(&lab, lab_text(recipe, training, bin, library))?;
    let log = dir.join("run.log");
    let out = std::fs::File::create(&log)?;
    let exe = std::env::current_exe().context("cannot find dbdelta's own binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--store")
        .arg(dir.join("results.db"))
        .arg("run")
        .arg(&lab)
        .arg("--workdir")
        .arg(dir.join("work"))
        .args(["--format", "text"]);
    if training.scale == "quick" {
        cmd.arg("--quick");
    }
    // The profile files are shared by every process that runs the instrumented code: dbdelta
    // itself (root, e.g. the server program's `--version`) and the server user. The first to exit creates
    // each file; with root's umask it would be read-only to the server user, whose counts
    // would then be lost ("profiling: … Cannot open"). No umask: anyone may update them.
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let mut child = Listed::spawn(&mut cmd).context("cannot start the training run")?;
    let status = loop {
        if let Some(status) = child.exited()? {
            break status;
        }
        if crate::signals::interrupted() {
            // The training run stops its server and exits on SIGTERM, as any run does.
            child.stop(rustix::process::Signal::TERM, Duration::from_secs(60));
            bail!(
                "the PGO training run was stopped by {} (log: {}); the same build trains again",
                crate::signals::first().map_or("a signal", crate::signals::name),
                log.display()
            );
        }
        std::thread::sleep(crate::signals::POLL);
    };
    if !status.success() {
        bail!(
            "the PGO training run ({}) failed ({status}); last lines of {}:\n{}",
            training.describe(),
            log.display(),
            crate::sys::log_tail(&log, 15)
        );
    }
    Ok(())
}

/// One target, one suite: the suite's training table, which `small` sizes to finish in a few
/// minutes on two CPUs. The target's lines are the recipe's ([`Recipe::training_target`]).
fn lab_text(recipe: &dyn Recipe, t: &Training, bin: &Path, library: Option<&Path>) -> String {
    let target = recipe.training_target(bin, library);
    let suite = &t.section;
    format!(
        "# PGO training run written by `dbdelta build`.\n[lab]\nname = \"PGO training: {}\"\nrepeats = 1\nclients = [1]\n\n[[target]]\nname = \"instrumented\"\n{target}\n\n{suite}",
        t.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_labs_parse() {
        for suite in ["sysbench", "insert", "linkbench"] {
            for scale in Training::SCALES {
                let t = Training {
                    suite: suite.into(),
                    scale: scale.into(),
                    section: crate::suites::pgo_training(suite, scale).unwrap(),
                };
                let text = lab_text(
                    crate::engine::recipe("postgres").unwrap(),
                    &t,
                    Path::new("/tmp"),
                    None,
                );
                crate::plan::lab::parse(&text, "training", Path::new("."))
                    .unwrap_or_else(|e| panic!("{suite}/{scale}: {e}\n{text}"));
            }
        }
    }
}
