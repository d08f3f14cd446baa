//! Saved loads (`reuse_load`): a checksummed copy of a cell's data directory right after its
//! suite's load and index build, kept per target × suite × scale in a snapshot directory, and
//! copied back instead of loading by a later cell of the same key (this run's next repeat, or
//! a later run).
//!
//! Owns the key (engine family, the build file's path and SHA-256, the target's settings,
//! arguments, environment and table options, the suite's `load_key`), the manifest
//! (`manifest.json`: the key, when it was saved, how long the load took, every file's size and
//! SHA-256), copying with checksums both ways, and which entries of a snapshot directory are
//! dbdelta's (`clean --snapshots`). A snapshot whose key differs is refused naming what
//! differs; one whose files no longer match their checksums is refused and removed; a copy
//! that cannot be written (a full work directory) fails the cell and keeps the snapshot.
//!
//! Must not: use anything read from a manifest as a path (a snapshot is the directory named
//! by its key, `TARGET.SUITE.HASH`, and nothing else), remove, replace or chmod an entry that
//! is not a snapshot or an unfinished save of its own (the snapshot directory itself keeps its
//! mode when it exists; only directories made here are 0700), start or stop servers, or time
//! anything but the copies (the cell does the rest).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
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
    /// The snapshot's directory (its name by key; the manifest's `name` is never used).
    pub name: String,
    pub manifest: Box<Manifest>,
    /// The copy's seconds, measured.
    pub secs: f64,
    pub bytes: u64,
}

/// The key of `target` × `suite` at `clients` clients, or why its load cannot be saved. The
/// key (kept in the snapshot's manifest) has the target's secret env values (those of
/// `secret_env` too) as `***`: a secret shapes no load.
pub fn wanted(
    root: &Path,
    (target, secret_env): (&TargetSpec, &[String]),
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
        None => (target.engine.family().built_in(), String::new()),
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
        env: crate::engine::common::secret_env::redact_env(&target.env, secret_env),
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
    if let Some(m) = snapshot_at(&w.root, &w.name)
        && m.key == w.key
    {
        return Found::Same(Box::new(m));
    }
    let others = std::fs::read_dir(&w.root).into_iter().flatten().flatten();
    let closest = others
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.starts_with(&w.prefix))
        .filter_map(|name| Some((snapshot_at(&w.root, &name)?, name)))
        .min_by(|(a, _), (b, _)| {
            let apart = |m: &Manifest| differing(&m.key, &w.key).len();
            apart(a).cmp(&apart(b)).then(b.saved.cmp(&a.saved))
        });
    match closest {
        Some((m, name)) => Found::Differs(format!(
            "snapshot {name} (saved {}) was saved with {}",
            shown_time(&m.saved),
            differences(&m.key, &w.key)
        )),
        None => Found::Nothing,
    }
}

/// The manifest of the snapshot `root/name`: a directory (not a link to one) whose
/// `manifest.json` parses as a manifest. Nothing in the manifest names a path.
fn snapshot_at(root: &Path, name: &str) -> Option<Manifest> {
    let dir = root.join(name);
    let text = real_dir(&dir).then(|| std::fs::read_to_string(dir.join(MANIFEST)).ok())??;
    serde_json::from_str(&text).ok()
}

/// `path` is a directory, not a symbolic link to one.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
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

/// Why a snapshot was not copied back.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A file changed, went missing or was added: the snapshot was removed; load afresh.
    #[error("snapshot {name} is damaged ({why}); it was removed and the load runs afresh")]
    Damaged { name: String, why: String },
    /// The snapshot could not be read (kept; a save after the load replaces it): load afresh.
    #[error("cannot read snapshot {name} ({why}); loading afresh")]
    Unreadable { name: String, why: String },
    /// The copy could not be written (a full work directory): the cell fails, the snapshot
    /// is kept. The message is whole.
    #[error("{0}")]
    Failed(String),
}

/// Copy `w`'s snapshot (`m`, its manifest) into the empty directory `into`, checking every
/// file's checksum on the way. A changed, missing or extra file empties `into` and removes
/// the snapshot; a file of the snapshot that cannot be read empties `into`; a copy that
/// cannot be written fails naming why (a full disk as such). Only the first removes anything.
pub fn restore(w: &Wanted, m: Box<Manifest>, into: &Path) -> Result<Restored, RestoreError> {
    let started = std::time::Instant::now();
    let name = w.name.clone();
    let from = w.root.join(&w.name);
    let copied = copy_tree(&from.join(DATA), into);
    let emptied = |then: RestoreError| match empty_dir(into) {
        Ok(()) => then,
        Err(e) => RestoreError::Failed(format!(
            "restoring snapshot {} into {}: cannot empty it again: {e:#}",
            w.name,
            into.display()
        )),
    };
    let files = match copied {
        Ok(files) => files,
        Err(e) if e.writing => {
            let _ = empty_dir(into);
            return Err(RestoreError::Failed(write_failure(&e, &name, into)));
        }
        Err(e) => {
            let why = e.to_string();
            return Err(emptied(RestoreError::Unreadable { name, why }));
        }
    };
    if let Some(why) = first_mismatch(&m.files, &files) {
        let _ = std::fs::remove_dir_all(&from);
        return Err(emptied(RestoreError::Damaged { name, why }));
    }
    let bytes = m.files.values().map(|(b, _)| b).sum();
    Ok(Restored {
        name,
        manifest: m,
        secs: started.elapsed().as_secs_f64(),
        bytes,
    })
}

/// The cell's message for a copy that could not be written: a full disk names itself and the
/// fix.
fn write_failure(e: &CopyError, name: &str, into: &Path) -> String {
    let head = format!("restoring snapshot {name} into {}", into.display());
    match e.disk_full() {
        Some(full) => format!(
            "{head}: {full} writing {}; free space in the work directory's filesystem or point \
             --workdir at a larger one (the snapshot is kept)",
            e.path.display()
        ),
        None => format!("{head}: {e} (the snapshot is kept)"),
    }
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

/// Remove what a copy put in `dir` (a cell's own data directory), leaving `dir`.
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        match e.file_type()?.is_dir() {
            true => std::fs::remove_dir_all(e.path())?,
            false => std::fs::remove_file(e.path())?,
        }
    }
    Ok(())
}

/// Save `from` (a data directory whose server stopped cleanly) as `w`'s snapshot, with the
/// load's timings; written under a temporary name and renamed, so a snapshot is whole or
/// absent. An older snapshot of the same name is replaced; anything else there is kept and the
/// save fails. Returns the manifest and the copy's seconds.
pub fn save(w: &Wanted, from: &Path, load_secs: f64, index_secs: f64) -> Result<(Manifest, f64)> {
    let started = std::time::Instant::now();
    let tmp_name = format!(".{}.{}{TMP}", w.name, std::process::id());
    let tmp = w.root.join(&tmp_name);
    let result = (|| -> Result<Manifest> {
        create_private(&w.root)?;
        // A save of this process's that did not finish (the same PID, an earlier life).
        if real_dir(&tmp) {
            std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {tmp_name}"))?;
        }
        (std::fs::DirBuilder::new().mode(0o700).create(&tmp))
            .with_context(|| format!("creating {}", tmp.display()))?;
        let files = copy_tree(from, &tmp.join(DATA)).map_err(|e| match e.disk_full() {
            Some(full) => anyhow::anyhow!(
                "{full} writing {}; free space there or point --snapshots at a larger filesystem",
                e.path.display()
            ),
            None => anyhow::Error::new(e),
        })?;
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
        replace_with(&w.root, &w.name, &tmp)?;
        Ok(m)
    })();
    if result.is_err() && real_dir(&tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let m =
        result.with_context(|| format!("saving snapshot {} in {}", w.name, w.root.display()))?;
    Ok((m, started.elapsed().as_secs_f64()))
}

/// Rename the finished save `tmp` to `root/name`, replacing an older snapshot there; anything
/// else of that name is kept and the save fails.
fn replace_with(root: &Path, name: &str, tmp: &Path) -> Result<()> {
    let dest = root.join(name);
    if std::fs::symlink_metadata(&dest).is_ok() {
        if snapshot_at(root, name).is_none() {
            bail!(
                "{} exists and is not a dbdelta snapshot: kept; move it away to save this load",
                dest.display()
            );
        }
        std::fs::remove_dir_all(&dest)
            .with_context(|| format!("replacing the older {}", dest.display()))?;
    }
    std::fs::rename(tmp, &dest).with_context(|| format!("renaming to {}", dest.display()))
}

/// `dir` and any of its missing parents, each one created here only its owner can enter (the
/// data inside is a server's). A directory that exists keeps its mode and owner.
fn create_private(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// A copy that failed: on which side, the file, and the system's error.
#[derive(Debug, thiserror::Error)]
#[error("{} {}: {err}", if *.writing { "writing" } else { "reading" }, .path.display())]
struct CopyError {
    /// Writing the copy failed (else: reading the original).
    writing: bool,
    path: PathBuf,
    err: std::io::Error,
}

impl CopyError {
    /// The disk (or the user's quota) is full: the words for it, with the error's name.
    fn disk_full(&self) -> Option<&'static str> {
        match self.err.raw_os_error() {
            Some(libc::ENOSPC) => Some("no space left on device (ENOSPC)"),
            Some(libc::EDQUOT) => Some("disk quota exceeded (EDQUOT)"),
            _ => None,
        }
    }
}

fn reading(path: &Path) -> impl FnOnce(std::io::Error) -> CopyError + '_ {
    move |err| CopyError {
        writing: false,
        path: path.to_path_buf(),
        err,
    }
}

fn writing(path: &Path) -> impl FnOnce(std::io::Error) -> CopyError + '_ {
    move |err| CopyError {
        writing: true,
        path: path.to_path_buf(),
        err,
    }
}

type Sums = BTreeMap<String, (u64, String)>;

/// Copy the regular files and directories under `from` into `to` (created, with `from`'s
/// modes), hashing each file as it is copied: relative path → (bytes, SHA-256). Sockets and
/// other special files (a server's, gone after a clean stop) are not copied; a symbolic link
/// is refused.
fn copy_tree(from: &Path, to: &Path) -> Result<Sums, CopyError> {
    let mut out = BTreeMap::new();
    copy_dir(from, to, "", &mut out)?;
    Ok(out)
}

fn copy_dir(from: &Path, to: &Path, rel: &str, out: &mut Sums) -> Result<(), CopyError> {
    let meta = std::fs::metadata(from).map_err(reading(from))?;
    if !to.exists() {
        std::fs::create_dir(to).map_err(writing(to))?;
    }
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
        .map_err(writing(to))?;
    for entry in std::fs::read_dir(from).map_err(reading(from))? {
        let entry = entry.map_err(reading(from))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel = match rel {
            "" => name.clone(),
            r => format!("{r}/{name}"),
        };
        let kind = entry.file_type().map_err(reading(&path))?;
        if kind.is_symlink() {
            let link = std::io::Error::other("a symbolic link, not copied");
            return Err(reading(&path)(link));
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
fn copy_file(from: &Path, to: &Path) -> Result<(u64, String), CopyError> {
    let mut src = std::fs::File::open(from).map_err(reading(from))?;
    let mode = src.metadata().map_err(reading(from))?.mode() & 0o7777;
    let mut dst = std::fs::File::create(to).map_err(writing(to))?;
    let (mut h, mut buf, mut bytes) = (sha2::Sha256::new(), vec![0u8; 1 << 20], 0u64);
    loop {
        let n = src.read(&mut buf).map_err(reading(from))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        dst.write_all(&buf[..n]).map_err(writing(to))?;
        bytes += n as u64;
    }
    dst.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(writing(to))?;
    Ok((bytes, hex(&h.finalize())))
}

/// What an unfinished save's directory name ends with (`.TARGET.SUITE.HASH.PID.tmp`).
const TMP: &str = ".tmp";

/// An entry of a snapshot directory that `clean --snapshots` removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removable {
    /// A snapshot: `TARGET.SUITE.HASH`, a directory whose manifest parses.
    Snapshot(String),
    /// What a save left when it stopped: `.TARGET.SUITE.HASH.PID.tmp`, a directory.
    Unfinished(String),
}

impl std::fmt::Display for Removable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Removable::Snapshot(name) => write!(f, "snapshot {name}"),
            Removable::Unfinished(name) => write!(f, "unfinished snapshot {name}"),
        }
    }
}

/// What `clean --snapshots` finds in a snapshot directory.
#[derive(Debug, Default)]
pub struct Cleanable {
    /// dbdelta's own entries, by name.
    pub remove: Vec<Removable>,
    /// Every other entry (kept), by name; an unfinished save of a live process says so.
    pub kept: Vec<String>,
}

/// Sort the entries of `root` into dbdelta's (snapshots, and unfinished saves of processes
/// that are gone) and the rest. A missing `root` has none. `clean --snapshots` removes exactly
/// the first list, and `--dry-run` shows it.
pub fn cleanable(root: &Path) -> std::io::Result<Cleanable> {
    let mut out = Cleanable::default();
    let entries = match std::fs::read_dir(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        r => r?,
    };
    for e in entries {
        let name = e?.file_name().to_string_lossy().into_owned();
        if snapshot_form(&name) && snapshot_at(root, &name).is_some() {
            out.remove.push(Removable::Snapshot(name));
        } else if let Some(pid) = unfinished(root, &name) {
            match Path::new("/proc").join(pid.to_string()).exists() {
                true => out
                    .kept
                    .push(format!("{name} (process {pid} is saving it)")),
                false => out.remove.push(Removable::Unfinished(name)),
            }
        } else {
            out.kept.push(name);
        }
    }
    out.remove.sort_by_key(|r| r.to_string());
    out.kept.sort();
    Ok(out)
}

/// Remove one entry [`cleanable`] chose.
pub fn remove(root: &Path, entry: &Removable) -> Result<()> {
    let (Removable::Snapshot(name) | Removable::Unfinished(name)) = entry;
    let path = root.join(name);
    std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))
}

/// `TARGET.SUITE.HASH`: a target name (letters, digits, `.`, `_`, `-`), a suite, and the key's
/// 12 hexadecimal digits.
fn snapshot_form(name: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    let Some((head, hash)) = name.rsplit_once('.') else {
        return false;
    };
    let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    let parts = head.rsplit_once('.');
    name.chars().all(allowed)
        && hash.len() == 12
        && hash.chars().all(hex)
        && parts.is_some_and(|(target, suite)| !target.is_empty() && !suite.is_empty())
}

/// The PID of the unfinished save `root/name`: a directory (not a link) named
/// `.TARGET.SUITE.HASH.PID.tmp`.
fn unfinished(root: &Path, name: &str) -> Option<u32> {
    let inner = name.strip_prefix('.')?.strip_suffix(TMP)?;
    let (snapshot, pid) = inner.rsplit_once('.')?;
    let pid = pid.parse().ok().filter(|_| snapshot_form(snapshot))?;
    real_dir(&root.join(name)).then_some(pid)
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

    /// A saved snapshot of `key(10)` named `t.sysbench.0123456789ab` under `dir/snaps`, of a
    /// data directory holding `a` and `sub/b`.
    fn saved(dir: &Path) -> (Wanted, Manifest) {
        let data = dir.join("db");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::fs::write(data.join("a"), b"one").unwrap();
        std::fs::write(data.join("sub/b"), b"two").unwrap();
        let w = Wanted {
            root: dir.join("snaps"),
            key: key(10),
            name: "t.sysbench.0123456789ab".into(),
            prefix: "t.sysbench.".into(),
        };
        let (m, _) = save(&w, &data, 1.0, 0.5).unwrap();
        (w, m)
    }

    /// Rewrite the manifest of `w`'s snapshot with `name`; returns it as read back.
    fn manifest_named(w: &Wanted, m: &Manifest, name: &str) -> Box<Manifest> {
        let m = Manifest {
            name: name.into(),
            ..m.clone()
        };
        let path = w.root.join(&w.name).join(MANIFEST);
        std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
        Box::new(m)
    }

    fn dir_with_a_file(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("precious"), b"keep").unwrap();
        dir.join("precious")
    }

    #[test]
    fn a_manifests_name_is_data_never_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir_with_a_file(&dir.path().join("victim"));
        let elsewhere = dir_with_a_file(&dir.path().join("elsewhere"));
        for name in ["../victim", elsewhere.parent().unwrap().to_str().unwrap()] {
            let (w, m) = saved(dir.path());
            let m = manifest_named(&w, &m, name);
            // Damaged: the snapshot found by its key is removed, and only it.
            std::fs::write(w.root.join(&w.name).join("data/a"), b"changed").unwrap();
            let into = dir.path().join("into");
            std::fs::create_dir_all(&into).unwrap();
            let e = restore(&w, m, &into).unwrap_err().to_string();
            assert!(victim.is_file() && elsewhere.is_file(), "{name}: {e}");
            assert!(
                e.contains("snapshot t.sysbench.0123456789ab is damaged"),
                "{e}"
            );
            assert!(
                !w.root.join(&w.name).exists(),
                "the damaged snapshot is removed"
            );
        }
    }

    #[test]
    fn a_refusal_and_a_restore_name_the_snapshots_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (w, m) = saved(dir.path());
        manifest_named(&w, &m, "/etc");
        let other = Wanted {
            key: key(20),
            name: "t.sysbench.ba9876543210".into(),
            ..w.clone()
        };
        let Found::Differs(why) = find(&other) else {
            panic!("expected a refusal")
        };
        assert!(
            why.starts_with("snapshot t.sysbench.0123456789ab "),
            "{why}"
        );
        let Found::Same(m) = find(&w) else {
            panic!("the snapshot is found by its key")
        };
        let into = dir.path().join("into");
        std::fs::create_dir(&into).unwrap();
        restore(&w, m, &into).unwrap();
        assert_eq!(std::fs::read(into.join("sub/b")).unwrap(), b"two");
    }

    #[test]
    fn an_existing_snapshot_directory_keeps_its_mode_and_a_new_one_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("snaps");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let (w, _) = saved(dir.path());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(
            mode(&w.root),
            0o1777,
            "the existing directory keeps its mode"
        );
        // A directory dbdelta makes (and its missing parents) only its owner can enter.
        let made = Wanted {
            root: dir.path().join("new/snaps"),
            ..w.clone()
        };
        save(&made, &dir.path().join("db"), 1.0, 0.5).unwrap();
        assert_eq!(mode(&made.root), 0o700);
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        assert_eq!(mode(&made.root.join(&made.name)), 0o700);
    }

    #[test]
    fn a_save_keeps_what_is_not_a_snapshot_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let (w, _) = saved(dir.path());
        let dest = w.root.join(&w.name);
        std::fs::remove_dir_all(&dest).unwrap();
        let precious = dir_with_a_file(&dest);
        let e = save(&w, &dir.path().join("db"), 1.0, 0.5).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("is not a dbdelta snapshot: kept"), "{e}");
        assert!(precious.is_file());
        // Nothing unfinished is left beside it.
        assert_eq!(std::fs::read_dir(&w.root).unwrap().count(), 1);
    }

    #[test]
    fn an_unreadable_snapshot_is_kept_only_a_mismatch_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let (w, m) = saved(dir.path());
        let data = w.root.join(&w.name).join("data");
        std::fs::remove_file(data.join("a")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", data.join("a")).unwrap();
        let into = dir.path().join("into");
        std::fs::create_dir(&into).unwrap();
        let e = restore(&w, Box::new(m), &into).unwrap_err().to_string();
        assert!(
            e.contains("cannot read snapshot t.sysbench.0123456789ab"),
            "{e}"
        );
        assert!(e.contains("a symbolic link, not copied"), "{e}");
        assert!(w.root.join(&w.name).join(MANIFEST).is_file(), "kept");
        assert_eq!(std::fs::read_dir(&into).unwrap().count(), 0, "emptied");
    }

    #[test]
    fn clean_chooses_only_snapshots_and_unfinished_saves_of_gone_processes() {
        let dir = tempfile::tempdir().unwrap();
        let (w, _) = saved(dir.path());
        let root = &w.root;
        let mk = |name: &str| std::fs::create_dir(root.join(name)).unwrap();
        mk("t.sysbench.ba9876543210"); // the form, no manifest
        mk("t.sysbench.0123456789AB"); // not the form
        mk(".t.sysbench.0123456789ab.4194305.tmp"); // a gone process's save
        let live = format!(".t.sysbench.0123456789ab.{}.tmp", std::process::id());
        mk(&live);
        mk(".t.sysbench.0123456789ab.x.tmp");
        std::fs::write(root.join(".u.sysbench.0123456789ab.4194306.tmp"), b"").unwrap();
        std::fs::write(root.join("notes.txt"), b"").unwrap();
        let fake = root.join("f.sysbench.0123456789ab");
        std::os::unix::fs::symlink(root.join(&w.name), &fake).unwrap();
        let found = cleanable(root).unwrap();
        assert_eq!(
            found.remove,
            [
                Removable::Snapshot(w.name.clone()),
                Removable::Unfinished(".t.sysbench.0123456789ab.4194305.tmp".into())
            ]
        );
        assert_eq!(found.kept.len(), 7, "{:?}", found.kept);
        assert!(found.kept.contains(&format!(
            "{live} (process {} is saving it)",
            std::process::id()
        )));
        for r in &found.remove {
            remove(root, r).unwrap();
        }
        assert_eq!(cleanable(root).unwrap().remove, []);
        assert_eq!(std::fs::read_dir(root).unwrap().count(), 7);
        assert!(
            cleanable(&dir.path().join("none"))
                .unwrap()
                .remove
                .is_empty()
        );
    }
}
