//! Sources for `dbdelta build`: a Debian source package (downloaded with `apt-get source
//! --download-only` into the cache, or from a newer Debian suite's index when apt here does
//! not list it (`debian_source`); its upstream `orig` tarball is built, without Debian's
//! patches), a source directory or a tarball the user names. A tree of another product than
//! the recipe's is refused.
//!
//! Owns finding a source, its version and its identity (what the cache key covers: the Debian
//! package version and the orig tarball's checksum, a tarball's SHA-256, or a directory's file
//! list with sizes and modification times), and unpacking it into a private build tree.
//! Must not: compile anything (`build_recipe`) or decide flags (`build`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::Digest;

use crate::engine::common::recipe::Recipe;

/// A located source.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// As reports name it: `NAME (Debian source VERSION)`, a path.
    pub label: String,
    pub version: String,
    /// What the cache key covers.
    pub identity: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Tarball(PathBuf),
    Dir(PathBuf),
    /// Only for tests of the key.
    #[allow(dead_code)]
    None,
}

impl Source {
    #[cfg(test)]
    pub fn fixed(label: &str, version: &str, identity: &str) -> Source {
        Source {
            label: label.into(),
            version: version.into(),
            identity: identity.into(),
            kind: Kind::None,
        }
    }
}

/// Locate `text` (a path, or a Debian source package `name[=version]`), downloading a Debian
/// package's source when the cache does not have it.
pub fn resolve(text: &str, recipe: &dyn Recipe, say: &dyn Fn(&str)) -> Result<Source> {
    locate(text, recipe, Some(say))
}

/// Like [`resolve`], without downloading (for `--dry-run`).
pub fn peek(text: &str, recipe: &dyn Recipe) -> Result<Source> {
    locate(text, recipe, None)
}

fn locate(text: &str, recipe: &dyn Recipe, say: Option<&dyn Fn(&str)>) -> Result<Source> {
    let path = Path::new(text);
    if path.is_dir() {
        let dir = path.canonicalize()?;
        if let Some(why) = recipe.foreign_tree(&dir) {
            return Err(crate::error::InputError::new(format!("source {text} is {why}")).into());
        }
        return Ok(Source {
            label: dir.display().to_string(),
            version: recipe
                .tree_version(&dir)
                .unwrap_or_else(|| "unknown".into()),
            identity: format!("dir:{}:{}", dir.display(), fingerprint(&dir)?),
            kind: Kind::Dir(dir),
        });
    }
    if path.is_file() {
        let file = path.canonicalize()?;
        return Ok(Source {
            label: file.display().to_string(),
            version: name_version(&file).unwrap_or_else(|| "unknown".into()),
            identity: format!("tarball:{}", super::unpack::sha256_file(&file)?),
            kind: Kind::Tarball(file),
        });
    }
    if text.contains('/') {
        bail!(
            "source {text}: no such file or directory; name a source directory, a tarball or a Debian source package (a name `apt-get source` takes)"
        );
    }
    debian(text, say)
}

/// A Debian source package, from the cache or downloaded.
fn debian(text: &str, say: Option<&dyn Fn(&str)>) -> Result<Source> {
    let (name, wanted) = match text.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (text, None),
    };
    let dir = super::cache_dir().join("sources").join(name);
    let mut wanted = wanted.map(str::to_string);
    if find_dsc(&dir, wanted.as_deref()).is_none() {
        let Some(say) = say else {
            bail!(
                "the source of {text} is not downloaded yet (the build fetches it with apt-get source)"
            );
        };
        if let Some(fetched) = download(name, wanted.as_deref(), &dir, say)? {
            wanted = Some(fetched);
        }
    }
    let dsc = find_dsc(&dir, wanted.as_deref())
        .with_context(|| format!("apt-get source {text} left no .dsc in {}", dir.display()))?;
    let body = std::fs::read_to_string(&dsc)?;
    let version = dsc_field(&body, "Version")
        .with_context(|| format!("{}: no Version field", dsc.display()))?;
    let (sum, orig) = body
        .lines()
        .skip_while(|l| !l.starts_with("Files:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2].contains(".orig.tar.")).then(|| (f[0].to_string(), f[2]))
        })
        .next()
        .with_context(|| format!("{}: no .orig tarball listed", dsc.display()))?;
    Ok(Source {
        label: format!("{name} (Debian source {version})"),
        version: upstream_version(&version).to_string(),
        identity: format!("debian:{name}={version}:{sum}"),
        kind: Kind::Tarball(dir.join(orig)),
    })
}

/// Download a Debian source package into `dir`: with apt, the newest version the archive
/// still serves (a security update's files can be gone from the mirror while its index lists
/// them); a package apt here does not list, from a Debian suite's index (`debian_source`),
/// whose Debian version is returned.
fn download(
    name: &str,
    wanted: Option<&str>,
    dir: &Path,
    say: &dyn Fn(&str),
) -> Result<Option<String>> {
    let listed = source_versions(name)?;
    if listed.is_empty() {
        // A newer suite's source (e.g. one only Debian's unstable suite carries).
        return match super::debian_source::download(name, wanted, dir, say)? {
            Some(version) => Ok(Some(version)),
            None => bail!(
                "no Debian source package {name} in this machine's apt sources nor in the Debian suites dbdelta fetches builds from; check the name, or enable source packages (add deb-src to the Types: line of /etc/apt/sources.list.d/debian.sources, then apt-get update)"
            ),
        };
    }
    say(&format!("source {name}: apt-get source --download-only"));
    std::fs::create_dir_all(dir)?;
    let versions = match wanted {
        Some(v) => vec![v.to_string()],
        None => listed,
    };
    let mut last = String::new();
    for v in &versions {
        let out = Command::new("apt-get")
            .args(["source", "--download-only", "-qq"])
            .arg(format!("{name}={v}"))
            .current_dir(dir)
            .output()
            .context("cannot run apt-get (Debian's package tool); download the source yourself and give its directory or tarball as the source")?;
        if out.status.success() {
            return Ok(None);
        }
        last = String::from_utf8_lossy(&out.stderr).trim().to_string();
    }
    bail!("apt-get source {name} failed: {last}")
}

/// The versions of a source package apt's lists hold, newest first (none: apt here does not
/// list it).
fn source_versions(name: &str) -> Result<Vec<String>> {
    let out = Command::new("apt-cache")
        .args(["showsrc", name])
        .output()
        .context("cannot run apt-cache")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut versions: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Version: "))
        .map(str::to_string)
        .collect();
    versions.sort_by(|a, b| debian_order(b, a));
    versions.dedup();
    Ok(versions)
}

/// Order Debian versions by their numeric parts (enough for one package's point releases).
pub(super) fn debian_order(a: &str, b: &str) -> std::cmp::Ordering {
    let nums = |s: &str| -> Vec<u64> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    nums(a).cmp(&nums(b))
}

fn find_dsc(dir: &Path, wanted: Option<&str>) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "dsc"))
        .filter(|p| {
            wanted.is_none_or(|v| {
                std::fs::read_to_string(p)
                    .ok()
                    .and_then(|b| dsc_field(&b, "Version"))
                    .is_some_and(|have| have == v)
            })
        })
        .collect();
    found.sort_by(|a, b| debian_order(&a.display().to_string(), &b.display().to_string()));
    found.pop()
}

/// The upstream part of a Debian version: `1:10.11.18-0+deb12u1` → `10.11.18` (no epoch, whose
/// colon would end up in cache paths, and no Debian revision).
fn upstream_version(debian: &str) -> &str {
    let no_epoch = debian.split_once(':').map_or(debian, |(_, v)| v);
    no_epoch.rsplit_once('-').map_or(no_epoch, |(v, _)| v)
}

fn dsc_field(body: &str, field: &str) -> Option<String> {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}: ")))
        .map(|v| v.trim().to_string())
}

/// Unpack `source` into `dest` (emptied first), its top directory stripped.
pub fn unpack(source: &Source, dest: &Path, log: &Path) -> Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)
            .with_context(|| format!("cannot empty the build tree {}", dest.display()))?;
    }
    std::fs::create_dir_all(dest)
        .with_context(|| format!("cannot create the build tree {}", dest.display()))?;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut cmd = match &source.kind {
        Kind::Tarball(f) => {
            let mut c = Command::new("tar");
            c.arg("-xf").arg(f).arg("-C").arg(dest);
            c.arg("--strip-components=1");
            c
        }
        Kind::Dir(d) => {
            let mut c = Command::new("cp");
            c.arg("-a").arg(d.join(".")).arg(dest);
            c
        }
        Kind::None => bail!("no source to unpack"),
    };
    let out = cmd.output().context("cannot run tar/cp")?;
    std::fs::write(log, &out.stderr)
        .with_context(|| format!("cannot write the build log {}", log.display()))?;
    if !out.status.success() {
        bail!(
            "unpacking {} failed: {}",
            source.label,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A directory's identity: every file's path, size and modification time.
fn fingerprint(dir: &Path) -> Result<String> {
    let mut h = sha2::Sha256::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            let m = e.metadata()?;
            if m.is_dir() {
                stack.push(p);
            } else {
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                entries.push(format!("{}\0{}\0{mtime}", p.display(), m.len()));
            }
        }
    }
    entries.sort();
    for e in entries {
        h.update(e.as_bytes());
    }
    Ok(super::unpack::hex(&h.finalize())[..16].to_string())
}

/// `server-15.18.tar.bz2` → `15.18`; `lib3-sys-0.35.0.crate` → `0.35.0`: the last
/// `-`/`_`-separated part that starts with a digit.
fn name_version(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    let part = name
        .split(['-', '_'])
        .rfind(|p| p.starts_with(|c: char| c.is_ascii_digit()))?;
    let v: String = part
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some(v.trim_end_matches('.').to_string()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_versions_drop_the_epoch_and_the_debian_revision() {
        assert_eq!(upstream_version("1:10.11.18-0+deb12u1"), "10.11.18");
        assert_eq!(upstream_version("15.18-0+deb12u1"), "15.18");
        assert_eq!(upstream_version("3.40.1-2+deb12u1"), "3.40.1");
        assert_eq!(upstream_version("3.40.1"), "3.40.1");
    }

    #[test]
    fn versions_from_names_and_debian_order() {
        assert_eq!(
            name_version(Path::new("/x/postgresql-15.18.tar.bz2")).as_deref(),
            Some("15.18")
        );
        assert_eq!(
            name_version(Path::new("libsqlite3-sys-0.35.0.crate")).as_deref(),
            Some("0.35.0")
        );
        let mut v = ["15.9-0+deb12u1", "15.18-0+deb12u1", "15.10-0+deb12u1"];
        v.sort_by(|a, b| debian_order(b, a));
        assert_eq!(v[0], "15.18-0+deb12u1");
    }

    #[test]
    fn dsc_fields() {
        let body =
            "Format: 3.0 (quilt)\nVersion: 15.18-0+deb12u1\nFiles:\n abc 1 p_15.18.orig.tar.bz2\n";
        assert_eq!(
            dsc_field(body, "Version").as_deref(),
            Some("15.18-0+deb12u1")
        );
    }
}
