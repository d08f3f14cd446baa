//! The `dbdelta` binary: parse the command line, hand it to the library, map errors to exit codes.

use std::process::ExitCode;

use dbdelta::error::{self, EXIT_PIPE};

fn main() -> ExitCode {
    let cli = match dbdelta::cli::parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let code = match dbdelta::cli::execute(cli) {
        Ok(code) => code,
        // The reader has what it wanted: nothing to say (see `error::EXIT_PIPE`).
        Err(err) if error::is_pipe_closed(&err) => return ExitCode::from(EXIT_PIPE),
        Err(err) => {
            dbdelta::console::err(format_args!("error: {}", error::message(&err)));
            error::exit_code(&err)
        }
    };
    // A closed pipe stopped the command, whatever it made of that: exit as SIGPIPE would.
    match dbdelta::signals::pipe_was_closed() {
        true => ExitCode::from(EXIT_PIPE),
        false => code,
    }
}
