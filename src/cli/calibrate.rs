//! `dbdelta calibrate LAB`: its flags, the plan (counting instructions, the lab's steps and
//! scale) and the floors printed as a table. Must not: count or compute a floor itself
//! (`crate::calibrate` does).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::run::{DEFAULT_WORKDIR, Interrupted, ShapeArgs, interrupt_flag, interrupted_code};
use super::{StoreArg, Verbosity};
use crate::calibrate::Calibrated;
use crate::console::{errln, outln};
use crate::error::EXIT_INTERRUPTED;
use crate::plan::{self, RunOptions};
use crate::progress::Progress;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// Lab file (TOML) whose target's build is calibrated, with the lab's steps and scale.
    pub lab: PathBuf,
    /// The target whose build is calibrated (default: the lab's first, the base).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Where data directories are created.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_WORKDIR)]
    pub workdir: PathBuf,
    /// Keep data directories after the run.
    #[arg(long)]
    pub keep: bool,
}

/// Plan the lab counting instructions, count its target against a twin of itself, store and
/// print each step's floor.
pub(super) fn calibrate_cmd(
    store_path: &Path,
    args: &CalibrateArgs,
    progress: &Progress,
) -> Result<ExitCode> {
    let opts = RunOptions {
        workdir: args.workdir.clone(),
        keep: args.keep,
        instructions: true,
        ..args.shape.options()
    };
    let plan = plan::plan(plan::lab::load(&args.lab)?, &opts)?;
    let target = match &args.target {
        None => 0,
        Some(name) => (plan.targets.iter().position(|t| &t.name == name)).ok_or_else(|| {
            crate::error::InputError::new(format!(
                "--target {name}: the lab has no such target; its targets: {}",
                (plan.targets.iter().map(|t| t.name.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
    };
    let t = &plan.targets[target];
    if t.remote.is_some() || t.connect.is_some() {
        return crate::error::input(format!(
            "--target {}: instructions are counted only for servers dbdelta starts on this host",
            t.name
        ));
    }
    crate::plan::preflight::tools(&plan)?;
    let stored = crate::plan::resume::StoredOptions::new(&opts, Some(&args.lab));
    let interrupt = interrupt_flag(Interrupted::Bisection)?;
    let mut store = Store::open(store_path)?;
    let at = (progress, &interrupt);
    match crate::calibrate::calibrate(&plan, target, &mut store, at, &stored.to_json()) {
        Ok(c) => {
            outln!("{}", table(&c));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if let Some(signal) = crate::signals::first() => {
            errln!("interrupted: {e:#}");
            Ok(ExitCode::from(interrupted_code(signal)))
        }
        Err(e) if interrupt.load(std::sync::atomic::Ordering::Relaxed) => {
            errln!("interrupted: {e:#}");
            Ok(ExitCode::from(EXIT_INTERRUPTED))
        }
        Err(e) => Err(e),
    }
}

/// The floors as a table: step, floor, and the A/A it came from.
fn table(c: &Calibrated) -> String {
    let mut out = format!(
        "run {}: floors of {} (the A/A's instructions/op ratio, target / its twin; a change \
         must clear its step's floor either way)\n",
        c.run_id, c.build
    );
    out.push_str(&format!(
        "{:<26} {:>3} {:>9} {:>7} {:>13}  {}\n",
        "step", "c", "floor", "ratio", "range", "A/A verdict"
    ));
    for f in &c.floors {
        let floor = match &f.floor {
            Ok(v) => format!("±{:.2}%", v * 100.0),
            Err(why) => why.clone(),
        };
        out.push_str(&format!(
            "{:<26} {:>3} {:>9} {:>7.3} {:>6.3}–{:<6.3}  {}\n",
            f.step, f.clients, floor, f.ratio, f.range[0], f.range[1], f.verdict
        ));
    }
    out.trim_end().to_string()
}
