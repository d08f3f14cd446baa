//! The commands that serve or copy a store: `store push` and `serve`, with their flags. Must
//! not: read or write records itself (`store` and `serve` do).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::StoreArg;
use crate::console::outln;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy one run of --store (every row of it, in one transaction) into the store --to;
    /// a run that is already there is refused.
    Push(PushArgs),
}

#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Run id, name (`run --name`), `latest` or `previous`.
    pub run: String,
    /// The store the run is copied into: a postgres:// URL or an SQLite file (created and
    /// migrated when missing).
    #[arg(long, value_name = "PATH|URL")]
    pub to: PathBuf,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The port to listen on (0: any free one; the URL printed says which).
    #[arg(long, default_value_t = crate::serve::DEFAULT_PORT)]
    pub port: u16,
    /// The address to listen on: a loopback address only (127.0.0.1, ::1 or localhost).
    #[arg(long, default_value = "127.0.0.1")]
    pub addr: String,
}

/// `dbdelta serve`: the store as a local, read-only web page until a terminating signal.
pub(super) fn serve_cmd(store_path: &Path, args: &ServeArgs) -> Result<ExitCode> {
    let opts = crate::serve::Options {
        addr: args.addr.clone(),
        port: args.port,
    };
    crate::serve::serve(store_path, &opts)?;
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta store push RUN --to STORE`: one run copied whole into another store.
pub(super) fn push_cmd(store_path: &Path, args: &PushArgs) -> Result<ExitCode> {
    let from = Store::open_existing(store_path)?;
    let run_id = from.resolve_run(Some(&args.run))?;
    let to = Store::open_flag(&args.to, "--to")?;
    let rows = from.push_run(&run_id, &to)?;
    outln!(
        "pushed run {run_id} ({rows} rows) from {} to {}",
        from.path().display(),
        to.path().display()
    );
    Ok(ExitCode::SUCCESS)
}
