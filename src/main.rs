//! The `dbdelta` binary: parse the command line, hand it to the library, map errors to exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match dbdelta::cli::parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match dbdelta::cli::execute(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", dbdelta::error::message(&err));
            dbdelta::error::exit_code(&err)
        }
    }
}
