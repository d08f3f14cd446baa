//! Every repository path the docs name exists, so a moved file cannot leave a doc pointing at
//! nothing. Fast: reads files, starts no server.
//!
//! The rule. The documents are `docs/*.md`, `README.md` and `ARCHITECTURE.md`. A path is the
//! text of a code span (between backticks) with no space, `*`, `…`, `<`, `:` or `$` in it (those
//! are patterns, placeholders, commands or other projects' files, e.g. `mytools:bench/…`), after
//! brace expansion (`engine/{a,b}.rs` is `engine/a.rs` and `engine/b.rs`; nested braces too) and
//! without trailing `.`, `,` or `;`. Such a path is checked when:
//! - it starts with `src/`, `tests/`, `bench/`, `schema/`, `fuzz/` or `examples/`: it must exist
//!   (file or directory) at that place in the repository;
//! - otherwise it contains a `/` and ends in `.rs` (a path written relative to `src/` or
//!   `tests/`, as docs/instructions.md writes `runner/count/passes.rs`): `src/PATH` must exist,
//!   or else exactly one file under `src/` or `tests/` must end in `/PATH` (`common/pg.rs` is
//!   `tests/common/pg.rs`). None is a stale path; more than one is ambiguous: write it from
//!   `src/` or `tests/`.
//!
//! Anything else (bare file names such as `sql.rs`, links, prose) is not checked.

use std::path::{Path, PathBuf};

/// Top-level folders whose paths are checked from the repository's root.
const ROOTED: [&str; 6] = ["src/", "tests/", "bench/", "schema/", "fuzz/", "examples/"];

#[test]
fn every_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.push(root.join("README.md"));
    docs.push(root.join("ARCHITECTURE.md"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    walk(&root.join("tests"), &mut files);
    let files: Vec<String> = (files.iter())
        .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        let name = doc.strip_prefix(root).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            for path in paths_in(line) {
                match resolve(root, &files, &path) {
                    Some(Ok(())) => checked += 1,
                    Some(Err(why)) => wrong.push(format!("{name}:{}: `{path}` {why}", n + 1)),
                    None => {}
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} paths found: is the rule reading the docs?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `None`: not a path the rule checks; `Some(Err(why))`: checked and not found (or ambiguous).
fn resolve(root: &Path, files: &[String], path: &str) -> Option<Result<(), String>> {
    if ROOTED.iter().any(|r| path.starts_with(r)) {
        return Some(match root.join(path).exists() {
            true => Ok(()),
            false => Err("does not exist".into()),
        });
    }
    if !(path.contains('/') && path.ends_with(".rs")) {
        return None;
    }
    if root.join("src").join(path).exists() {
        return Some(Ok(()));
    }
    let tail = format!("/{path}");
    let found: Vec<&String> = files.iter().filter(|f| f.ends_with(&tail)).collect();
    Some(match found.len() {
        1 => Ok(()),
        0 => Err("exists neither under src/ nor as the end of a path under src/ or tests/".into()),
        _ => Err(format!(
            "is ambiguous ({found:?}): write it from src/ or tests/"
        )),
    })
}

/// The candidate paths of one line: its code spans, filtered and brace-expanded.
fn paths_in(line: &str) -> Vec<String> {
    let spans = line.split('`').skip(1).step_by(2);
    let mut out: Vec<String> = Vec::new();
    let all = (spans.filter(|s| !s.contains([' ', '*', '…', '<', ':', '$'])))
        .flat_map(expand)
        .map(|p| p.trim_end_matches(['.', ',', ';']).to_string());
    for p in all {
        if !p.is_empty() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Brace expansion: `a/{b,c}.rs` → `a/b.rs`, `a/c.rs` (the innermost group first).
fn expand(s: &str) -> Vec<String> {
    let Some(close) = s.find('}') else {
        return vec![s.to_string()];
    };
    let Some(open) = s[..close].rfind('{') else {
        return vec![s.to_string()];
    };
    (s[open + 1..close].split(','))
        .flat_map(|alt| expand(&format!("{}{alt}{}", &s[..open], &s[close + 1..])))
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn code_spans_are_expanded_and_filtered() {
    let line = "see `engine/{a,b/{c,d}}.rs`, `sql.rs`, `mytools:bench/x.sh`, `src/x/`. and `a b`";
    assert_eq!(
        paths_in(line),
        [
            "engine/a.rs",
            "engine/b/c.rs",
            "engine/b/d.rs",
            "sql.rs",
            "src/x/"
        ]
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "src/a/common/x.rs".to_string(),
        "tests/common/x.rs".to_string(),
    ];
    assert_eq!(
        resolve(root, &files, "sql.rs"),
        None,
        "no folder: not checked"
    );
    assert_eq!(resolve(root, &files, "lib.rs"), None);
    assert!(
        resolve(root, &files, "common/x.rs").unwrap().is_err(),
        "two files end so"
    );
    assert_eq!(resolve(root, &files, "a/common/x.rs"), Some(Ok(())));
    assert!(resolve(root, &files, "src/nowhere.rs").unwrap().is_err());
    assert_eq!(
        resolve(root, &files, "runner/count/plan.rs"),
        Some(Ok(())),
        "src/ exists"
    );
}
