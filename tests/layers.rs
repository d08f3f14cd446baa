//! The shape of `src/`: no import cycle between its top-level modules in production code.
//!
//! Reads every `src/**/*.rs` of the library (not `main.rs` or `src/bin/`, which use the library
//! from outside), drops comments, string and character literals and test-only code
//! (`#[cfg(test)]` items, and the files of `#[cfg(test)] mod x;` declarations, `#[path]` too),
//! then collects the top-level module of every `crate::…` path (groups `crate::{a, b}` and
//! `super::` chains that leave the file's top-level module included). A cycle fails the test,
//! naming each edge with one place that makes it.
//!
//! ARCHITECTURE.md's "Layers" table is checked twice: its "modules" column (a module imports
//! only its own row or rows above it) and its "what it may use" column, read as a list of
//! terms (see [`may_use_of`]): every import of another top-level module must be one the row
//! (or the module's own entry in parentheses) names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod common;

/// `from` → `to` → one place (`file:line`) where `from` names `to`.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph_of(&src);
    assert!(
        graph.contains_key("runner") && graph.contains_key("engine"),
        "the walk found no modules: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("an import cycle between top-level modules of src/:\n{cycle}");
    }
}

/// ARCHITECTURE.md's "Layers" table is the rule: a module imports only modules of its own row or
/// the rows above it in the table (lower layers). Every top-level module of `src/` must stand in
/// exactly one row, so the table cannot fall behind the code.
#[test]
fn every_import_follows_the_layers_of_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layer = layers_of(&text);
    let graph = graph_of(&root.join("src"));
    let mut wrong = Vec::new();
    for (from, tos) in &graph {
        let Some(&own) = layer.get(from) else {
            wrong.push(format!(
                "`{from}` is in no row of ARCHITECTURE.md's Layers table"
            ));
            continue;
        };
        for (to, place) in tos {
            match layer.get(to) {
                None => wrong.push(format!("`{to}` is in no row of ARCHITECTURE.md's Layers table")),
                Some(&l) if l > own => wrong.push(format!(
                    "{from} (layer {own}) imports {to} (layer {l}) at {place}: a lower layer imports a higher one"
                )),
                _ => {}
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// ARCHITECTURE.md's "what it may use" column is the rule too: every module another module
/// imports is one its row allows (own-row imports included: the column names them).
#[test]
fn every_import_is_one_the_may_use_column_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let allowed = may_use_of(&text);
    let graph = graph_of(&root.join("src"));
    let mut wrong = Vec::new();
    for (from, tos) in &graph {
        for (to, place) in tos {
            if !allowed.get(from).is_some_and(|a| a.contains(to)) {
                wrong.push(format!(
                    "{from} imports {to} at {place}, which ARCHITECTURE.md's \"what it may use\" \
                     column does not allow for {from}: fix the import or the table"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The rows of the "## Layers" table: (layer name, modules column, may-use column), the name
/// being the first column without its number (`1. leaves` → `leaves`).
fn rows_of(markdown: &str) -> Vec<(String, String, String)> {
    let section = markdown
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("ARCHITECTURE.md has a ## Layers section");
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| layer") && !l.starts_with("| ---"))
        .map(|row| {
            let cols: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cols[1].split_once(". ").map_or(cols[1], |(_, n)| n);
            (name.to_string(), cols[2].to_string(), cols[3].to_string())
        })
        .collect()
}

/// `text` split into what lies outside parentheses and what lies inside (top level only).
fn outside_and_inside(text: &str) -> (String, String) {
    let (mut outer, mut inner, mut depth) = (String::new(), String::new(), 0);
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => outer.push(c),
            _ => inner.push(c),
        }
    }
    (outer, inner)
}

/// What each top-level module may import, from the "what it may use" column. The column's text
/// outside parentheses is a comma-separated list of terms, each one of: a layer's name (its
/// modules), `NAME and below` (that layer's modules and every row above it in the table), a
/// backticked module, `nothing of the crate` or `nothing`, `everything`. Inside parentheses,
/// `` `m`: terms `` entries separated by `;` give module `m` its own list instead of the row's.
/// A term the rule does not know fails the test, so the column stays readable by it.
fn may_use_of(markdown: &str) -> BTreeMap<String, BTreeSet<String>> {
    let rows = rows_of(markdown);
    let layer = layers_of(markdown);
    let in_layer = |i: usize| -> BTreeSet<String> {
        (layer.iter().filter(|&(_, &l)| l == i + 1))
            .map(|(m, _)| m.clone())
            .collect()
    };
    let named = |name: &str| rows.iter().position(|r| r.0 == name);
    let terms = |list: &str| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for term in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if let Some(m) = term.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
                out.insert(m.to_string());
            } else if term == "everything" {
                out.extend(layer.keys().cloned());
            } else if term == "nothing of the crate" || term == "nothing" {
            } else if let Some(i) = term.strip_suffix(" and below").and_then(named) {
                (0..=i).for_each(|j| out.extend(in_layer(j)));
            } else if let Some(i) = named(term) {
                out.extend(in_layer(i));
            } else {
                panic!(
                    "ARCHITECTURE.md's \"what it may use\" column: `{term}` is no layer, module or known word"
                );
            }
        }
        out
    };
    let mut out = BTreeMap::new();
    for (i, (_, _, may)) in rows.iter().enumerate() {
        let (outer, inner) = outside_and_inside(may);
        let row = terms(&outer);
        for m in in_layer(i) {
            out.insert(m, row.clone());
        }
        for entry in inner.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let (module, list) = entry
                .split_once(':')
                .unwrap_or_else(|| panic!("`{entry}`: an entry in parentheses is `m`: terms"));
            let module = module.trim().trim_matches('`').to_string();
            assert_eq!(
                layer.get(&module),
                Some(&(i + 1)),
                "`{module}` is not of its row"
            );
            out.insert(module, terms(list));
        }
    }
    out
}

#[test]
fn the_may_use_column_is_read_term_by_term() {
    let md = "# A\n\n## Layers\n\n| layer | modules | what it may use | rule |\n| --- | --- | --- | --- |\n\
              | 1. leaves | `a`, `b` | nothing of the crate (`b`: `a`) | - |\n\
              | 2. mid | `c` | leaves | - |\n| 3. top | `d`, `e` | `c`, mid and below (`e`: `d`) | |\n\
              | 4. face | `f` | everything | |\n";
    let m = may_use_of(md);
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(m["a"], set(&[]));
    assert_eq!(m["b"], set(&["a"]));
    assert_eq!(m["c"], set(&["a", "b"]));
    assert_eq!(m["d"], set(&["a", "b", "c"]));
    assert_eq!(m["e"], set(&["d"]));
    assert_eq!(m["f"], set(&["a", "b", "c", "d", "e", "f"]));
}

/// The layer of each top-level module named in the "modules" column of the "## Layers" table:
/// its first backticked word of each entry (`engine::common` is `engine`), rows numbered in
/// order from 1.
fn layers_of(markdown: &str) -> BTreeMap<String, usize> {
    let section = markdown
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("ARCHITECTURE.md has a ## Layers section");
    let rows = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| layer") && !l.starts_with("| ---"));
    let mut out = BTreeMap::new();
    for (i, row) in rows.enumerate() {
        let modules = row.split('|').nth(2).expect("a modules column");
        // Only the text outside parentheses names the row's modules; inside are their parts.
        let mut depth = 0;
        let outer: String = modules
            .chars()
            .filter(|c| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => return depth == 0,
                }
                false
            })
            .collect();
        for name in outer.split('`').skip(1).step_by(2) {
            let top = name.split("::").next().unwrap().to_string();
            out.entry(top).or_insert(i + 1);
        }
    }
    assert!(out.len() > 5, "no layers read from the table: {out:?}");
    out
}

#[test]
fn the_layers_table_is_read_row_by_row() {
    let md = "# A\n\n## Layers\n\n| layer | modules | may use | rule |\n| --- | --- | --- | --- |\n\
              | 1. leaves | `sys`, `stats` (with `stats::x`, not `runner`) | - | - |\n\
              | 2. up | `engine` | - | - |\n| 3. a | `a`, `b` | - | - |\n| 4. b | `c` | | |\n\
              | 5. c | `d` | | |\n\n## Next\n| 9. not | `zzz` | | |\n";
    let l = layers_of(md);
    assert_eq!(l["sys"], 1);
    assert_eq!(l["stats"], 1);
    assert_eq!(l["engine"], 2);
    assert_eq!(l["b"], 3);
    assert_eq!(l["d"], 5);
    assert!(
        !l.contains_key("runner"),
        "inside parentheses: a part, not a row's module"
    );
    assert!(!l.contains_key("zzz"), "another section");
}

#[test]
fn a_cycle_is_found_and_test_code_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |p: &str, text: &str| {
        let path = src.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write(
        "a/mod.rs",
        "//! a. Mentions crate::c in a comment only.\nmod inner;\nconst S: &str = \"crate::c\";\n\
         #[cfg(test)]\nmod tests;\n#[cfg(test)]\n#[path = \"more.rs\"]\nmod more;\n\
         #[cfg(test)]\nmod t2 { use crate::c::X; }\n",
    );
    write("a/inner.rs", "use crate::{b::Y, self};\n");
    write("a/tests.rs", "use crate::c::Z;\n");
    write("a/more.rs", "use crate::c::Z;\n");
    write("b.rs", "fn f() { let c = 'x'; super::c::g(c) }\n");
    write("c.rs", "pub fn g(_: char) {}\n");
    let graph = graph_of(src);
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
    // One production reference back from c to a closes a -> b -> c -> a.
    write("c.rs", "pub fn g(_: char) { crate::a::h() }\n");
    let cycle = find_cycle(&graph_of(src)).expect("a -> b -> c -> a");
    assert!(cycle.contains("a -> b (a/inner.rs:1)"), "{cycle}");
    assert!(cycle.contains("b -> c (b.rs:1)"), "{cycle}");
    assert!(cycle.contains("c -> a (c.rs:1)"), "{cycle}");
}

/// The top-level modules of the library under `src` and what each names of the others.
fn graph_of(src: &Path) -> Graph {
    let files = common::source::rust_files(src);
    let mut test_only = BTreeSet::new();
    let mut code = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") || rel.starts_with("bin") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let (kept, test_mods) = drop_test_code(&blank_out(&text), &text);
        for (name, path_attr) in test_mods {
            test_only.insert(module_file(file, &name, path_attr.as_deref()));
        }
        code.insert(file.clone(), kept);
    }
    let top: BTreeSet<String> = code
        .keys()
        .map(|f| module_path(f.strip_prefix(src).unwrap())[0].clone())
        .collect();
    let mut graph = Graph::new();
    for (file, kept) in &code {
        // A test module's file, and its submodules' files: beside it in the folder named
        // after it (`x.rs` → `x/`), or in its own folder when it is a `mod.rs`.
        let in_test_module = test_only.iter().any(|t| {
            let folder = match t.file_name().is_some_and(|n| n == "mod.rs") {
                true => t.parent().map(Path::to_path_buf),
                false => t.file_stem().map(|s| t.with_file_name(s)),
            };
            file == t || folder.is_some_and(|d| file.starts_with(d))
        });
        if in_test_module {
            continue;
        }
        let rel = file.strip_prefix(src).unwrap();
        let path = module_path(rel);
        let own = path[0].clone();
        let edges = graph.entry(own.clone()).or_default();
        for (line, target) in references(kept, &path) {
            if target != own && top.contains(&target) {
                let at = format!("{}:{line}", rel.display());
                edges.entry(target).or_insert(at);
            }
        }
    }
    graph
}

/// `a.rs` and `a/mod.rs` → `[a]`; `a/b.rs` → `[a, b]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// The file of `mod name;` declared in `file` (with its `#[path]`, when it has one).
fn module_file(file: &Path, name: &str, path_attr: Option<&str>) -> PathBuf {
    let dir = file.parent().unwrap();
    if let Some(p) = path_attr {
        return dir.join(p);
    }
    let stem = file.file_stem().unwrap().to_string_lossy();
    let base = match stem.as_ref() {
        "mod" | "lib" | "main" => dir.to_path_buf(),
        s => dir.join(s),
    };
    let flat = base.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        base.join(name).join("mod.rs")
    }
}

/// `text` with comments, string literals and character literals replaced by spaces (newlines
/// kept, so line numbers stay; byte offsets too).
fn blank_out(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // One space per byte, so byte offsets stay those of `text`.
    let blank = |out: &mut String, s: &[char]| {
        for &ch in s {
            match ch {
                '\n' => out.push('\n'),
                _ => out.extend(std::iter::repeat_n(' ', ch.len_utf8())),
            }
        }
    };
    while i < c.len() {
        let rest = &c[i..];
        let starts = |p: &str| rest.iter().take(p.len()).copied().eq(p.chars());
        let end = if starts("//") {
            rest.iter().position(|&ch| ch == '\n').unwrap_or(rest.len())
        } else if starts("/*") {
            let (mut depth, mut j) = (0, 0);
            while j < rest.len() {
                if rest[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(hashes) = raw_string_start(rest) {
            let open = hashes + 2 + usize::from(rest[0] == 'b');
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = &rest[open..];
            open + (0..body.len())
                .find(|&j| body[j..].starts_with(&close))
                .map_or(body.len(), |j| j + close.len())
        } else if rest[0] == '"' || starts("b\"") {
            let mut j = if rest[0] == '"' { 1 } else { 2 };
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == '\'' && rest.get(1) == Some(&'\\') {
            2 + rest[2..].iter().position(|&ch| ch == '\'').unwrap_or(0) + 1
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            3
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        let end = end.min(rest.len());
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

/// At `r"`, `r#"`, `br"`…: the number of `#`s.
fn raw_string_start(rest: &[char]) -> Option<usize> {
    let after = match rest {
        ['r', ..] => &rest[1..],
        ['b', 'r', ..] => &rest[2..],
        _ => return None,
    };
    let hashes = after.iter().take_while(|&&ch| ch == '#').count();
    (after.get(hashes) == Some(&'"')).then_some(hashes)
}

/// `code` (blanked `original`) without its `#[cfg(test)]` items, and the
/// `#[cfg(test)] mod name;` declarations (name, `#[path]`) whose files are test code.
fn drop_test_code(code: &str, original: &str) -> (String, Vec<(String, Option<String>)>) {
    const CFG: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(CFG) {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let offset = code.len() - item.len();
        let (len, declared) = test_item(item, &original[offset..], CFG.len());
        if let Some(m) = declared {
            mods.push(m);
        }
        out.extend(
            item[..len]
                .chars()
                .map(|ch| if ch == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[len..];
    }
    out.push_str(rest);
    (out, mods)
}

/// The length of the item at `item` (its `#[cfg(test)]` and later attributes included), and
/// what it declares when it is `mod name;` (`#[path]` read from `original`, the same text
/// before literals were blanked).
fn test_item(item: &str, original: &str, skip: usize) -> (usize, Option<(String, Option<String>)>) {
    let b = item.as_bytes();
    let mut i = skip;
    let mut path_attr = None;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if !item[i..].starts_with("#[") {
            break;
        }
        let close = item[i..].find(']').map_or(b.len(), |j| i + j + 1);
        if item[i..close].starts_with("#[path") {
            let attr = &original[i..close];
            path_attr = attr.split('"').nth(1).map(str::to_string);
        }
        i = close;
    }
    let (mut depth, mut j) = (0i32, i);
    while j < b.len() {
        match b[j] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    j += 1;
                    break;
                }
            }
            b';' if depth == 0 => {
                j += 1;
                break;
            }
            _ => {}
        }
        j += 1;
    }
    let head: Vec<&str> = item[i..j].split_whitespace().collect();
    let declared = match head.as_slice() {
        ["mod", name] | ["pub", "mod", name] | ["pub(crate)", "mod", name] => {
            name.strip_suffix(';').map(|n| (n.to_string(), path_attr))
        }
        _ => None,
    };
    (j, declared)
}

/// Every top-level module a `crate::` or `super::` path in `code` names, with its line.
fn references(code: &str, path: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let word_start = at == 0 || !is_ident(rest.as_bytes()[at - 1]);
            let after = &rest[at + "crate::".len()..];
            if word_start {
                if let Some(group) = after.strip_prefix('{') {
                    for name in top_names(group) {
                        out.push((n + 1, name));
                    }
                } else if let Some(name) = ident(after) {
                    out.push((n + 1, name));
                }
            }
            rest = after;
        }
        let mut rest = line;
        while let Some(at) = rest.find("super::") {
            if at > 0 && (is_ident(rest.as_bytes()[at - 1]) || rest[..at].ends_with("::")) {
                rest = &rest[at + 7..];
                continue;
            }
            let mut up = 0;
            let mut after = &rest[at..];
            while let Some(a) = after.strip_prefix("super::") {
                up += 1;
                after = a;
            }
            // A file's own module is `path`; `super` is its parent.
            let base = path.len().saturating_sub(up);
            let name = if base > 0 {
                Some(path[0].clone())
            } else {
                ident(after)
            };
            if let Some(name) = name {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident(s: &str) -> Option<String> {
    let len = s.bytes().take_while(|&b| is_ident(b)).count();
    (len > 0).then(|| s[..len].to_string())
}

/// The first segment of every path in a `{…}` group (nested groups skipped).
fn top_names(group: &str) -> Vec<String> {
    let mut names = Vec::new();
    let (mut depth, mut at_start) = (0, true);
    let mut chars = group.char_indices().peekable();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if depth == 0 && at_start && (c.is_ascii_alphanumeric() || c == '_') => {
                if let Some(name) = ident(&group[i..]) {
                    names.push(name);
                }
                at_start = false;
            }
            _ => {}
        }
        let _ = chars.peek();
    }
    names
}

/// One cycle of `graph`, each edge with where it is made, or `None`.
fn find_cycle(graph: &Graph) -> Option<String> {
    fn visit(
        graph: &Graph,
        node: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(graph, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        if let Some(cycle) = visit(graph, start, &mut Vec::new(), &mut done) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("  {} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
                .collect();
            return Some(edges.join("\n"));
        }
    }
    None
}
