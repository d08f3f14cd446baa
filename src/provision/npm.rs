//! The npm registry: which one (`DBDELTA_NPM_REGISTRY`, else what `npm config get registry`
//! says), a package's versions and each version's tarball with its SHA-512 integrity, read from
//! the package metadata. Must not: download or unpack tarballs (the cache does).

use std::process::Command;

use anyhow::{Context, Result, bail};
use base64::Engine as _;

use super::Artifact;
use super::checksum::Checksum;

/// The registry's base URL, ending in `/`.
fn registry() -> Result<String> {
    super::base_url(
        "DBDELTA_NPM_REGISTRY",
        || {
            let out = Command::new("npm").args(["config", "get", "registry"]).output().context(
                "finding the npm registry: set DBDELTA_NPM_REGISTRY or install npm (its `registry` setting is used)",
            )?;
            Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ))
        },
        "npm registry",
    )
}

/// The package's (abbreviated) metadata document.
fn metadata(package: &str) -> Result<serde_json::Value> {
    let url = format!("{}{}", registry()?, package.replace('/', "%2f"));
    let body = super::get_bytes(&url, "application/vnd.npm.install-v1+json", 64 << 20)
        .with_context(|| format!("reading the metadata of {package}"))?;
    serde_json::from_slice(&body).context("the registry's metadata is not JSON")
}

fn artifact(dist: &serde_json::Value) -> Result<Artifact> {
    let url = dist["tarball"]
        .as_str()
        .context("metadata without dist.tarball")?
        .to_string();
    let integrity = dist["integrity"]
        .as_str()
        .context("metadata without dist.integrity")?;
    let digest = integrity
        .strip_prefix("sha512-")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .context("the registry's integrity is not a sha512 hash")?;
    Ok(Artifact {
        url,
        checksum: Checksum::Sha512(digest),
        unpacked: dist["unpackedSize"].as_u64(),
    })
}

/// Every version of `package`, each with its tarball and integrity.
pub fn versions(package: &str) -> Result<Vec<(String, Option<Artifact>)>> {
    let meta = metadata(package)?;
    let versions = meta["versions"]
        .as_object()
        .context("metadata without versions")?;
    versions
        .iter()
        .map(|(v, doc)| Ok((v.clone(), Some(artifact(&doc["dist"])?))))
        .collect()
}

/// The tarball and integrity of one version.
pub fn locate(package: &str, version: &str) -> Result<Artifact> {
    let meta = metadata(package)?;
    let doc = &meta["versions"][version];
    if doc.is_null() {
        bail!("the npm registry lists no version {version} of {package}");
    }
    artifact(&doc["dist"])
}
