//! Errors at the program's boundary and the exit codes they map to.
//!
//! Owns the distinction between bad input (exit 2: the user can fix the command or the lab file)
//! and failures while running (exit 1). Inside the application errors are `anyhow` with context;
//! three kinds are typed: input problems, so `main` can pick the exit code, a failing results
//! store, so the runner ends the run with it instead of blaming the target it was running, and a
//! closed pipe ([`PipeClosed`]), which ends a command quietly with 141.

use std::process::ExitCode;

/// A problem with what the user asked for: a flag, a lab file, a store path.
/// Its message is one line that says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    pub fn new(msg: impl Into<String>) -> Self {
        InputError(msg.into())
    }
}

/// The results store could not be written or read (its filesystem full, the file made
/// read-only, its server gone): no target is to blame, and the run cannot go on, so the runner
/// ends it with this message instead of recording a target's failure. Its message names the
/// store and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// Whether `err` is (or was caused by) a [`StoreError`]: anyhow's downcast finds it as the
/// error itself or as context at any depth.
pub fn is_store_error(err: &anyhow::Error) -> bool {
    err.downcast_ref::<StoreError>().is_some()
}

/// Standard output was a pipe whose reader went away (`dbdelta report | head -1`): the command
/// stopped as SIGPIPE stops a tool that does not ignore it. `main` prints nothing for it (the
/// reader has what it wanted) and exits [`EXIT_PIPE`].
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed by its reader")]
pub struct PipeClosed;

/// Shorthand: `Err(input_error!("..."))`-style construction for bad input.
pub fn input<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(InputError::new(msg).into())
}

/// Exit code for bad input (the same code clap uses for usage errors).
pub const EXIT_INPUT: u8 = 2;
/// Exit code when a run finished but some target or step failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code after Ctrl-C (128 + SIGINT); another terminating signal gives 128 + its number.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Exit code when standard output or error was a pipe whose reader closed it before dbdelta
/// wrote everything (`| head`): 128 + SIGPIPE, as a shell reports a command SIGPIPE killed.
/// One rule for every command: a write that met the closed pipe (EPIPE) stopped the command
/// (a run as after SIGTERM: servers stopped, finished steps stored, the run incomplete and
/// resumable) and it exits 141 with no message; output the pipe took whole before its reader
/// left cannot be told from output that was read, and exits as it would have (0).
pub const EXIT_PIPE: u8 = 141;

/// Whether `err` is (or was caused by) a closed pipe.
pub fn is_pipe_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.is::<PipeClosed>())
}

/// Map an error that reached `main` to its exit code.
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    if is_pipe_closed(err) {
        ExitCode::from(EXIT_PIPE)
    } else if err.chain().any(|e| e.is::<InputError>()) {
        ExitCode::from(EXIT_INPUT)
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}

/// The one-line message for an error that reached `main`: the whole cause chain.
pub fn message(err: &anyhow::Error) -> String {
    if let Some(input) = err.chain().find_map(|e| e.downcast_ref::<InputError>()) {
        return input.to_string();
    }
    format!("{err:#}")
}
