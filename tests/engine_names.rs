//! An engine family is its folder under `src/engine/` and one line in its registry: production
//! code outside `src/engine/` names no engine. This test reads every library file outside
//! `src/engine/` and finds each engine's names (the registry's family names, aliases, titles
//! and fetchable product ids, asked of the library itself) as words in code and string
//! literals; comments (examples in prose) and test code are not read.
//!
//! Left out by design: `src/store/`, whose results store is kept in an SQLite file or a
//! PostgreSQL database (storage backends, not engines under test), and `src/bin/`, the client
//! cost benchmark, which starts the servers and their own clients by name.
//!
//! [`STILL_NAMED`] lists the files that still name an engine, each with its count of lines:
//! each suite's dialect table (its rows are per `Dialect`) and two report notes' prose. A file not in it that names an engine fails the test, and so does a listed file
//! whose count rose; one whose count fell asks for the list to follow (a ratchet: the list
//! only shrinks).

use std::collections::BTreeMap;
use std::path::Path;

mod common;

/// Files outside `src/engine/` that still name an engine, with the lines that do.
const STILL_NAMED: &[(&str, usize)] = &[
    // Prose of two report notes that name engines as examples (changing it changes reports).
    ("report/build/notes.rs", 1),
    ("report/sections/instructions.rs", 2),
    // Each suite's dialect table: one row per `Dialect` (a new dialect adds a row).
    ("suites/insert/sql.rs", 3),
    ("suites/linkbench/sql.rs", 3),
    ("suites/sysbench/sql.rs", 3),
];

/// Where engines may be named: their folder, and the storage backends of the results store.
const OWNERS: &[&str] = &["engine", "store", "bin"];

#[test]
fn production_code_outside_engine_names_no_engine_beyond_the_known_list() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = engine_names();
    assert!(
        names.len() >= 5,
        "the registry gave too few names: {names:?}"
    );
    let found = named_lines(&src, &names);
    let mut wrong = Vec::new();
    for (file, lines) in &found {
        match STILL_NAMED.iter().find(|(f, _)| f == file) {
            None => wrong.push(format!(
                "{file} names an engine (ask its family instead, through engine::EngineKind or \
                 the record):\n  {}",
                lines.join("\n  ")
            )),
            Some((_, known)) if lines.len() > *known => wrong.push(format!(
                "{file} names an engine on {} lines, more than the {known} still listed:\n  {}",
                lines.len(),
                lines.join("\n  ")
            )),
            _ => {}
        }
    }
    for (file, known) in STILL_NAMED {
        let now = found.get(*file).map_or(0, Vec::len);
        if now < *known {
            wrong.push(format!(
                "{file} names an engine on {now} lines now, fewer than {known}: lower (or remove) \
                 its entry in STILL_NAMED"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The test sees what it should: a line naming an engine in code or a string is found, one
/// naming it only in a comment or inside a longer word is not.
#[test]
fn names_are_found_in_code_and_strings_not_in_comments_or_longer_words() {
    let names = vec!["postgres".to_string(), "mysql".to_string()];
    assert!(names_in("let x = \"postgres\";", &names));
    assert!(names_in("if engine == \"MySQL 8.0\" {", &names));
    assert!(!names_in("// postgres only", &names));
    assert!(!names_in("let y = 1; // as mysql does", &names));
    assert!(!names_in("let pgwire_postgresql_x = 1;", &names));
}

/// Every name the registry knows an engine by, lower case.
fn engine_names() -> Vec<String> {
    let mut names = Vec::new();
    for f in dbdelta::engine::families::FAMILIES {
        names.push(f.name().to_string());
        names.extend(f.aliases().iter().map(|a| a.to_string()));
        names.push(f.title().to_string());
    }
    for p in dbdelta::engine::families::products() {
        names.push(p.id.to_string());
        names.extend(p.aliases.iter().map(|a| a.to_string()));
        names.push(p.title.to_string());
    }
    let mut names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    names.sort();
    names.dedup();
    names
}

/// File (relative to `src/`) → the production lines naming an engine.
fn named_lines(src: &Path, names: &[String]) -> BTreeMap<String, Vec<String>> {
    let files = common::source::rust_files(src);
    let mut found = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap().display().to_string();
        let top = rel.split('/').next().unwrap_or_default();
        if OWNERS.contains(&top) || rel == "main.rs" || is_test_file(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<String> = (text.lines().enumerate())
            .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
            .filter(|(_, l)| names_in(l, names))
            .map(|(i, l)| format!("{}: {}", i + 1, l.trim()))
            .collect();
        if !lines.is_empty() {
            found.insert(rel, lines);
        }
    }
    found
}

/// Test code by its file: `tests.rs`, `*_tests.rs`, and everything under `tests/` or `fixture/`.
fn is_test_file(rel: &str) -> bool {
    rel.ends_with("tests.rs") || rel.contains("/tests/") || rel.contains("/fixture/")
}

/// Does the code of `line` (before any `//` comment outside a string) name an engine as a word?
fn names_in(line: &str, names: &[String]) -> bool {
    let code = code_of(line).to_ascii_lowercase();
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| names.iter().any(|n| w == n))
}

/// `line` without a trailing `//` comment (one outside a string literal).
fn code_of(line: &str) -> &str {
    let mut in_str = false;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '"' if prev != '\\' => in_str = !in_str,
            '/' if !in_str && prev == '/' => return &line[..i - 1],
            _ => {}
        }
        prev = c;
    }
    line
}
