//! A target's build as it says of itself ([`BinaryProvenance`]): the compilers named in the
//! ELF `.comment` section of its server program or library (read with `object`, section by
//! section, never the whole file at once), and the first line its program prints for
//! `--version`. What a family's [`crate::engine::Family::provenance`] gathers by default.
//!
//! Must not: fail a run (what cannot be read is said in `unread`), write or change any file,
//! or act on a path read from a file: the files read are the ones the target's own keys name
//! (`engine::build_file`), and their contents are data.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use object::{Object, ObjectSection};

use crate::results::BinaryProvenance;

/// The longest version line kept (a program that prints a page keeps its first line, cut).
const MAX_LINE: usize = 300;
/// The most `.comment` bytes read: a real one is a few hundred.
const MAX_COMMENT: u64 = 64 * 1024;

/// The provenance of a server `program`: its `.comment`'s compilers and its `--version`
/// line, run with `env` (the target's environment and what the family adds to it).
pub fn of_program(program: &Path, env: &BTreeMap<String, String>) -> BinaryProvenance {
    let mut p = of_file(program, program.display().to_string());
    match version_line(program, env) {
        Ok(line) => p.version_line = Some(line),
        Err(e) => p.unread.push(format!("{e:#}")),
    }
    p
}

/// The provenance of a library or program `file` that is not run (an embedded engine's), shown
/// as `shown`: only its `.comment`'s compilers.
pub fn of_file(file: &Path, shown: String) -> BinaryProvenance {
    let mut p = BinaryProvenance {
        file: Some(shown),
        ..BinaryProvenance::default()
    };
    match elf_comment(file) {
        Ok(comment) if comment.is_empty() => p.unread.push(format!(
            "{}: no .comment section (stripped)",
            file.display()
        )),
        Ok(comment) => p.compilers = compilers(&comment),
        Err(e) => p.unread.push(format!("{e:#}")),
    }
    p
}

/// The NUL-separated strings of an ELF file's `.comment` section, in order, empty ones left
/// out; empty when the file has no such section (a stripped build may drop it).
pub fn elf_comment(path: &Path) -> Result<Vec<String>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache)
        .with_context(|| format!("{} is not an ELF file object can read", path.display()))?;
    let Some(section) = elf.section_by_name(".comment") else {
        return Ok(Vec::new());
    };
    let size = section.size().min(MAX_COMMENT);
    let bytes = (section.data_range(section.address(), size))
        .with_context(|| format!("cannot read the .comment section of {}", path.display()))?
        .unwrap_or_default();
    Ok(bytes
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect())
}

/// The compilers of `.comment` strings, distinct, in order: GCC's `GCC: (Debian 12.2.0-14)
/// 12.2.0` said as its `--version` says it (`gcc (Debian 12.2.0-14) 12.2.0`, the form of
/// PostgreSQL's "compiled by"), clang's as it is; linker lines left out. When no C or C++
/// compiler is named, every other string is kept (a build of another language).
pub fn compilers(comment: &[String]) -> Vec<String> {
    let named: Vec<String> = (comment.iter())
        .filter(|s| !s.starts_with("Linker:"))
        .map(|s| match s.strip_prefix("GCC:") {
            Some(rest) => format!("gcc {}", rest.trim()),
            None => s.clone(),
        })
        .collect();
    let c = |s: &String| s.starts_with("gcc ") || s.contains("clang version");
    let keep: Vec<&String> = match named.iter().any(c) {
        true => named.iter().filter(|s| c(s)).collect(),
        false => named.iter().collect(),
    };
    let mut out: Vec<String> = Vec::new();
    for s in keep {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// The first non-empty line `program --version` prints (stdout, else stderr), the program's
/// path at its start said as its file name, its runs of blanks made one, cut at [`MAX_LINE`]
/// characters.
pub fn version_line(program: &Path, env: &BTreeMap<String, String>) -> Result<String> {
    let out = Command::new(program)
        .arg("--version")
        .envs(env)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {} --version", program.display()))?;
    let text = |b: &[u8]| {
        let mut s = String::new();
        (&b[..b.len().min(64 * 1024)]).read_to_string(&mut s).ok();
        s
    };
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let first = |s: &str| {
        s.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(String::from)
    };
    let line = first(&stdout).or_else(|| first(&stderr));
    match (out.status.success(), line) {
        (true, Some(line)) => {
            // `mysqld` starts its line with the path it was run by: the name says as much.
            let shown = program.display().to_string();
            let name = program
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let line = match (line.strip_prefix(&shown), name) {
                (Some(rest), Some(name)) => format!("{name}{rest}"),
                _ => line,
            };
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            Ok(line.chars().take(MAX_LINE).collect())
        }
        (true, None) => anyhow::bail!("{} --version printed nothing", program.display()),
        (false, line) => anyhow::bail!(
            "{} --version failed: {}",
            program.display(),
            line.unwrap_or_else(|| "no message".into())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_is_said_as_its_version_line_and_linkers_and_rustc_are_left_out() {
        let comment = [
            "GCC: (Debian 12.2.0-14) 12.2.0",
            "rustc version 1.91.0 (f8297e351 2025-10-28)",
            "Linker: LLD 19.1.7",
            "GCC: (Debian 12.2.0-14) 12.2.0",
            "clang version 19.1.7",
        ]
        .map(String::from);
        assert_eq!(
            compilers(&comment),
            ["gcc (Debian 12.2.0-14) 12.2.0", "clang version 19.1.7"]
        );
        let rust_only = ["rustc version 1.91.0".to_string()];
        assert_eq!(compilers(&rust_only), ["rustc version 1.91.0"]);
    }

    /// The test binary itself: an ELF file whose `.comment` names the C compiler that built
    /// the bundled SQLite (and glibc's start files) and rustc.
    #[test]
    fn this_test_binary_names_its_compilers() {
        let comment = elf_comment(Path::new("/proc/self/exe")).unwrap();
        assert!(
            comment.iter().any(|s| s.starts_with("rustc version")),
            "{comment:?}"
        );
        let p = of_file(Path::new("/proc/self/exe"), "dbdelta".into());
        assert!(p.compiler().is_some_and(|c| !c.contains("rustc")), "{p:?}");
    }

    /// A real server program of this host (Debian's PostgreSQL 15, which CI installs): its
    /// `--version` line, and its missing `.comment` said (Debian strips it from packages).
    #[test]
    fn debian_postgres_says_its_version_and_its_stripped_comment() {
        let postgres = Path::new("/usr/lib/postgresql/15/bin/postgres");
        let p = of_program(postgres, &BTreeMap::new());
        assert!(
            (p.version_line.as_deref()).is_some_and(|l| l.starts_with("postgres (PostgreSQL) 15")),
            "{p:?}"
        );
        let comment = elf_comment(postgres).unwrap();
        assert_eq!(comment, Vec::<String>::new(), "Debian strips .comment");
        assert_eq!(
            p.unread,
            [format!(
                "{}: no .comment section (stripped)",
                postgres.display()
            )]
        );
    }

    /// MySQL's `mysqld --version` starts with the path it was run by.
    #[test]
    fn the_programs_path_in_its_version_line_is_said_as_its_name() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("mysqld");
        std::fs::write(&prog, "#!/bin/sh\necho \"$0  Ver 8.0.31 for Linux\"\n").unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let line = version_line(&prog, &BTreeMap::new()).unwrap();
        assert_eq!(line, "mysqld Ver 8.0.31 for Linux");
    }

    #[test]
    fn a_file_that_is_not_elf_is_said_unread() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("not-elf");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        let p = of_file(&f, "not-elf".into());
        assert!(p.compilers.is_empty());
        assert!(p.unread[0].contains("not an ELF file"), "{p:?}");
    }
}
