//! The build cache: one entry per product and version, verified every time it is used.
//!
//! An entry (`<cache>/builds/<product>/<version>/`) keeps the downloaded archive as it came, the
//! unpacked `tree/`, and `dbdelta-build.json`: where the archive came from, the registry's
//! checksum of it, the layout, and a manifest of the tree (SHA-256 of every file, target of
//! every link). The record is written last, so an entry without one is unfinished. On every use
//! the archive is hashed against the registry's checksum (a mismatch: the entry is dropped and
//! the build fetched again) and the tree against the manifest (a difference: the tree is
//! unpacked again from the verified archive); a build is run only after both pass. Fetches of
//! one version are serialised with a lock file, so parallel runs neither download twice nor
//! replace a tree under each other.
//! Must not: choose versions (the registries' modules do) or start servers.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::checksum::{Checksum, archive_matches, download};
use super::unpack::{self, Layout, Manifest};
use super::{Fetched, Package, Product, Release, debian_tree};

/// The record of a finished entry.
const RECORD: &str = "dbdelta-build.json";
/// The unpacked build inside an entry.
const TREE: &str = "tree";

/// Where fetched builds are kept: `DBDELTA_CACHE`, else `/var/cache/dbdelta` when running as
/// root (root's home is private, and servers run as an unprivileged user that must be able to
/// execute the binaries), else `$XDG_CACHE_HOME/dbdelta` or `~/.cache/dbdelta`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DBDELTA_CACHE") {
        return PathBuf::from(dir);
    }
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/cache/dbdelta");
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("dbdelta");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("dbdelta")
}

fn product_dir(product: Product) -> PathBuf {
    cache_dir().join("builds").join(product.id)
}

/// For a `bin` inside a cached build's tree: the entry (`builds/<product>/<version>`, relative
/// to the cache), its tree, and `bin` relative to the tree (what a remote target's host gets a
/// copy of).
pub fn tree_of(bin: &Path) -> Option<(String, PathBuf, PathBuf)> {
    let rel = bin.strip_prefix(cache_dir()).ok()?;
    let parts: Vec<_> = rel.components().collect();
    if parts.len() < 4 || parts[0].as_os_str() != "builds" || parts[3].as_os_str() != TREE {
        return None;
    }
    let entry = PathBuf::from_iter(&parts[..3]);
    let tree = cache_dir().join(&entry).join(TREE);
    let inside = PathBuf::from_iter(&parts[4..]);
    Some((entry.to_string_lossy().into_owned(), tree, inside))
}

/// `dbdelta-build.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    product: String,
    version: String,
    /// `npm NAME@VERSION` / `Maven G:A:V`.
    source: String,
    url: String,
    /// The archive's file name inside the entry.
    archive: String,
    /// The registry's checksum of the archive (`sha1:<hex>`, `sha512:<hex>`).
    checksum: String,
    layout: Layout,
    manifest: Manifest,
    /// A Debian build's `.deb`s (in the directory `archive`), each with the index's checksum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parts: Vec<(String, String)>,
}

impl Record {
    /// The `.deb`s with their checksums (`None` when one is unreadable).
    fn debian_parts(&self) -> Option<Vec<debian_tree::Part>> {
        self.parts
            .iter()
            .map(|(f, c)| Some((f.clone(), Checksum::parse(c)?)))
            .collect()
    }

    /// Is the downloaded archive (or every `.deb`) still what the registry published?
    fn archive_good(&self, entry: &Path) -> Result<bool> {
        let archive = entry.join(&self.archive);
        if let Layout::Debian { .. } = self.layout {
            return match self.debian_parts() {
                Some(parts) => debian_tree::parts_match(&archive, &parts),
                None => Ok(false),
            };
        }
        Ok(match Checksum::parse(&self.checksum) {
            Some(c) => archive.is_file() && archive_matches(&archive, &c)?,
            None => false,
        })
    }

    /// Unpack the verified archive(s) into the empty `tree`.
    fn unpack(&self, entry: &Path, tree: &Path) -> Result<()> {
        let archive = entry.join(&self.archive);
        match (&self.layout, self.debian_parts()) {
            (Layout::Debian { bin }, Some(parts)) => {
                debian_tree::unpack(&archive, &parts, tree, bin)
            }
            _ => unpack::unpack(&self.layout, &archive, tree),
        }
    }
}

/// A cached build, for `dbdelta list versions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    pub version: String,
    pub bin: PathBuf,
    pub source: String,
}

fn read_record(entry: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(entry.join(RECORD)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The builds of `product` in the cache (not verified here), oldest first.
pub fn cached(product: Product) -> Vec<Cached> {
    let Ok(entries) = std::fs::read_dir(product_dir(product)) else {
        return Vec::new();
    };
    let mut out: Vec<Cached> = entries
        .flatten()
        .filter_map(|e| {
            let r = read_record(&e.path())?;
            Some(Cached {
                bin: e.path().join(TREE).join(r.layout.bin()),
                version: r.version,
                source: r.source,
            })
        })
        .collect();
    out.sort_by_key(|c| super::version::parse_version(&c.version));
    out
}

/// An exclusive lock on one product version, released when dropped (closing the file).
struct Lock(#[allow(dead_code)] File);

impl Lock {
    fn take(product: Product, version: &str) -> Result<Lock> {
        let dir = product_dir(product);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the cache {}", dir.display()))?;
        let path = dir.join(format!(".{version}.lock"));
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // flock(LOCK_EX) on Linux: it blocks until the lock is ours.
        f.lock()
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(Lock(f))
    }
}

/// What checking an entry found.
enum Verdict {
    /// Verified (perhaps after unpacking again): the binaries' directory.
    Good(PathBuf),
    /// The archive is gone or no longer what the registry published: fetch it again.
    Refetch,
}

/// Check an entry: archive against the registry's checksum, tree against the manifest (a
/// difference is repaired by unpacking the verified archive again).
fn verify(product: Product, entry: &Path, say: &dyn Fn(&str)) -> Result<Verdict> {
    let Some(record) = read_record(entry) else {
        return Ok(Verdict::Refetch);
    };
    let title = format!(
        "{} {}",
        product.title,
        super::label(product, &record.version)
    );
    let archive = entry.join(&record.archive);
    if !record.archive_good(entry)? {
        say(&format!(
            "cached {title}: its archive {} no longer matches the registry's checksum; fetching it again",
            archive.display()
        ));
        // Without its record the entry counts as unfinished: nothing runs from it.
        std::fs::remove_file(entry.join(RECORD))?;
        return Ok(Verdict::Refetch);
    }
    let tree = entry.join(TREE);
    if let Some(path) = unpack::first_difference(&tree, &record.manifest)? {
        say(&format!(
            "cached {title}: {path} differs from the verified archive; unpacking it again"
        ));
        let staging = entry.join(format!(".{TREE}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir(&staging)?;
        let result = record
            .unpack(entry, &staging)
            .and_then(|()| unpack::manifest(&staging));
        let manifest = match result {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        std::fs::remove_dir_all(&tree)?;
        std::fs::rename(&staging, &tree)?;
        write_record(
            entry,
            &Record {
                manifest,
                ..record.clone()
            },
        )?;
    }
    Ok(Verdict::Good(tree.join(record.layout.bin())))
}

fn write_record(entry: &Path, record: &Record) -> Result<()> {
    let tmp = entry.join(format!("{RECORD}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(record)?)?;
    std::fs::rename(&tmp, entry.join(RECORD))?;
    Ok(())
}

/// The verified cached build of an exact version, or `None` when it is not cached (or must be
/// fetched again).
pub fn reuse(product: Product, version: &str, say: &dyn Fn(&str)) -> Result<Option<PathBuf>> {
    let entry = product_dir(product).join(version);
    if !entry.join(RECORD).is_file() {
        return Ok(None);
    }
    let _lock = Lock::take(product, version)?;
    match verify(product, &entry, say)? {
        Verdict::Good(bin) => Ok(Some(bin)),
        Verdict::Refetch => Ok(None),
    }
}

/// Make sure `release` is cached and verified: reuse the entry, or download, verify, unpack.
pub fn ensure(release: &Release, say: &dyn Fn(&str)) -> Result<Fetched> {
    let product = release.product;
    let _lock = Lock::take(product, &release.version)?;
    let entry = product_dir(product).join(&release.version);
    let fetched = |bin, downloaded| Fetched {
        product,
        version: release.version.clone(),
        bin,
        downloaded,
    };
    if entry.join(RECORD).is_file()
        && let Verdict::Good(bin) = verify(product, &entry, say)?
    {
        return Ok(fetched(bin, 0));
    }
    let source = release.source();
    say(&format!(
        "fetching {} {} from {source} ...",
        product.title,
        super::label(product, &release.version)
    ));
    let started = Instant::now();
    let staging = product_dir(product).join(format!(".{}.{}", release.version, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)?;
    let result = match release.package {
        Package::Debian { .. } => download_debian(release, &staging, &source, say),
        _ => download_and_unpack(release, &staging, &source),
    };
    let (bytes, algorithm) = match result {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    let _ = std::fs::remove_dir_all(&entry);
    std::fs::rename(&staging, &entry)?;
    say(&format!(
        "{} {}: {:.1} MB in {:.1} s, {algorithm} verified, cached in {}",
        product.title,
        super::label(product, &release.version),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        entry.display()
    ));
    Ok(fetched(entry.join(TREE).join(release.layout.bin()), bytes))
}

/// A Debian build into `staging`: its `.deb`s (each checked against the suite's signed index),
/// their tree, and the record. Returns the bytes downloaded and what verified them.
fn download_debian(
    release: &Release,
    staging: &Path,
    source: &str,
    say: &dyn Fn(&str),
) -> Result<(u64, &'static str)> {
    const DEBS: &str = "debs";
    let (parts, bytes) = debian_tree::download(release, staging, DEBS, TREE, say)?;
    let tree = staging.join(TREE);
    if !tree.join(release.layout.bin()).is_dir() {
        bail!("{source} has no {} directory", release.layout.bin());
    }
    let record = Record {
        product: release.product.id.into(),
        version: release.version.clone(),
        source: source.into(),
        url: super::debian::mirror()?,
        archive: DEBS.into(),
        checksum: String::new(),
        layout: release.layout.clone(),
        manifest: unpack::manifest(&tree)?,
        parts: parts
            .iter()
            .map(|(f, c)| (f.clone(), c.to_text()))
            .collect(),
    };
    write_record(staging, &record)?;
    Ok((bytes, "gpgv + sha256"))
}

/// Into `staging`: the archive (checked against the registry's checksum before anything is
/// unpacked), its tree, and the record. Returns the bytes downloaded.
fn download_and_unpack(
    release: &Release,
    staging: &Path,
    source: &str,
) -> Result<(u64, &'static str)> {
    let artifact = match &release.artifact {
        Some(a) => a.clone(),
        None => super::locate(&release.package, &release.package_version)?,
    };
    let name = artifact
        .url
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .unwrap_or("archive")
        .to_string();
    let archive = staging.join(&name);
    let bytes = download(&artifact.url, &archive, &artifact.checksum)?;
    let tree = staging.join(TREE);
    std::fs::create_dir(&tree)?;
    unpack::unpack(&release.layout, &archive, &tree)?;
    let bin = tree.join(release.layout.bin());
    if !bin.is_dir() {
        bail!("{source} has no {} directory", release.layout.bin());
    }
    let record = Record {
        product: release.product.id.into(),
        version: release.version.clone(),
        source: source.into(),
        url: artifact.url.clone(),
        archive: name,
        checksum: artifact.checksum.to_text(),
        layout: release.layout.clone(),
        manifest: unpack::manifest(&tree)?,
        parts: Vec::new(),
    };
    write_record(staging, &record)?;
    Ok((bytes, artifact.checksum.algorithm()))
}
