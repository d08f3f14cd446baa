//! Fuzz target `lab_parse`: arbitrary bytes, as UTF-8 text, through the lab parser
//! (`dbdelta::plan::lab::parse`), the code behind every `dbdelta run LAB`, and for a lab it
//! accepts, the dry-run planning that follows (`plan::plan_on`, `describe`, the cells, the
//! time and disk estimates), where the lab's numbers become durations and allocations.
//!
//! Any `Err` is a fine answer; a panic, abort, stack overflow, running out of memory or time is
//! a bug. The parser reads a target's `config` file: relative paths resolve in a scratch
//! directory this target creates (holding one config file, `pg.conf`), and an input whose
//! `config` could leave it (absolute, or with `..`) is skipped, so the fuzzer never makes the
//! parser read this machine's files (`/dev/zero` would never end). `bin` and `library` are
//! only checked for existence.
#![no_main]

#[path = "shared/mod.rs"]
mod shared;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !shared::configs_stay_inside(text) {
        return;
    }
    if let Ok(lab) = dbdelta::plan::lab::parse(text, "fuzz.toml", shared::scratch()) {
        shared::dry_run(lab, &dbdelta::plan::RunOptions::default());
    }
});
