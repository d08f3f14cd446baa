//! Writing a command's text or bytes to the file a flag named (`-o`, `--png`), with the flag in
//! every error. Must not: decide what is written (the commands do) or write anywhere else.

use std::path::Path;

use anyhow::Result;

/// `text` into `output` (whole or not at all), or on standard output without one (a closed pipe
/// there: [`crate::error::PipeClosed`]); `what` names it in the error.
pub(super) fn write_text(output: Option<&Path>, text: &str, what: &str) -> Result<()> {
    match output {
        Some(path) => write_named("-o", path, text.as_bytes(), what),
        None => crate::console::write_out(text.as_bytes()),
    }
}

/// Write `bytes` to the file `flag` named, by `output`'s rule (a regular file whole, a device in
/// place, a directory refused); `what` names the bytes in the error.
pub(super) fn write_named(flag: &str, path: &Path, bytes: &[u8], what: &str) -> Result<()> {
    crate::output::write(path, bytes).map_err(|e| output_error(flag, e, what))
}

/// An `output` failure as one line naming the flag and the file: bad input (exit 2) when
/// another name fixes it, a failure (exit 1) otherwise.
pub(super) fn output_error(flag: &str, e: crate::output::OutputError, what: &str) -> anyhow::Error {
    let path = e.path().display().to_string();
    match e.is_input() {
        true => crate::error::InputError::new(format!("{flag} {path}: {e}")).into(),
        false => anyhow::anyhow!("{flag} {path}: cannot write {what}: {e}"),
    }
}
