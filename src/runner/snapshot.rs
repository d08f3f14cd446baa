//! Saved loads (`reuse_load`): a checksummed copy of a cell's data directory right after its
//! suite's load and index build, kept per target × suite × scale in a snapshot directory, and
//! copied back instead of loading by a later cell of the same key (this run's next repeat, or
//! a later run).
//!
//! Owns the key (engine family, the build file's path and SHA-256, the target's settings,
//! arguments, environment and table options, the suite's `load_key`), the manifest
//! (`manifest.json`: the key, when it was saved, how long the load took, every file's size and
//! SHA-256) and copying with checksums both ways. A snapshot whose key differs is refused
//! naming what differs; one whose files no longer match their checksums is refused and
//! removed. Must not: start or stop servers, or time anything but the copies (the cell does
//! the rest).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::engine::{self, TableDdl, TargetSpec};
use crate::provision::{hex, sha256_file};
use crate::workload::Suite;

/// The manifest's version: a snapshot of another version is refused.
const FORMAT: u32 = 1;
const MANIFEST: &str = "manifest.json";
const DATA: &str = "data";

/// Everything that shapes the files a load leaves: a snapshot is reused only under an equal key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Key {
    pub format: u32,
    pub engine: String,
    /// The build file's path (`bundled SQLite x.y.z` for the SQLite inside dbdelta).
    pub build: String,
    /// The build file's SHA-256 (empty for the bundled SQLite).
    pub build_sha256: String,
    pub settings: Vec<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub tables: TableDdl,
    /// The suite's `load_key`: the suite and its load-shaping scale.
    pub load: String,
}

/// What `manifest.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub key: Key,
    /// RFC 3339, UTC.
    pub saved: String,
    /// The load's and the index build's seconds when it was saved.
    pub load_secs: f64,
    pub index_secs: f64,
    /// Every regular file under `data/`: relative path → (bytes, SHA-256).
    pub files: BTreeMap<String, (u64, String)>,
}

/// A cell that wants a saved load: where snapshots live and the key of its own.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub root: PathBuf,
    pub key: Key,
    /// `TARGET.SUITE.HASH`: the directory under `root`.
    pub name: String,
    /// `TARGET.SUITE.`: what every snapshot of this target and suite starts with.
    prefix: String,
}

/// A load copied back from a snapshot.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: Box<Manifest>,
    /// The copy's seconds, measured.
    pub secs: f64,
    pub bytes: u64,
}

/// The key of `target` × `suite` at `clients` clients, or why its load cannot be saved.
pub fn wanted(
    root: &Path,
    target: &TargetSpec,
    suite: &dyn Suite,
    clients: u32,
) -> Result<Wanted, String> {
    let load = suite.load_key(clients).ok_or_else(|| {
        format!(
            "suite {} has no load of its own to reuse (its first step is its load)",
            suite.id()
        )
    })?;
    let file = engine::build_file(target).map_err(|e| format!("{e:#}"))?;
    let (build, build_sha256) = match file {
        None => (
            format!("bundled SQLite {}", rusqlite::version()),
            String::new(),
        ),
        Some(f) => {
            let f = f.canonicalize().unwrap_or(f);
            let sum = sha256_file(&f).map_err(|e| format!("{e:#}"))?;
            (f.display().to_string(), sum)
        }
    };
    let key = Key {
        format: FORMAT,
        engine: target.engine.name().into(),
        build,
        build_sha256,
        settings: target.settings.clone(),
        args: target.args.clone(),
        env: target.env.clone(),
        tables: target.tables.clone(),
        load,
    };
    let json = serde_json::to_vec(&key).expect("key serializes");
    let hash = hex(&sha2::Sha256::digest(&json))[..12].to_string();
    let prefix = format!("{}.{}.", target.name, suite.id());
    Ok(Wanted {
        root: root.to_path_buf(),
        name: format!("{prefix}{hash}"),
        key,
        prefix,
    })
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// A snapshot of this key.
    Same(Box<Manifest>),
    /// None of this key; the latest of this target and suite differs (one line: what).
    Differs(String),
    Nothing,
}

/// Look for `w`'s snapshot; without one, say how the closest of the same target and suite
/// (the fewest keys apart; of those, the latest) differs from it.
pub fn find(w: &Wanted) -> Found {
    if let Ok(m) = read_manifest(&w.root.join(&w.name))
        && m.key == w.key
    {
        return Found::Same(Box::new(m));
    }
    let others = std::fs::read_dir(&w.root).into_iter().flatten().flatten();
    let closest = others
        .filter(|e| e.file_name().to_string_lossy().starts_with(&w.prefix))
        .filter_map(|e| read_manifest(&e.path()).ok())
        .min_by(|a, b| {
            let apart = |m: &Manifest| differing(&m.key, &w.key).len();
            apart(a).cmp(&apart(b)).then(b.saved.cmp(&a.saved))
        });
    match closest {
        Some(m) => Found::Differs(format!(
            "snapshot {} (saved {}) was saved with {}",
            m.name,
            shown_time(&m.saved),
            differences(&m.key, &w.key)
        )),
        None => Found::Nothing,
    }
}

fn read_manifest(dir: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(dir.join(MANIFEST))?;
    Ok(serde_json::from_str(&text)?)
}

/// `2026-11-26 09:12 UTC` from a stored RFC 3339 time.
pub fn shown_time(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.to_utc().format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| rfc3339.to_string())
}

/// What differs between a saved key and the wanted one, e.g.
/// `load "sysbench tables=1 rows=10000", not "sysbench tables=1 rows=20000"`.
pub fn differences(saved: &Key, now: &Key) -> String {
    let out: Vec<String> = (differing(saved, now).into_iter())
        .map(|(name, was, is)| {
            // A digest is told apart by its first 12 digits.
            let shown = |v: &serde_json::Value| match (name.as_str(), v.as_str()) {
                ("build_sha256", Some("")) => "none".to_string(),
                ("build_sha256", Some(d)) => format!("{}…", &d[..d.len().min(12)]),
                _ => v.to_string(),
            };
            format!("{name} {}, not {}", shown(&was), shown(&is))
        })
        .collect();
    match out.is_empty() {
        true => "the same key in another format".into(),
        false => out.join("; "),
    }
}

/// The fields of two keys that differ: (name, saved value, wanted value).
fn differing(saved: &Key, now: &Key) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    let field = |k: &Key| serde_json::to_value(k).expect("key serializes");
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (field(saved), field(now))
    else {
        unreachable!("a key serializes to an object")
    };
    (a.into_iter())
        .filter_map(|(name, v)| {
            let w = b.get(&name).cloned().unwrap_or_default();
            (v != w).then_some((name, v, w))
        })
        .collect()
}

/// Copy the snapshot `m` into the empty directory `into`, checking every file's checksum on
/// the way. A changed, missing or extra file empties `into`, removes the snapshot and fails
/// naming the file.
pub fn restore(w: &Wanted, m: Box<Manifest>, into: &Path) -> Result<Restored> {
    let started = std::time::Instant::now();
    let from = w.root.join(&m.name);
    let copied = copy_tree(&from.join(DATA), into);
    let mismatch = match &copied {
        Ok(files) => first_mismatch(&m.files, files),
        Err(e) => Some(format!("{e:#}")),
    };
    if let Some(why) = mismatch {
        empty_dir(into)?;
        let _ = std::fs::remove_dir_all(&from);
        bail!(
            "snapshot {} is damaged ({why}); it was removed and the load runs afresh",
            m.name
        );
    }
    let bytes = m.files.values().map(|(b, _)| b).sum();
    Ok(Restored {
        manifest: m,
        secs: started.elapsed().as_secs_f64(),
        bytes,
    })
}

/// The first file of `want` that `got` lacks or holds with other contents, or one `got` adds.
fn first_mismatch(
    want: &BTreeMap<String, (u64, String)>,
    got: &BTreeMap<String, (u64, String)>,
) -> Option<String> {
    for (path, sum) in want {
        match got.get(path) {
            None => return Some(format!("{path} is missing")),
            Some(g) if g != sum => return Some(format!("{path} does not match its checksum")),
            Some(_) => {}
        }
    }
    (got.keys().find(|p| !want.contains_key(*p))).map(|p| format!("{p} was not saved with it"))
}

fn empty_dir(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        match p.is_dir() {
            true => std::fs::remove_dir_all(&p)?,
            false => std::fs::remove_file(&p)?,
        }
    }
    Ok(())
}

/// Save `from` (a data directory whose server stopped cleanly) as `w`'s snapshot, with the
/// load's timings; written under a temporary name and renamed, so a snapshot is whole or
/// absent. Returns the manifest and the copy's seconds.
pub fn save(w: &Wanted, from: &Path, load_secs: f64, index_secs: f64) -> Result<(Manifest, f64)> {
    let started = std::time::Instant::now();
    create_private(&w.root)?;
    let tmp = w
        .root
        .join(format!(".{}.{}.tmp", w.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    create_private(&tmp)?;
    let result = (|| -> Result<Manifest> {
        let files = copy_tree(from, &tmp.join(DATA))?;
        let m = Manifest {
            name: w.name.clone(),
            key: w.key.clone(),
            saved: chrono::Utc::now().to_rfc3339(),
            load_secs,
            index_secs,
            files,
        };
        let json = serde_json::to_string_pretty(&m).expect("manifest serializes");
        std::fs::write(tmp.join(MANIFEST), json)?;
        let dest = w.root.join(&w.name);
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::rename(&tmp, &dest)?;
        Ok(m)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let m =
        result.with_context(|| format!("saving snapshot {} in {}", w.name, w.root.display()))?;
    Ok((m, started.elapsed().as_secs_f64()))
}

/// A directory only its owner can enter (the data inside is a server's).
fn create_private(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("chmod 700 {}", dir.display()))
}

/// Copy the regular files and directories under `from` into `to` (created, with `from`'s
/// modes), hashing each file as it is copied: relative path → (bytes, SHA-256). Sockets and
/// other special files (a server's, gone after a clean stop) are not copied; a symbolic link
/// is refused.
fn copy_tree(from: &Path, to: &Path) -> Result<BTreeMap<String, (u64, String)>> {
    let mut out = BTreeMap::new();
    copy_dir(from, to, "", &mut out)?;
    Ok(out)
}

fn copy_dir(
    from: &Path,
    to: &Path,
    rel: &str,
    out: &mut BTreeMap<String, (u64, String)>,
) -> Result<()> {
    let meta = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?;
    if !to.exists() {
        std::fs::create_dir(to).with_context(|| format!("creating {}", to.display()))?;
    }
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel = match rel {
            "" => name.clone(),
            r => format!("{r}/{name}"),
        };
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            bail!("{} is a symbolic link: not saved", path.display());
        } else if kind.is_dir() {
            copy_dir(&path, &to.join(&name), &rel, out)?;
        } else if kind.is_file() {
            let sum = copy_file(&path, &to.join(&name))?;
            out.insert(rel, sum);
        }
    }
    Ok(())
}

/// Copy one file a megabyte at a time with its mode: (bytes, SHA-256).
fn copy_file(from: &Path, to: &Path) -> Result<(u64, String)> {
    let mut src =
        std::fs::File::open(from).with_context(|| format!("reading {}", from.display()))?;
    let mode = src.metadata()?.mode() & 0o7777;
    let mut dst = std::fs::File::create(to).with_context(|| format!("writing {}", to.display()))?;
    let (mut h, mut buf, mut bytes) = (sha2::Sha256::new(), vec![0u8; 1 << 20], 0u64);
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        dst.write_all(&buf[..n])
            .with_context(|| format!("writing {}", to.display()))?;
        bytes += n as u64;
    }
    dst.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok((bytes, hex(&h.finalize())))
}

/// The snapshots under `root`, by name.
pub fn list(root: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(root).into_iter().flatten().flatten();
    let mut out: Vec<String> = entries
        .filter(|e| e.path().join(MANIFEST).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Remove every snapshot under `root` (and what an interrupted save left): the names removed.
pub fn remove_all(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(out);
    };
    for e in entries {
        let e = e?;
        if e.path().join(MANIFEST).is_file() || e.file_name().to_string_lossy().ends_with(".tmp") {
            std::fs::remove_dir_all(e.path())
                .with_context(|| format!("removing {}", e.path().display()))?;
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    let _ = std::fs::remove_dir(root);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rows: u64) -> Key {
        Key {
            format: FORMAT,
            engine: "sqlite".into(),
            build: "bundled SQLite 3".into(),
            build_sha256: String::new(),
            settings: vec!["synchronous = OFF".into()],
            args: vec![],
            env: BTreeMap::new(),
            tables: TableDdl::default(),
            load: format!("sysbench tables=1 rows={rows}"),
        }
    }

    #[test]
    fn differences_name_the_field_and_both_values() {
        let d = differences(&key(10), &key(20));
        assert_eq!(
            d,
            r#"load "sysbench tables=1 rows=10", not "sysbench tables=1 rows=20""#
        );
    }

    #[test]
    fn a_refusal_names_the_closest_snapshot_not_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("db");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("a"), b"one").unwrap();
        let at = |key: Key, name: &str| Wanted {
            root: dir.path().join("snaps"),
            key,
            name: name.into(),
            prefix: "t.sysbench.".into(),
        };
        save(&at(key(10), "t.sysbench.a"), &data, 1.0, 0.5).unwrap();
        save(&at(key(20), "t.sysbench.b"), &data, 1.0, 0.5).unwrap();
        // Rows 10 on another build: one field from the first snapshot, two from the latest.
        let other_build = Key {
            build: "/usr/lib/libsqlite3.so".into(),
            ..key(10)
        };
        match find(&at(other_build, "t.sysbench.c")) {
            Found::Differs(why) => {
                assert!(why.starts_with("snapshot t.sysbench.a "), "{why}");
                assert!(
                    why.ends_with(r#"build "bundled SQLite 3", not "/usr/lib/libsqlite3.so""#),
                    "{why}"
                );
            }
            f => panic!("expected a refusal, got {f:?}"),
        }
    }

    #[test]
    fn a_saved_tree_restores_and_a_changed_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("db");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::fs::write(data.join("a"), b"one").unwrap();
        std::fs::write(data.join("sub/b"), vec![7u8; 3 << 20]).unwrap();
        let w = Wanted {
            root: dir.path().join("snaps"),
            key: key(10),
            name: "t.sysbench.abc".into(),
            prefix: "t.sysbench.".into(),
        };
        let (m, _) = save(&w, &data, 1.0, 0.5).unwrap();
        assert_eq!(m.files["sub/b"].0, 3 << 20);
        let Found::Same(m) = find(&w) else {
            panic!("the saved snapshot is found")
        };
        let into = dir.path().join("into");
        std::fs::create_dir(&into).unwrap();
        let r = restore(&w, m.clone(), &into).unwrap();
        assert_eq!(r.bytes, 3 + (3 << 20));
        assert_eq!(std::fs::read(into.join("a")).unwrap(), b"one");
        // Another scale is refused, naming the rows.
        let other = Wanted {
            key: key(20),
            name: "t.sysbench.def".into(),
            ..w.clone()
        };
        match find(&other) {
            Found::Differs(why) => assert!(why.contains("rows=10"), "{why}"),
            f => panic!("expected a refusal, got {f:?}"),
        }
        // A file changed in the snapshot: refused, the copy emptied, the snapshot removed.
        std::fs::write(w.root.join(&w.name).join("data/a"), b"two").unwrap();
        let into2 = dir.path().join("into2");
        std::fs::create_dir(&into2).unwrap();
        let e = restore(&w, m, &into2).unwrap_err().to_string();
        assert!(e.contains("a does not match its checksum"), "{e}");
        assert_eq!(std::fs::read_dir(&into2).unwrap().count(), 0);
        assert!(matches!(find(&w), Found::Nothing));
    }
}
