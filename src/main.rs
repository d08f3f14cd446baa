//! The `dbdelta` binary: parse the command line, hand it to the library, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = dbdelta::cli::Cli::parse();
    match dbdelta::cli::execute(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", dbdelta::error::message(&err));
            dbdelta::error::exit_code(&err)
        }
    }
}
