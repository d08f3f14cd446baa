//! Debian suites as a source of builds: the newest releases of a product, which its family
//! lists ([`DebianBuild`]: suite, packages, series; a build that only fills the gaps of another
//! registry is asked for by its exact `major.minor` only).
//!
//! Owns: choosing a product's Debian builds for a version, the archive's address
//! (the Debian mirror apt on this machine is configured with: `DBDELTA_DEBIAN_MIRROR`, else the
//! first `deb` source of `/etc/apt/sources.list(.d)` whose URI ends in `/debian`), the chain of
//! trust (the suite's `InRelease` checked by `gpgv` against Debian's archive keyring, the
//! `Packages.gz` index against the SHA-256 `InRelease` lists, each `.deb` against the SHA-256
//! the index lists), and the dependency closure of a build: the server package(s) and every
//! package of section `libs` their `Depends`/`Pre-Depends` reach (the C library, its loader,
//! libstdc++, ...), so the build runs on a host whose own libraries are older.
//! The tree itself (unpacking, the launchers that start each program through the build's own
//! loader) is `debian_tree`. Must not: start servers, or touch the host's apt state (nothing is
//! installed; the index is kept in the cache, not in apt's lists).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::checksum::{self, Checksum};
use super::unpack::Layout;
use super::{Package, Product, Release};
use crate::engine::common::fetchable::DebianBuild;

/// Debian's archive keyring (the `debian-archive-keyring` package).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// The index read from each suite.
const INDEX: &str = "main/binary-amd64/Packages.gz";

/// One package of an index: what the closure and the download need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stanza {
    pub package: String,
    pub version: String,
    pub section: String,
    /// `Depends` and `Pre-Depends`: each entry the alternatives' package names.
    pub depends: Vec<Vec<String>>,
    pub filename: String,
    pub sha256: String,
}

/// Does `wanted` (`9`, `9.7`, `9.7.4`) ask for a build of `series` (`9.7`)?
pub fn may_match(wanted: &str, series: &str) -> bool {
    let w: Vec<&str> = wanted.split('.').collect();
    let s: Vec<&str> = series.split('.').collect();
    w.iter().zip(&s).all(|(a, b)| a == b) && !wanted.is_empty()
}

/// `1:11.8.9+ds-0+deb13u1` → `11.8.9`; `9.7.4-2` → `9.7.4`.
pub fn upstream(version: &str) -> String {
    let v = version.split_once(':').map_or(version, |(_, v)| v);
    v.split(['-', '+', '~']).next().unwrap_or(v).to_string()
}

/// May `wanted` select `b`? A build that only fills gaps needs a `major.minor` (`17.12`) that
/// no other registry's build matches (`covered`).
fn selects(b: &DebianBuild, wanted: &str, covered: bool) -> bool {
    may_match(wanted, b.series) && (!b.fills_gaps || (!covered && wanted.contains('.')))
}

/// Could a Debian build of `product` answer `wanted` (`postgres@17.12`: yes; `postgres@17`:
/// no, that is npm's)?
pub fn may_answer(product: Product, wanted: &str) -> bool {
    product.debian.iter().any(|b| selects(b, wanted, false))
}

/// The Debian builds of `product` that `wanted` may select (all of them for `None`), each as a
/// [`Release`] with the version the suite holds now; `covered`: another registry has a build
/// matching `wanted` (then builds that only fill gaps are not read).
pub fn releases(product: Product, wanted: Option<&str>, covered: bool) -> Result<Vec<Release>> {
    (product.debian.iter())
        .filter(|b| wanted.is_none_or(|w| selects(b, w, covered)))
        .map(|b| release_of(product, b, None))
        .collect()
}

/// For `dbdelta list versions`: every Debian build of `product`, or when its suite cannot be
/// read, its series with why.
pub fn listing(product: Product) -> Vec<(Release, Result<bool, String>)> {
    (product.debian.iter())
        .map(|b| match release_of(product, b, None) {
            Ok(r) => (r, Ok(true)),
            Err(e) => (
                release_of(product, b, Some(&format!("{}.x", b.series))).expect("no index read"),
                Err(format!("{e:#}")),
            ),
        })
        .collect()
}

/// The release of a row: the version its suite holds now, or `known` without reading it.
fn release_of(product: Product, b: &DebianBuild, known: Option<&str>) -> Result<Release> {
    let package_version = match known {
        Some(v) => v.to_string(),
        None => Index::of(b.suite)?.get(b.packages[0])?.version.clone(),
    };
    Ok(Release {
        product,
        version: upstream(&package_version),
        package: Package::Debian {
            suite: b.suite,
            package: b.packages[0],
        },
        package_version,
        artifact: None,
        layout: Layout::Debian { bin: b.bin.into() },
    })
}

/// The row of a release's suite and package.
pub fn build_of(suite: &str, package: &str) -> Result<&'static DebianBuild> {
    all_builds()
        .find(|b| b.suite == suite && b.packages[0] == package)
        .with_context(|| format!("no Debian build {package} in {suite}"))
}

/// Every Debian build of every product.
pub fn all_builds() -> impl Iterator<Item = &'static DebianBuild> {
    (super::products().into_iter()).flat_map(|p| p.debian.iter())
}

/// The archive's base URL, ending in `/`.
pub fn mirror() -> Result<String> {
    super::base_url(
        "DBDELTA_DEBIAN_MIRROR",
        || Ok(apt_mirror(Path::new("/etc/apt"))),
        "Debian mirror",
    )
}

/// The first `deb` URI ending in `/debian` in apt's sources (one-line `.list` and deb822
/// `.sources` files).
fn apt_mirror(etc: &Path) -> Option<String> {
    let mut files = vec![etc.join("sources.list")];
    if let Ok(dir) = std::fs::read_dir(etc.join("sources.list.d")) {
        let mut more: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    files.iter().find_map(|f| {
        let name = f.to_string_lossy();
        let text = std::fs::read_to_string(f).ok()?;
        let uris: Vec<String> = if name.ends_with(".sources") {
            deb822_uris(&text)
        } else if name.ends_with(".list") {
            one_line_uris(&text)
        } else {
            Vec::new()
        };
        uris.into_iter()
            .find(|u| u.trim_end_matches('/').ends_with("/debian"))
    })
}

fn one_line_uris(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| l.starts_with("deb "))
        .filter_map(|l| {
            // `deb [options] URI suite components`
            let rest = l.strip_prefix("deb ")?.trim_start();
            let rest = match rest.strip_prefix('[') {
                Some(r) => r.split_once(']')?.1.trim_start(),
                None => rest,
            };
            rest.split_whitespace().next().map(str::to_string)
        })
        .collect()
}

fn deb822_uris(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for para in text.split("\n\n") {
        let field = |name: &str| {
            para.lines()
                .filter(|l| !l.starts_with('#'))
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let is_deb = field("Types:").is_some_and(|t| t.split_whitespace().any(|t| t == "deb"));
        let enabled = field("Enabled:").is_none_or(|e| e != "no");
        if is_deb
            && enabled
            && let Some(uris) = field("URIs:")
        {
            out.extend(uris.split_whitespace().map(str::to_string));
        }
    }
    out
}

/// A suite's package index, verified.
pub struct Index {
    pub suite: String,
    pub packages: BTreeMap<String, Stanza>,
}

impl Index {
    /// Read `suite`'s index: `InRelease` from the mirror, its signature checked, then
    /// `Packages.gz` (kept in the cache while `InRelease` lists the same checksum) checked
    /// against it.
    pub fn of(suite: &str) -> Result<Index> {
        let path = verified_index(suite, INDEX, "Packages.gz")?;
        let mut text = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(std::fs::File::open(&path)?)
            .read_to_string(&mut text)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Index {
            suite: suite.into(),
            packages: parse_packages(&text)
                .into_iter()
                .map(|s| (s.package.clone(), s))
                .collect(),
        })
    }

    pub fn get(&self, name: &str) -> Result<&Stanza> {
        self.packages
            .get(name)
            .with_context(|| format!("Debian {} has no package {name}", self.suite))
    }

    /// `roots` and every package of section `libs` their dependencies reach (the first
    /// alternative the index has; none whose name starts with one of `leave_out`), in a stable
    /// order.
    pub fn closure(&self, roots: &[&str], leave_out: &[&str]) -> Result<Vec<&Stanza>> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut queue: VecDeque<&Stanza> = VecDeque::new();
        for r in roots {
            let s = self.get(r)?;
            seen.insert(&s.package);
            queue.push_back(s);
        }
        let mut out = Vec::new();
        while let Some(s) = queue.pop_front() {
            out.push(s);
            for alternatives in &s.depends {
                let Some(dep) = alternatives.iter().find_map(|a| self.packages.get(a)) else {
                    continue;
                };
                let left_out = leave_out.iter().any(|p| dep.package.starts_with(p));
                if is_library(&dep.section) && !left_out && seen.insert(&dep.package) {
                    queue.push_back(dep);
                }
            }
        }
        Ok(out)
    }
}

/// `suite`'s index file `name` (e.g. `main/source/Sources.gz`), downloaded into the cache as
/// `file` unless the cache holds it with the checksum the suite's signed `InRelease` lists
/// (read from the mirror and checked by `gpgv` every time).
pub fn verified_index(suite: &str, name: &str, file: &str) -> Result<PathBuf> {
    let base = mirror()?;
    let url = format!("{base}dists/{suite}/InRelease");
    let signed = super::get_bytes(&url, "text/plain", 16 << 20)
        .with_context(|| format!("reading Debian {suite}'s InRelease"))?;
    let dir = super::cache_dir().join("debian").join(suite);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the cache {}", dir.display()))?;
    let release = verify_signature(&signed, Path::new(KEYRING), &dir)
        .with_context(|| format!("{url}: signature"))?;
    let expected = index_checksum(&release, name)
        .with_context(|| format!("{url} lists no SHA256 of {name}"))?;
    let path = dir.join(file);
    let cached = path.is_file() && checksum::archive_matches(&path, &expected)?;
    if !cached {
        let tmp = dir.join(format!(".{file}.{}", std::process::id()));
        checksum::download(&format!("{base}dists/{suite}/{name}"), &tmp, &expected)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(path)
}

fn is_library(section: &str) -> bool {
    let s = section.rsplit('/').next().unwrap_or(section);
    s == "libs" || s == "oldlibs"
}

/// Check a clear-signed file with `gpgv` against `keyring`; the signed text on success.
/// `scratch` is a directory for the two files (removed afterwards).
pub fn verify_signature(signed: &[u8], keyring: &Path, scratch: &Path) -> Result<String> {
    if !keyring.is_file() {
        bail!(
            "Debian's archive keyring {} is missing: apt-get install debian-archive-keyring",
            keyring.display()
        );
    }
    let input = scratch.join(format!(".InRelease.{}", std::process::id()));
    let output = scratch.join(format!(".Release.{}", std::process::id()));
    std::fs::write(&input, signed)?;
    let _ = std::fs::remove_file(&output);
    let result = run_gpgv(keyring, &input, &output);
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    result
}

fn run_gpgv(keyring: &Path, input: &Path, output: &Path) -> Result<String> {
    let out = Command::new("gpgv")
        .arg("--keyring")
        .arg(keyring)
        .arg("--output")
        .arg(output)
        .arg(input)
        .output()
        .context("running gpgv: apt-get install gpgv")?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        bail!(
            "gpgv refused it against {}: {}",
            keyring.display(),
            why.lines().last().unwrap_or("").trim()
        );
    }
    std::fs::read_to_string(output).context("reading the text gpgv verified")
}

/// The SHA-256 a `Release` text lists for `name`.
pub fn index_checksum(release: &str, name: &str) -> Option<Checksum> {
    let mut in_sha256 = false;
    for line in release.lines() {
        if !line.starts_with(' ') {
            in_sha256 = line.trim_end() == "SHA256:";
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(hex), Some(_size), Some(file)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if in_sha256 && file == name {
            return sha256(hex);
        }
    }
    None
}

fn sha256(hex: &str) -> Option<Checksum> {
    checksum::decode_hex(hex)
        .filter(|d| d.len() == 32)
        .map(Checksum::Sha256)
}

/// The stanzas of a `Packages` file (fields the closure and the download need; stanzas
/// without a file name or SHA-256 are left out).
pub fn parse_packages(text: &str) -> Vec<Stanza> {
    text.split("\n\n")
        .filter_map(|para| {
            let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
            for line in para.lines() {
                if line.starts_with([' ', '\t']) {
                    continue;
                }
                if let Some((k, v)) = line.split_once(':') {
                    fields.insert(k, v.trim());
                }
            }
            let depends = ["Pre-Depends", "Depends"]
                .iter()
                .filter_map(|k| fields.get(k))
                .flat_map(|v| v.split(','))
                .map(|group| group.split('|').map(dependency_name).collect())
                .collect();
            Some(Stanza {
                package: fields.get("Package")?.to_string(),
                version: fields.get("Version")?.to_string(),
                section: fields.get("Section").copied().unwrap_or("").to_string(),
                depends,
                filename: fields.get("Filename")?.to_string(),
                sha256: fields.get("SHA256")?.to_string(),
            })
        })
        .collect()
}

/// `libc6 (>= 2.38)` → `libc6`; `perl:any` → `perl`.
fn dependency_name(alternative: &str) -> String {
    let name = alternative.trim().split([' ', '(']).next().unwrap_or("");
    name.split(':').next().unwrap_or(name).to_string()
}

/// A `.deb` to download: its URL, file name in the entry, and the index's SHA-256.
pub struct Deb {
    pub url: String,
    pub file: String,
    pub checksum: Checksum,
}

/// Every `.deb` a build needs, from a verified index.
pub fn debs(build: &DebianBuild, index: &Index) -> Result<Vec<Deb>> {
    let base = mirror()?;
    index
        .closure(build.packages, build.leave_out)?
        .into_iter()
        .map(|s| {
            let checksum = sha256(&s.sha256)
                .with_context(|| format!("{}: bad SHA256 {:?}", s.package, s.sha256))?;
            let file = s
                .filename
                .rsplit('/')
                .next()
                .filter(|f| f.ends_with(".deb") && !f.starts_with('.'))
                .with_context(|| format!("{}: odd file name {:?}", s.package, s.filename))?;
            Ok(Deb {
                url: format!("{base}{}", s.filename),
                file: file.to_string(),
                checksum,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACKAGES: &str = "Package: mysql-server-core\nSource: mysql-9.7\nVersion: 9.7.4-2\n\
Depends: libc6 (>= 2.38), libstdc++6 (>= 16), perl:any, mysql-common | mariadb-common\n\
Section: database\nFilename: pool/main/m/mysql-9.7/mysql-server-core_9.7.4-2_amd64.deb\n\
SHA256: 628d2d7d2dc827507bcae80677a9950766b002bec2c658cb96343d9f324f8660\n\
Description: server\n continued: line\n\n\
Package: libc6\nVersion: 2.43-7\nSection: libs\nDepends: libgcc-s1\nFilename: pool/main/g/glibc/libc6_2.43-7_amd64.deb\nSHA256: 00\n\n\
Package: libgcc-s1\nVersion: 16-1\nSection: libs\nPre-Depends: libc6 (>= 2.35)\nFilename: pool/main/g/gcc/libgcc-s1.deb\nSHA256: 01\n\n\
Package: libstdc++6\nVersion: 16-1\nSection: libs\nDepends: libgcc-s1, libc6\nFilename: pool/main/g/gcc/libstdc++6.deb\nSHA256: 02\n\n\
Package: perl\nVersion: 5.40\nSection: perl\nFilename: pool/main/p/perl.deb\nSHA256: 03\n\n\
Package: mysql-common\nVersion: 5.8\nSection: database\nFilename: pool/main/m/mysql-common.deb\nSHA256: 04\n";

    fn index() -> Index {
        Index {
            suite: "sid".into(),
            packages: parse_packages(PACKAGES)
                .into_iter()
                .map(|s| (s.package.clone(), s))
                .collect(),
        }
    }

    #[test]
    fn the_closure_follows_libraries_only() {
        let idx = index();
        let root = idx.get("mysql-server-core").unwrap();
        assert_eq!(root.version, "9.7.4-2");
        assert_eq!(root.depends[2], ["perl"]);
        assert_eq!(root.depends[3], ["mysql-common", "mariadb-common"]);
        let names: Vec<&str> = idx
            .closure(&["mysql-server-core"], &[])
            .unwrap()
            .iter()
            .map(|s| s.package.as_str())
            .collect();
        // perl and mysql-common are not libraries; libgcc-s1 comes through libc6, once.
        assert_eq!(
            names,
            ["mysql-server-core", "libc6", "libstdc++6", "libgcc-s1"]
        );
        let err = idx.closure(&["nope"], &[]).unwrap_err().to_string();
        assert!(err.contains("no package nope"), "{err}");
    }

    #[test]
    fn versions_and_series() {
        assert_eq!(upstream("1:11.8.9+ds-0+deb13u1"), "11.8.9");
        assert_eq!(upstream("9.7.4-2"), "9.7.4");
        assert!(may_match("9", "9.7") && may_match("9.7", "9.7") && may_match("9.7.4", "9.7"));
        assert!(!may_match("9.6", "9.7") && !may_match("8.0", "9.7") && !may_match("", "9.7"));
        assert!(!may_match("11.4", "11.8") && may_match("11", "11.8"));
    }

    /// trixie's postgresql-17 as its index has it (cut down): the server, libraries, LLVM (for
    /// the JIT provider only) and non-library Depends.
    const PG_PACKAGES: &str = "Package: postgresql-17\nVersion: 17.12-0+deb13u1\nSection: database\n\
Depends: locales | locales-all, postgresql-client-17, postgresql-common (>= 252~), tzdata, libc6 (>= 2.38), libllvm19 (>= 1:19.1.0), libpq5 (>= 17~~), libicu76\n\
Recommends: sysstat\nFilename: pool/main/p/postgresql-17/postgresql-17_17.12-0+deb13u1_amd64.deb\nSHA256: 10\n\n\
Package: libc6\nVersion: 2.41-12\nSection: libs\nFilename: pool/main/g/glibc/libc6.deb\nSHA256: 11\n\n\
Package: libllvm19\nVersion: 1:19.1.7-3\nSection: libs\nDepends: libz3-4, libc6\nFilename: pool/main/l/llvm/libllvm19.deb\nSHA256: 12\n\n\
Package: libz3-4\nVersion: 4.13\nSection: libs\nFilename: pool/main/z/z3/libz3-4.deb\nSHA256: 13\n\n\
Package: libpq5\nVersion: 17.12-0+deb13u1\nSection: libs\nDepends: libc6\nFilename: pool/main/p/libpq5.deb\nSHA256: 14\n\n\
Package: libicu76\nVersion: 76.1-4\nSection: libs\nFilename: pool/main/i/libicu76.deb\nSHA256: 15\n\n\
Package: postgresql-client-17\nVersion: 17.12-0+deb13u1\nSection: database\nFilename: pool/main/p/client.deb\nSHA256: 16\n\n\
Package: postgresql-common\nVersion: 278\nSection: database\nFilename: pool/main/p/common.deb\nSHA256: 17\n\n\
Package: tzdata\nVersion: 2025b\nSection: localization\nFilename: pool/main/t/tzdata.deb\nSHA256: 18\n";

    /// A PostgreSQL build is its server package and the libraries it links, without LLVM (and
    /// what only LLVM needs), postgresql-common, the client package or tzdata.
    #[test]
    fn the_postgres_closure_leaves_out_llvm_and_postgresql_common() {
        let idx = Index {
            suite: "trixie".into(),
            packages: parse_packages(PG_PACKAGES)
                .into_iter()
                .map(|s| (s.package.clone(), s))
                .collect(),
        };
        let build = all_builds()
            .find(|b| b.packages == ["postgresql-17"])
            .unwrap();
        let names = |leave_out: &[&str]| -> Vec<String> {
            let c = idx.closure(build.packages, leave_out).unwrap();
            c.iter().map(|s| s.package.clone()).collect()
        };
        assert_eq!(
            names(build.leave_out),
            ["postgresql-17", "libc6", "libpq5", "libicu76"]
        );
        assert_eq!(
            names(&[]),
            [
                "postgresql-17",
                "libc6",
                "libllvm19",
                "libpq5",
                "libicu76",
                "libz3-4"
            ]
        );
        assert_eq!(build.bin, "usr/lib/postgresql/17/bin");
        assert_eq!(upstream("17.12-0+deb13u1"), "17.12");
    }

    /// `postgres@17.12` may come from Debian; `postgres@17` is npm's newest 17, and so is a
    /// `major.minor` npm has; MySQL's and MariaDB's series answer a major as before.
    #[test]
    fn postgres_builds_answer_only_a_minor_npm_lacks() {
        let p = |name| super::super::product(name).unwrap();
        assert!(may_answer(p("postgres"), "17.12") && may_answer(p("postgres"), "18.6"));
        assert!(may_answer(p("postgres"), "18.99"));
        assert!(!may_answer(p("postgres"), "17") && !may_answer(p("postgres"), "16.2"));
        assert!(may_answer(p("mysql"), "9") && may_answer(p("mariadb"), "11"));
        let pg17 = all_builds()
            .find(|b| b.packages == ["postgresql-17"])
            .unwrap();
        assert!(selects(pg17, "17.12", false) && !selects(pg17, "17.12", true));
        assert!(!selects(pg17, "17", false) && !selects(pg17, "18.6", false));
        let mysql = &p("mysql").debian[0];
        assert!(selects(mysql, "9", true) && selects(mysql, "9.7", false));
    }

    #[test]
    fn release_checksums_come_from_the_sha256_section() {
        let release = "Origin: Debian\nMD5Sum:\n aa223f141f9400733a6826838eb59163 64988655 main/binary-amd64/Packages.gz\n\
SHA256:\n 71e56f90ea26af14cd741b6a958f8e0d8eb64ee3f0271c29ae8506d53616e2f6 15001303 main/binary-amd64/Packages.gz\n";
        let c = index_checksum(release, INDEX).unwrap();
        assert_eq!(
            c,
            sha256("71e56f90ea26af14cd741b6a958f8e0d8eb64ee3f0271c29ae8506d53616e2f6").unwrap()
        );
        assert_eq!(
            index_checksum(release, "main/binary-i386/Packages.gz"),
            None
        );
        // Only the MD5 line: no checksum to trust.
        assert_eq!(index_checksum(&release[..120], INDEX), None);
    }

    #[test]
    fn apt_sources_name_the_mirror() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path();
        std::fs::create_dir(etc.join("sources.list.d")).unwrap();
        std::fs::write(
            etc.join("sources.list.d/debian.sources"),
            "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\n\
             Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n",
        )
        .unwrap();
        std::fs::write(
            etc.join("sources.list.d/other.list"),
            "deb [signed-by=/k.gpg] https://other.example/apt stable main\n",
        )
        .unwrap();
        assert_eq!(
            apt_mirror(etc).as_deref(),
            Some("http://mirror.example/debian")
        );
        std::fs::write(
            etc.join("sources.list"),
            "# deb http://commented.example/debian sid main\ndeb [arch=amd64] http://one.example/debian/ bookworm main\n",
        )
        .unwrap();
        assert_eq!(
            apt_mirror(etc).as_deref(),
            Some("http://one.example/debian/")
        );
    }

    /// Run `gpg` in a private home; panics with its stderr when it fails.
    fn gpg(home: &Path, args: &[&str]) -> Vec<u8> {
        let out = Command::new("gpg")
            .env("GNUPGHOME", home)
            .args([
                "--batch",
                "--quiet",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .output()
            .expect("this test needs gpg (apt-get install gpg)");
        assert!(
            out.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// A Release signed by a key of the keyring passes and yields the signed text; the same
    /// file with one checksum digit changed, or checked against another keyring, is refused.
    #[test]
    fn a_tampered_release_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("gnupg");
        std::fs::create_dir(&home).unwrap();
        std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        gpg(
            &home,
            &[
                "--quick-gen-key",
                "dbdelta test <t@example.invalid>",
                "ed25519",
                "sign",
                "never",
            ],
        );
        let keyring = dir.path().join("keyring.gpg");
        std::fs::write(&keyring, gpg(&home, &["--export"])).unwrap();
        let hex = "71e56f90ea26af14cd741b6a958f8e0d8eb64ee3f0271c29ae8506d53616e2f6";
        let release = dir.path().join("Release");
        std::fs::write(
            &release,
            format!("Origin: Debian\nSHA256:\n {hex} 15001303 {INDEX}\n"),
        )
        .unwrap();
        let signed = gpg(
            &home,
            &["--clearsign", "--output", "-", release.to_str().unwrap()],
        );

        let text = verify_signature(&signed, &keyring, dir.path()).unwrap();
        assert_eq!(index_checksum(&text, INDEX), sha256(hex));

        let tampered = String::from_utf8(signed.clone())
            .unwrap()
            .replace("71e5", "71e6");
        let err = verify_signature(tampered.as_bytes(), &keyring, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("gpgv refused"), "{err}");
        let other = dir.path().join("empty.gpg");
        std::fs::write(&other, b"").unwrap();
        let err = verify_signature(&signed, &other, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("gpgv refused"), "{err}");
        let err = verify_signature(&signed, &dir.path().join("missing.gpg"), dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("apt-get install debian-archive-keyring"),
            "{err}"
        );
    }
}
