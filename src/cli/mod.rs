//! The command line (clap derive) and what each command does, as a table of contents:
//! parse → plan → run → report.
//!
//! Owns the top-level [`Cli`] and [`Command`], the flags given before a command, usage errors
//! and dispatching each command to its family's file (`run`, `bisect`, `reports`, `list`,
//! `build`, `store`, `setup`); terminal decisions (colour, progress mode). A new command is a
//! variant of [`Command`], its arm in [`execute`] and [`command_name`], and its file. Must not:
//! measure, render or touch SQL itself; it calls `plan`, `runner`, `store` and `report`.

mod bisect;
mod build;
mod calibrate;
mod list;
mod reports;
mod run;
mod setup;
mod store;
#[cfg(test)]
mod tests;
mod write;

pub use bisect::{BisectArgs, BisectMetric};
pub use build::{BuildArgs, FetchArgs};
pub use list::{ListArgs, ListWhat};
pub use reports::{CompareArgs, HistoryArgs, ProfileArgs, ReportArgs, ReportOut};
pub use run::{Emit, HowArgs, PlanArgs, RunArgs, ShapeArgs, calibration};
pub use setup::{CleanArgs, InitArgs};
pub use store::{PushArgs, ServeArgs, StoreArgs, StoreCommand};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::progress::{Mode, Progress};
use bisect::bisect_cmd;
use build::{build_cmd, fetch_cmd};
use calibrate::calibrate_cmd;
use list::list;
use reports::{compare_cmd, history_cmd, profile_cmd, report_cmd};
use run::{plan_cmd, run};
use setup::{clean_cmd, init_cmd};
use store::{push_cmd, serve_cmd};

/// Find the performance delta between database versions, builds and configurations.
#[derive(Debug, Parser)]
#[command(name = "dbdelta", version, about, propagate_version = true)]
pub struct Cli {
    /// Results store of the commands that read or write one (run, report, compare, history,
    /// list runs and targets, profile, store push); also accepted after the command.
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// Print no progress, only results and errors (run, fetch, build; also accepted after the
    /// command).
    #[arg(short, long)]
    pub quiet: bool,
    /// Print more detail while running (run, fetch, build; also accepted after the command).
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `--store`, on the commands that read or write a results store.
#[derive(Debug, Clone, Args)]
pub struct StoreArg {
    /// Results store: an SQLite file (created by `run` when missing; default dbdelta.db), or a
    /// PostgreSQL database shared by several runs or machines, e.g.
    /// postgres://user@host:5432/dbdelta.
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

/// `-q`/`-v`, on the commands that print progress.
#[derive(Debug, Clone, Args)]
pub struct Verbosity {
    /// Print no progress, only results and errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print more detail while running.
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
}

/// The store when neither `--store` names one.
const DEFAULT_STORE: &str = "dbdelta.db";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a lab (without LAB: a built-in demo on embedded SQLite), then print its report.
    Run(RunArgs),
    /// Print what a run of the lab would do (as `run --dry-run`), or with `--emit k8s` write it
    /// as Kubernetes Jobs, one per target × clients × repeat.
    Plan(PlanArgs),
    /// Print the report of a stored run (default: the latest).
    Report(ReportArgs),
    /// Compare the same steps across two stored runs: RUN_B relative to RUN_A.
    Compare(CompareArgs),
    /// Every stored run of a lab over time, per target × step, with the change points found
    /// in each series, e.g. `dbdelta history --lab nightly --metric cpu`.
    History(HistoryArgs),
    /// List what the store holds, or the step catalog.
    List(ListArgs),
    /// Download, verify and cache a server build, e.g. `dbdelta fetch mysql@8.0`.
    Fetch(FetchArgs),
    /// Compile an engine from source with a variant's flags into the cache and print the path a
    /// lab's `bin` (servers) or `library` (SQLite) takes, e.g.
    /// `dbdelta build postgres --source postgresql-15 --variant lto`.
    Build(BuildArgs),
    /// Find the first of the lab's targets (in lab order) whose step or group left the first
    /// target's level, measuring O(log n) of them into one run, e.g. `dbdelta bisect lab.toml
    /// --step point-query`.
    Bisect(BisectArgs),
    /// Split a stored run's counted change of a target into code and configuration, and find
    /// the settings behind it with twins of the target counted by instructions, e.g.
    /// `dbdelta explain latest --target my97 --step hot-points`.
    Explain(crate::explain::ExplainArgs),
    /// Measure each step's floor for a lab target's build (the base by default): the target
    /// counted by instructions against a twin of itself, the A/A's range stored per build,
    /// which every later verdict on that build must clear, e.g. `dbdelta calibrate lab.toml
    /// --quick`.
    Calibrate(calibrate::CalibrateArgs),
    /// Write a step's flame graphs and folded stacks into a directory: a profiled run's CPU
    /// graphs (per target, and each compared target against its base), a counted run's
    /// differential instruction graphs, e.g. `dbdelta profile latest hot-points`.
    Profile(ProfileArgs),
    /// Write a commented lab file to start from (default lab.toml; an existing file is never
    /// overwritten), e.g. `dbdelta init --engine postgres pg.toml`.
    Init(InitArgs),
    /// Remove the data directories interrupted runs left in the work directory (only run
    /// directories dbdelta marked as its own, of runs no dbdelta works on any more).
    Clean(CleanArgs),
    /// Serve a local web page over the store (runs, reports, flame graphs, history charts),
    /// read-only and on loopback only, until Ctrl-C, e.g. `dbdelta serve --port 7480`.
    Serve(ServeArgs),
    /// Copy runs between results stores, e.g. `dbdelta store push latest --to
    /// postgres://user@host/dbdelta`.
    Store(StoreArgs),
    /// The side of a remote target (`host = "ssh://…"`) that runs on its host: started there
    /// by dbdelta over SSH, it answers JSON requests on stdin. Not for people.
    #[command(hide = true)]
    Agent,
    /// The client of an instruction-counting pass, run by `dbdelta run` under valgrind: it
    /// answers JSON requests on stdin. Not for people.
    #[command(hide = true)]
    CountClient,
}

/// Parse this process's command line. A usage error is one line (`error: …`, what clap says
/// before its usage block, with a pointer to `--help`) and exit code 2; `--help` and
/// `--version` print and exit 0.
pub fn parse() -> std::result::Result<Cli, ExitCode> {
    parse_from(std::env::args_os()).map_err(|e| {
        if !e.use_stderr() {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        crate::console::errln!("error: {}", usage_error(&e));
        ExitCode::from(crate::error::EXIT_INPUT)
    })
}

/// Parse a command line (`argv[0]` first); a usage error is clap's, for [`usage_error`].
pub fn parse_from<I, T>(argv: I) -> std::result::Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(argv)
}

/// clap's message for a usage error as one line: its text before the first blank line (a
/// list of missing flags joined in), then where the flags are listed.
pub fn usage_error(e: &clap::Error) -> String {
    if let Some(line) = png_format(e) {
        return format!("{line} (dbdelta help [COMMAND] lists the flags)");
    }
    let text = e.to_string();
    let first: Vec<&str> = (text.lines())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = first.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    format!(
        "{msg}{} (dbdelta help [COMMAND] lists the flags)",
        suggested(e)
    )
}

/// clap's own "did you mean" for a mistyped flag or command (its tip, which the one-line message
/// would otherwise cut), in the words of every other suggestion (`crate::suggest`).
fn suggested(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let names = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
        .into_iter()
        .filter_map(|k| match e.get(k)? {
            ContextValue::String(s) => Some(vec![s.clone()]),
            ContextValue::Strings(v) => Some(v.clone()),
            _ => None,
        })
        .flatten()
        .map(|n| n.split_whitespace().next().unwrap_or(&n).to_string())
        .collect::<Vec<_>>();
    crate::suggest::offer(&names)
}

/// `--format png` (charts are files, not a report format): the flag that writes them.
fn png_format(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::InvalidValue {
        return None;
    }
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(a) => a,
        _ => return None,
    };
    let value = match e.get(ContextKind::InvalidValue)? {
        ContextValue::String(v) => v,
        _ => return None,
    };
    (arg.starts_with("--format") && value.eq_ignore_ascii_case("png")).then(|| {
        "--format png: PNG is not a report format; add --png DIR to write the charts as PNG files (beside --format text, md, json, csv or html)".to_string()
    })
}

/// Run a parsed command line. Returns the process exit code.
pub fn execute(cli: Cli) -> Result<ExitCode> {
    let top = Shared::of(&cli)?;
    match cli.command {
        Command::Run(args) => {
            let progress = top.progress(&args.verbosity);
            run(&top.store(&args.store), args, &progress)
        }
        Command::Plan(args) => plan_cmd(&top.store(&args.store), args),
        Command::Report(args) => report_cmd(&top.store(&args.store), args),
        Command::Compare(args) => compare_cmd(&top.store(&args.store), args),
        Command::History(args) => history_cmd(&top.store(&args.store), &args),
        Command::List(args) => list(&top.store(&args.store), args),
        Command::Fetch(args) => fetch_cmd(&args.what, &top.progress(&args.verbosity)),
        Command::Build(args) => build_cmd(&args, &top.progress(&args.verbosity)),
        Command::Profile(args) => profile_cmd(&top.store(&args.store), args),
        Command::Bisect(args) => {
            let progress = top.progress(&args.verbosity);
            bisect_cmd(&top.store(&args.store), args, &progress)
        }
        Command::Explain(args) => {
            crate::explain::command(args, top.store.as_deref(), (top.quiet, top.verbose))
        }
        Command::Calibrate(args) => {
            let progress = top.progress(&args.verbosity);
            calibrate_cmd(&top.store(&args.store), &args, &progress)
        }
        Command::Store(StoreArgs {
            command: StoreCommand::Push(args),
        }) => push_cmd(&top.store(&args.store), &args),
        Command::Clean(args) => clean_cmd(&args),
        Command::Serve(args) => serve_cmd(&top.store(&args.store), &args),
        Command::Init(args) => init_cmd(&args),
        Command::Agent => crate::remote::agent::serve().map(|()| ExitCode::SUCCESS),
        Command::CountClient => crate::runner::count::client_main().map(|()| ExitCode::SUCCESS),
    }
}

/// The flags given before the command (`dbdelta --store S run`), for the commands that use them.
struct Shared {
    store: Option<PathBuf>,
    quiet: bool,
    verbose: bool,
}

impl Shared {
    /// Refuses `--store`, `-q` or `-v` before a command that would ignore it.
    fn of(cli: &Cli) -> Result<Shared> {
        let (stores, talks) = match &cli.command {
            Command::Run(_) | Command::Bisect(_) | Command::Explain(_) => (true, true),
            Command::Calibrate(_) => (true, true),
            Command::Plan(_) => (true, false),
            Command::Report(_) | Command::Compare(_) | Command::List(_) => (true, false),
            Command::History(_) => (true, false),
            Command::Profile(_) | Command::Store(_) | Command::Serve(_) => (true, false),
            Command::Fetch(_) | Command::Build(_) => (false, true),
            _ => (false, false),
        };
        let name = command_name(&cli.command);
        if cli.store.is_some() && !stores {
            return crate::error::input(format!(
                "--store: `dbdelta {name}` uses no results store; drop --store"
            ));
        }
        if (cli.quiet || cli.verbose) && !talks {
            return crate::error::input(format!(
                "-q/-v: `dbdelta {name}` prints no progress; drop the flag"
            ));
        }
        Ok(Shared {
            store: cli.store.clone(),
            quiet: cli.quiet,
            verbose: cli.verbose,
        })
    }

    /// The command's `--store`, else the one before it, else `dbdelta.db`.
    fn store(&self, own: &StoreArg) -> PathBuf {
        (own.store.clone().or_else(|| self.store.clone()))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE))
    }

    fn progress(&self, own: &Verbosity) -> Progress {
        Progress {
            mode: Mode::detect(own.quiet || self.quiet),
            verbose: own.verbose || self.verbose,
            interval: None,
        }
    }
}

/// The command's name as typed, for messages.
fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Run(_) => "run",
        Command::Plan(_) => "plan",
        Command::Report(_) => "report",
        Command::Compare(_) => "compare",
        Command::History(_) => "history",
        Command::List(_) => "list",
        Command::Fetch(_) => "fetch",
        Command::Build(_) => "build",
        Command::Profile(_) => "profile",
        Command::Bisect(_) => "bisect",
        Command::Explain(_) => "explain",
        Command::Calibrate(_) => "calibrate",
        Command::Clean(_) => "clean",
        Command::Serve(_) => "serve",
        Command::Store(_) => "store",
        Command::Init(_) => "init",
        Command::Agent => "agent",
        Command::CountClient => "count-client",
    }
}

fn color_wanted() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}
