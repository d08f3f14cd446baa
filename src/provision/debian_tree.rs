//! A Debian build's tree: its `.deb`s downloaded and checked against the suite's index,
//! unpacked with `dpkg-deb -x` into one private root, and each program started through that
//! root's own loader.
//!
//! Every ELF program in `usr/bin`, `usr/sbin` and PostgreSQL's `usr/lib/postgresql/<N>/bin`
//! moves under `usr/lib/dbdelta-elf/` (`bin/`, `sbin/`, `postgresql/<N>/bin/`) and its place
//! takes a `/bin/sh` launcher that `exec`s the root's `ld-linux-x86-64.so.2 --library-path
//! <root's library dirs> --argv0 <launcher> <program>`: the loader runs the program in the same
//! process (so the process id a server is recorded and sampled under is the server's), with
//! the root's C library and libstdc++ rather than the host's, and nothing on the host changes.
//! The program sees the launcher's path as its own (`--argv0`), so PostgreSQL's `initdb` finds
//! `postgres` beside it and the server finds `share/` and `lib/` relative to its directory.
//! Paths in the launcher are relative to it, so a copy of the tree (a remote target's) runs
//! too. Links that point outside the root are made relative to it (absolute) or left out
//! (climbing above it). PostgreSQL's JIT provider is removed when the LLVM it links was left
//! out of the build (the server then runs without JIT, as npm's builds do).
//! Must not: choose packages (the index does) or start servers.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::checksum::{self, Checksum};
use super::debian::{self, Index};
use super::{Package, Release};
use crate::engine::common::fetchable::DebianBuild;

/// Where the programs the launchers start are kept, relative to the root.
const PROGRAMS: &str = "usr/lib/dbdelta-elf";
/// The loader, where Debian's `libc6` puts it (after and before the `/usr` merge).
const LOADERS: &[&str] = &[
    "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
];
/// The library directories of an amd64 root.
const LIB_DIRS: &[&str] = &["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];

/// One downloaded `.deb` of an entry: its file name and the index's checksum of it.
pub type Part = (String, Checksum);

/// Download the `.deb`s of `release` into `<staging>/<debs>` (each checked against the index
/// as it arrives) and unpack them into `<staging>/<tree>`. Returns the parts and the bytes
/// downloaded.
pub fn download(
    release: &Release,
    staging: &Path,
    debs: &str,
    tree: &str,
    say: &dyn Fn(&str),
) -> Result<(Vec<Part>, u64)> {
    let Package::Debian { suite, package } = &release.package else {
        bail!("not a Debian build: {}", release.source());
    };
    let build = debian::build_of(suite, package)?;
    let index = Index::of(suite)?;
    let root = index.get(package)?;
    if root.version != release.package_version {
        bail!(
            "Debian {suite} now holds {package} {} instead of {}; run the command again",
            root.version,
            release.package_version
        );
    }
    let wanted = debian::debs(build, &index)?;
    say(&format!(
        "{} packages from Debian {suite}: {}",
        wanted.len(),
        wanted
            .iter()
            .map(|d| d.file.split('_').next().unwrap_or(&d.file))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let dir = staging.join(debs);
    std::fs::create_dir_all(&dir)?;
    let mut bytes = 0;
    let mut parts = Vec::new();
    for d in &wanted {
        bytes += checksum::download(&d.url, &dir.join(&d.file), &d.checksum)?;
        parts.push((d.file.clone(), d.checksum.clone()));
    }
    let tree = staging.join(tree);
    std::fs::create_dir(&tree)?;
    unpack(&dir, &parts, &tree, release.layout.bin())?;
    Ok((parts, bytes))
}

/// Does every part still hash to the index's checksum?
pub fn parts_match(debs: &Path, parts: &[Part]) -> Result<bool> {
    for (file, checksum) in parts {
        let path = debs.join(file);
        if !path.is_file() || !checksum::archive_matches(&path, checksum)? {
            return Ok(false);
        }
    }
    Ok(!parts.is_empty())
}

/// Unpack the verified `.deb`s into the empty `tree` and put the launchers in place; `bin` is
/// the server's directory in it.
pub fn unpack(debs: &Path, parts: &[Part], tree: &Path, bin: &str) -> Result<()> {
    for (file, _) in parts {
        let deb = debs.join(file);
        let out = Command::new("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg(tree)
            .output()
            .context("running dpkg-deb: apt-get install dpkg")?;
        if !out.status.success() {
            bail!(
                "dpkg-deb -x {}: {}",
                deb.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    keep_links_inside(tree, tree)?;
    launchers(tree, bin)?;
    for build in debian::all_builds().filter(|b| b.bin == bin) {
        drop_what_needs_left_out(tree, build)?;
    }
    super::unpack::open_up(tree)
}

/// Absolute links become links relative to the root; links climbing above it are removed.
fn keep_links_inside(root: &Path, dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = path.symlink_metadata()?;
        if meta.is_dir() {
            keep_links_inside(root, &path)?;
            continue;
        }
        if !meta.file_type().is_symlink() {
            continue;
        }
        let target = std::fs::read_link(&path)?;
        let rel = path.strip_prefix(root)?;
        let base = rel.parent().unwrap_or(Path::new(""));
        let new = if target.is_absolute() {
            let depth = base.components().count();
            let up: PathBuf = std::iter::repeat_n(Component::ParentDir, depth).collect();
            Some(up.join(target.strip_prefix("/")?))
        } else if super::unpack::stays_inside(base, &target) {
            None
        } else {
            std::fs::remove_file(&path)?;
            continue;
        };
        if let Some(new) = new {
            std::fs::remove_file(&path)?;
            std::os::unix::fs::symlink(&new, &path)?;
        }
    }
    Ok(())
}

fn is_elf(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path)?;
    Ok(f.read(&mut magic)? == 4 && magic == *b"\x7fELF")
}

/// The directories whose programs get launchers, relative to the root: `usr/bin`, `usr/sbin`,
/// and the server's `bin` (`usr/lib/postgresql/<N>/bin`) when it is another.
fn program_dirs(tree: &Path, bin: &str) -> Vec<String> {
    let mut dirs = vec!["usr/bin".to_string(), "usr/sbin".to_string()];
    if !dirs.iter().any(|d| d == bin) && tree.join(bin).is_dir() {
        dirs.push(bin.to_string());
    }
    dirs
}

/// A file that loads a library the build left out (PostgreSQL's JIT provider, `lib/llvmjit.so`,
/// loads LLVM's) would fail the server when loaded, so it goes when the tree holds none of
/// that library (the server then runs without it: without JIT, as npm's builds do).
fn drop_what_needs_left_out(tree: &Path, build: &DebianBuild) -> Result<()> {
    let has = |prefix: &str| {
        LIB_DIRS.iter().any(|d| {
            std::fs::read_dir(tree.join(d))
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| (e.file_name().to_string_lossy().to_lowercase()).starts_with(prefix))
        })
    };
    if build.leave_out.iter().any(|l| has(l)) {
        return Ok(());
    }
    let home = tree.join(build.bin).join("..");
    for file in build.needs_left_out {
        if home.join(file).is_file() {
            std::fs::remove_file(home.join(file))?;
        }
    }
    Ok(())
}

/// Replace every ELF program of the [`program_dirs`] by a launcher.
fn launchers(tree: &Path, bin: &str) -> Result<()> {
    let loader = LOADERS
        .iter()
        .find(|l| tree.join(l).is_file())
        .with_context(|| {
            format!(
                "the unpacked Debian build has no loader (looked for {})",
                LOADERS.join(", ")
            )
        })?;
    let libs: Vec<String> = LIB_DIRS
        .iter()
        .filter(|d| tree.join(d).is_dir())
        .map(|d| format!("$r/{d}"))
        .collect();
    for dir in program_dirs(tree, bin) {
        let from = tree.join(&dir);
        let Ok(entries) = std::fs::read_dir(&from) else {
            continue;
        };
        let to = tree.join(PROGRAMS).join(kept_as(&dir));
        std::fs::create_dir_all(&to)?;
        for entry in entries {
            let path = entry?.path();
            let meta = path.symlink_metadata()?;
            if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 || !is_elf(&path)? {
                continue;
            }
            let name = path.file_name().context("a program without a name")?;
            std::fs::rename(&path, to.join(name))?;
            let script = launcher(loader, &libs.join(":"), &dir, &name.to_string_lossy());
            std::fs::write(&path, script)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// Where the program of a launcher directory is kept, under [`PROGRAMS`]: `usr/sbin` →
/// `sbin`, `usr/lib/postgresql/17/bin` → `postgresql/17/bin`.
fn kept_as(dir: &str) -> &str {
    let d = dir.strip_prefix("usr/").unwrap_or(dir);
    d.strip_prefix("lib/").unwrap_or(d)
}

/// The launcher of `<dir>/<name>` (`dir` relative to the root); `$r` is the root, as many
/// levels above it as `dir` has parts.
fn launcher(loader: &str, libs: &str, dir: &str, name: &str) -> String {
    let up = vec![".."; dir.split('/').count()].join("/");
    let kept = kept_as(dir);
    format!(
        "#!/bin/sh\n\
         # Written by dbdelta: runs this program of a Debian build through the build's own\n\
         # loader and libraries, in this process (exec), without touching the host's.\n\
         r=\"${{0%/*}}/{up}\"\n\
         exec \"$r/{loader}\" --library-path \"{libs}\" --argv0 \"$0\" \"$r/{PROGRAMS}/{kept}/{name}\" \"$@\"\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_kept_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("usr/lib64")).unwrap();
        std::fs::create_dir_all(root.join("usr/lib/x86_64-linux-gnu")).unwrap();
        std::os::unix::fs::symlink(
            "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
            root.join("usr/lib64/ld-linux-x86-64.so.2"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../../../etc/passwd", root.join("usr/lib64/up")).unwrap();
        std::os::unix::fs::symlink("libz.so.1.3", root.join("usr/lib64/libz.so.1")).unwrap();
        keep_links_inside(root, root).unwrap();
        assert_eq!(
            std::fs::read_link(root.join("usr/lib64/ld-linux-x86-64.so.2")).unwrap(),
            Path::new("../../usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        );
        assert!(root.join("usr/lib64/up").symlink_metadata().is_err());
        assert_eq!(
            std::fs::read_link(root.join("usr/lib64/libz.so.1")).unwrap(),
            Path::new("libz.so.1.3")
        );
    }

    #[test]
    fn programs_get_launchers_scripts_stay() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["usr/sbin", "usr/bin", "usr/lib/x86_64-linux-gnu"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(LOADERS[0]), b"\x7fELF loader").unwrap();
        std::fs::write(root.join("usr/sbin/mysqld"), b"\x7fELF server").unwrap();
        std::fs::write(root.join("usr/bin/install-db"), b"#!/bin/sh\n").unwrap();
        for p in ["usr/sbin/mysqld", "usr/bin/install-db"] {
            std::fs::set_permissions(root.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        launchers(root, "usr/sbin").unwrap();
        let script = std::fs::read_to_string(root.join("usr/sbin/mysqld")).unwrap();
        assert!(
            script.contains(
                "exec \"$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\" --library-path \"$r/usr/lib/x86_64-linux-gnu\" --argv0 \"$0\" \"$r/usr/lib/dbdelta-elf/sbin/mysqld\" \"$@\""
            ),
            "{script}"
        );
        assert_eq!(
            std::fs::read(root.join("usr/lib/dbdelta-elf/sbin/mysqld")).unwrap(),
            b"\x7fELF server"
        );
        assert_eq!(
            std::fs::read(root.join("usr/bin/install-db")).unwrap(),
            b"#!/bin/sh\n"
        );
    }

    /// PostgreSQL's programs get their launchers in their own directory (so `initdb` finds
    /// `postgres` beside it), five levels below the root; without LLVM the JIT provider goes,
    /// with it the provider stays.
    #[test]
    fn postgres_programs_get_launchers_beside_each_other_and_jit_needs_llvm() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bin = root.join("usr/lib/postgresql/17/bin");
        let lib = root.join("usr/lib/postgresql/17/lib");
        for d in [&bin, &lib, &root.join("usr/lib/x86_64-linux-gnu")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(root.join(LOADERS[0]), b"\x7fELF loader").unwrap();
        for p in ["postgres", "initdb"] {
            std::fs::write(bin.join(p), b"\x7fELF pg").unwrap();
            std::fs::set_permissions(bin.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        for f in ["llvmjit.so", "llvmjit_types.bc", "plpgsql.so"] {
            std::fs::write(lib.join(f), b"x").unwrap();
        }
        let (bin_dir, build) = (
            "usr/lib/postgresql/17/bin",
            debian::build_of("trixie", "postgresql-17").unwrap(),
        );
        assert_eq!(
            program_dirs(root, bin_dir),
            ["usr/bin", "usr/sbin", "usr/lib/postgresql/17/bin"]
        );
        launchers(root, bin_dir).unwrap();
        let script = std::fs::read_to_string(bin.join("initdb")).unwrap();
        assert!(
            script.contains("r=\"${0%/*}/../../../../..\"\n")
                && script.contains(
                    "--argv0 \"$0\" \"$r/usr/lib/dbdelta-elf/postgresql/17/bin/initdb\" \"$@\""
                ),
            "{script}"
        );
        assert!(
            root.join("usr/lib/dbdelta-elf/postgresql/17/bin/postgres")
                .is_file()
        );

        std::fs::write(root.join("usr/lib/x86_64-linux-gnu/libLLVM.so.19.1"), b"x").unwrap();
        drop_what_needs_left_out(root, build).unwrap();
        assert!(lib.join("llvmjit.so").is_file(), "LLVM is there: JIT stays");
        std::fs::remove_file(root.join("usr/lib/x86_64-linux-gnu/libLLVM.so.19.1")).unwrap();
        drop_what_needs_left_out(root, build).unwrap();
        assert!(!lib.join("llvmjit.so").exists() && !lib.join("llvmjit_types.bc").exists());
        assert!(lib.join("plpgsql.so").is_file());
    }

    #[test]
    fn a_tampered_deb_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.deb"), b"abc").unwrap();
        // sha256("abc")
        let good = Checksum::Sha256(
            super::super::checksum::decode_hex(
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            )
            .unwrap(),
        );
        let parts = vec![("a.deb".to_string(), good)];
        assert!(parts_match(dir.path(), &parts).unwrap());
        std::fs::write(dir.path().join("a.deb"), b"abd").unwrap();
        assert!(!parts_match(dir.path(), &parts).unwrap());
        std::fs::remove_file(dir.path().join("a.deb")).unwrap();
        assert!(!parts_match(dir.path(), &parts).unwrap());
        assert!(!parts_match(dir.path(), &[]).unwrap());
    }
}
