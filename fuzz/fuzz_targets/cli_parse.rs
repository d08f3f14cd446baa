//! Fuzz target `cli_parse`: a fuzzed command line through dbdelta's clap parser
//! (`dbdelta::cli::Cli`), the one-line usage error, and for a `run` or `plan` command line the
//! dry-run planning that follows (`--repeats`, `--clients`, `--cell`, `--only`/`--skip`,
//! `--quick` applied to a lab).
//!
//! The input is the arguments after `dbdelta`, separated by NUL bytes (argv can hold any other
//! byte). A `LAB` argument is not read as a path: its text is the lab itself (TOML), so the
//! fuzzer varies the lab's numbers and the flags together; without one, the built-in demo
//! lab. Nothing runs: `--dry-run` or not, only the plan is made (no server, store, work
//! directory or fetch). Any `Err` is a fine answer; a panic, abort, running out of memory or
//! time is a bug.
#![no_main]

#[path = "shared/mod.rs"]
mod shared;

use std::path::Path;

use dbdelta::cli::Command;
use dbdelta::plan::{self, lab::Lab};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let argv = std::iter::once("dbdelta").chain(text.split('\0'));
    let cli = match dbdelta::cli::parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let line = dbdelta::cli::usage_error(&e);
            assert!(
                !line.contains('\n'),
                "a usage error of more than one line: {line}"
            );
            return;
        }
    };
    let (lab, opts) = match &cli.command {
        Command::Run(args) if args.resume.is_none() => (args.lab.as_deref(), args.options()),
        Command::Plan(args) => (args.lab.as_deref(), args.how.options(&args.shape)),
        _ => return,
    };
    if let Some(lab) = lab_of(lab) {
        shared::dry_run(lab, &opts);
    }
});

/// The lab a command line's `LAB` argument holds as text, or the built-in demo.
fn lab_of(arg: Option<&Path>) -> Option<Lab> {
    let text = match arg {
        None => plan::demo_lab(),
        Some(p) => p.to_str()?,
    };
    if !shared::configs_stay_inside(text) {
        return None;
    }
    plan::lab::parse(text, "fuzz.toml", shared::scratch()).ok()
}
