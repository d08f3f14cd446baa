//! Fuzz target `lab_parse`: arbitrary bytes, as UTF-8 text, through the lab parser
//! (`dbdelta::plan::lab::parse`), the code behind every `dbdelta run LAB`.
//!
//! Any `Err` is a fine answer; a panic, abort, stack overflow, running out of memory or time is
//! a bug. The parser reads a target's `config` file: relative paths resolve in a scratch
//! directory this target creates (holding one config file, `pg.conf`), and an input whose
//! `config` could leave it (absolute, or with `..`) is skipped, so the fuzzer never makes the
//! parser read this machine's files (`/dev/zero` would never end). `bin` and `library` are
//! only checked for existence.
#![no_main]

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !configs_stay_inside(text) {
        return;
    }
    let _ = dbdelta::plan::lab::parse(text, "fuzz.toml", scratch());
});

/// The directory relative paths of the lab resolve in, made once per process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dbdelta-fuzz-lab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        std::fs::write(
            dir.join("pg.conf"),
            "shared_buffers = '128MB'\n# a comment\nwork_mem = 4MB; x\n",
        )
        .expect("a config file in the scratch directory");
        dir
    })
}

/// False when a `[[target]]` names a `config` that could be read from outside the scratch
/// directory. Text that is not TOML is parsed as it is: the parser rejects it before it
/// reads any file.
fn configs_stay_inside(text: &str) -> bool {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return true;
    };
    let Some(targets) = doc.get("target").and_then(|t| t.as_array()) else {
        return true;
    };
    targets
        .iter()
        .all(|t| match t.get("config").and_then(|c| c.as_str()) {
            None => true,
            Some(path) => Path::new(path)
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir)),
        })
}
