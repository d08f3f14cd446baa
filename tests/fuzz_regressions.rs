//! Regression tests for the crashes the fuzzers in `fuzz/` found (README "Fuzzing"): each
//! feeds the crashing input, or the smallest input with the same cause, to the library and
//! checks that it is now an error and not a panic.

use std::path::Path;

/// `lab_parse`: `write_rows` near `i64::MAX` overflowed `write_rows * 4` in the insert suite's
/// check (a panic with overflow checks, a wrong answer without).
#[test]
fn lab_insert_write_rows_too_large_is_bad_input() {
    for (key, value) in [
        ("write_rows", "9223372036854775807"),
        ("rows", "4611686018427387904"),
    ] {
        let text = format!(
            "[lab]\nname = \"t\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
             [suite.insert]\n{key} = {value}\n"
        );
        let e = dbdelta::lab::parse(&text, "lab.toml", Path::new(".")).unwrap_err();
        assert!(
            e.0.contains("must be at most 1000000000000"),
            "{key}: {}",
            e.0
        );
    }
}
