//! `dbdelta init` (a lab file to start from) and `dbdelta clean` (data directories interrupted
//! runs left behind). Must not: remove anything dbdelta did not mark as its own.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::run::DEFAULT_WORKDIR;
use super::write::output_error;
use crate::console::{errln, outln};
use crate::error::EXIT_FAILED;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The lab file to write.
    #[arg(value_name = "FILE", default_value = "lab.toml")]
    pub file: PathBuf,
    /// The targets' engine: sqlite (default: runs anywhere, nothing to install), postgres,
    /// mysql or mariadb (Debian's packages unless you add `version` or `bin`).
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// The work directory to clean.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_WORKDIR)]
    pub workdir: PathBuf,
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Also stop a server an interrupted run left running there (else such a directory is
    /// kept and named).
    #[arg(long)]
    pub stop: bool,
    /// Also remove the saved loads of `reuse_load` in DIR (default: `<workdir>/snapshots`):
    /// only dbdelta's snapshots and its own unfinished saves; DIR and anything else in it are
    /// kept.
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub snapshots: Option<Option<PathBuf>>,
}

/// `dbdelta init [FILE]`: the commented lab, written only when FILE does not exist yet.
pub(super) fn init_cmd(args: &InitArgs) -> Result<ExitCode> {
    use crate::plan::template;
    let path = &args.file;
    let starter = match &args.engine {
        None => template::starters().first().copied(),
        Some(name) => template::starter(name),
    };
    let Some(starter) = starter else {
        let names: Vec<&str> = template::starters().iter().map(|s| s.engine).collect();
        let name = args.engine.as_deref().unwrap_or_default();
        return crate::error::input(format!(
            "init --engine {name}: no starter lab for it; use {}{}",
            crate::suggest::join(&names, "or"),
            crate::suggest::did_you_mean(name, names.iter().copied())
        ));
    };
    let text = template::lab(starter, &path.display().to_string());
    crate::output::create_new(path, text.as_bytes()).map_err(|e| match e {
        crate::output::OutputError::Exists { .. } => crate::error::InputError::new(format!(
            "init {}: the file exists and is kept; name another file, e.g. dbdelta init lab2.toml",
            path.display()
        ))
        .into(),
        e => output_error("init", e, "the lab"),
    })?;
    outln!(
        "wrote {0}; next: dbdelta plan {0} --quick, then dbdelta run {0} --quick",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta clean`: name and remove the run directories interrupted runs left; a run a live
/// dbdelta works on is named with its PID and left alone.
pub(super) fn clean_cmd(args: &CleanArgs) -> Result<ExitCode> {
    use crate::runner::workdir;
    if let Some(dir) = &args.snapshots {
        clean_snapshots(
            dir.clone()
                .unwrap_or_else(|| args.workdir.join("snapshots")),
            args,
        )?;
    }
    let (stale, live) = workdir::scan(&args.workdir)?;
    for l in &live {
        errln!("kept {}", l.describe());
    }
    if stale.is_empty() {
        outln!(
            "{}: nothing left by interrupted runs",
            args.workdir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    for s in &stale {
        if args.dry_run {
            outln!("would remove {}", s.describe());
            continue;
        }
        match workdir::remove(s, args.stop) {
            Ok(()) => outln!("removed {}", s.describe()),
            Err(e) => {
                errln!("kept {e:#}");
                code = ExitCode::from(EXIT_FAILED);
            }
        }
    }
    Ok(code)
}

/// `dbdelta clean --snapshots`: remove (or, with --dry-run, name) the saved loads in `dir`:
/// only the entries `snapshot::cleanable` chose (dbdelta's snapshots and unfinished saves),
/// never `dir` itself or anything else in it, which is named as kept.
fn clean_snapshots(dir: PathBuf, args: &CleanArgs) -> Result<()> {
    use crate::runner::snapshot;
    let found = match snapshot::cleanable(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return crate::error::input(format!(
                "--snapshots {} is not a directory; name the directory of saved loads (default <workdir>/snapshots)",
                dir.display()
            ));
        }
        r => r.with_context(|| format!("--snapshots {}: cannot read it", dir.display()))?,
    };
    if !found.kept.is_empty() {
        let n = found.kept.len();
        let mut names = found.kept[..n.min(5)].join(", ");
        if n > 5 {
            names.push_str(&format!(" and {} more", n - 5));
        }
        errln!(
            "kept {n} entr{} of {} that dbdelta did not make or still uses: {names}",
            if n == 1 { "y" } else { "ies" },
            dir.display()
        );
    }
    for entry in &found.remove {
        if args.dry_run {
            outln!("would remove {entry} in {}", dir.display());
            continue;
        }
        snapshot::remove(&dir, entry).with_context(|| format!("--snapshots {}", dir.display()))?;
        outln!("removed {entry} in {}", dir.display());
    }
    if found.remove.is_empty() {
        outln!("{}: no snapshots", dir.display());
    }
    Ok(())
}
