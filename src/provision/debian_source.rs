//! Debian source packages that apt on this machine does not list (a newer suite's, e.g.
//! `mysql-9.7`, which only Debian's unstable suite carries): found in the `Sources.gz` index
//! of the suites the families' Debian builds name, and downloaded (`.dsc` and the upstream
//! `orig` tarball) with the same chain of trust as a build (`InRelease` checked by `gpgv`, the
//! index by its SHA-256 there, each file by the SHA-256 the index lists).
//!
//! Owns reading a `Sources` stanza and fetching its files into a directory. Must not: unpack
//! or build anything (`build_source`, `build`), or touch apt's own state.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use super::checksum::{self, Checksum};
use super::debian::{self, may_match, upstream};

/// The index of source packages read from each suite.
const SOURCES: &str = "main/source/Sources.gz";

/// One source package of a `Sources` index: its version, its pool directory and the files the
/// build needs (the `.dsc` and the `orig` tarballs) with their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStanza {
    pub version: String,
    pub directory: String,
    pub files: Vec<(String, String)>,
}

/// The stanzas of `name` in a `Sources` text whose version matches `wanted` (a Debian version,
/// or an upstream `9.7`/`9.7.2`), newest first.
pub fn find(text: &str, name: &str, wanted: Option<&str>) -> Vec<SourceStanza> {
    let mut found: Vec<SourceStanza> = text
        .split("\n\n")
        .filter(|para| para.lines().any(|l| l == format!("Package: {name}")))
        .filter_map(parse)
        .filter(|s| wanted.is_none_or(|w| s.version == w || may_match(w, &upstream(&s.version))))
        .collect();
    found.sort_by(|a, b| super::build_source::debian_order(&b.version, &a.version));
    found
}

fn parse(para: &str) -> Option<SourceStanza> {
    let field = |k: &str| {
        para.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix(": "))
            .map(str::to_string)
    };
    let files = (para.lines())
        .skip_while(|l| *l != "Checksums-Sha256:")
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [sum, _size, file] => Some((file.to_string(), sum.to_string())),
            _ => None,
        })
        .filter(|(f, _)| f.ends_with(".dsc") || (f.contains(".orig.tar.") && !f.ends_with(".asc")))
        .collect::<Vec<_>>();
    Some(SourceStanza {
        version: field("Version")?,
        directory: field("Directory")?,
        files: Some(files).filter(|f| f.iter().any(|(n, _)| n.ends_with(".dsc")))?,
    })
}

/// Download `name` (`wanted`: a version) from the first suite of the families' Debian builds
/// that has it and whose mirror serves its files, into `dir`. `Ok(None)`: no suite has it;
/// `Ok(Some(version))`: the Debian version downloaded.
pub fn download(
    name: &str,
    wanted: Option<&str>,
    dir: &Path,
    say: &dyn Fn(&str),
) -> Result<Option<String>> {
    let mut seen = std::collections::BTreeSet::new();
    let suites: Vec<&str> = (debian::all_builds().map(|b| b.suite))
        .filter(|s| seen.insert(*s))
        .collect();
    let base = debian::mirror()?;
    // The newest the mirror serves: an index can list files a mirror no longer has, or not
    // yet. The error kept is the newest version's.
    let mut failed = None;
    for suite in suites {
        let path = debian::verified_index(suite, SOURCES, "Sources.gz")?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path)?)
            .read_to_string(&mut text)
            .with_context(|| format!("reading {}", path.display()))?;
        for stanza in find(&text, name, wanted) {
            say(&format!(
                "source {name}: Debian {suite}'s {} (not in this machine's apt sources)",
                stanza.version
            ));
            match fetch(&stanza, &base, suite, dir) {
                Ok(()) => return Ok(Some(stanza.version)),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
    }
    failed.map_or(Ok(None), Err)
}

/// Download a stanza's files into `dir`, each checked against its SHA-256 (a file already
/// there with that checksum is kept), the `.dsc` last.
fn fetch(stanza: &SourceStanza, base: &str, suite: &str, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // The `.dsc` last: a source is found by its `.dsc`, so one is there only with its tarball.
    let mut files: Vec<&(String, String)> = stanza.files.iter().collect();
    files.sort_by_key(|(f, _)| f.ends_with(".dsc"));
    for (file, sum) in files {
        let expected = checksum::decode_hex(sum)
            .filter(|d| d.len() == 32)
            .map(Checksum::Sha256)
            .with_context(|| format!("Debian {suite}'s index: a bad SHA-256 for {file}"))?;
        let dest = dir.join(file);
        if dest.is_file() && checksum::archive_matches(&dest, &expected)? {
            continue;
        }
        let tmp = dir.join(format!(".{file}.{}", std::process::id()));
        let url = format!("{base}{}/{file}", stanza.directory);
        checksum::download(&url, &tmp, &expected)?;
        std::fs::rename(&tmp, &dest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "Package: mysql-9.6\nVersion: 9.6.0-1\nDirectory: pool/main/m/mysql-9.6\n\
Checksums-Sha256:\n aa 10 mysql-9.6_9.6.0-1.dsc\n bb 20 mysql-9.6_9.6.0.orig.tar.gz\n\n\
Package: mysql-9.7\nBinary: mysql-server\nVersion: 9.7.2-4\nFiles:\n 11 3518 mysql-9.7_9.7.2-4.dsc\n\
Checksums-Sha256:\n 16c4 3518 mysql-9.7_9.7.2-4.dsc\n e5a6 429211578 mysql-9.7_9.7.2.orig.tar.gz\n\
 afbe 833 mysql-9.7_9.7.2.orig.tar.gz.asc\n f965 142604 mysql-9.7_9.7.2-4.debian.tar.xz\n\
Directory: pool/main/m/mysql-9.7\n\n\
Package: mysql-9.7\nVersion: 9.7.1-1\nDirectory: pool/main/m/mysql-9.7\n\
Checksums-Sha256:\n cc 1 mysql-9.7_9.7.1-1.dsc\n dd 2 mysql-9.7_9.7.1.orig.tar.gz\n";

    #[test]
    fn the_newest_matching_stanza_with_the_dsc_and_orig_tarball_only() {
        let all = find(TEXT, "mysql-9.7", None);
        let versions: Vec<&str> = all.iter().map(|s| s.version.as_str()).collect();
        assert_eq!(versions, ["9.7.2-4", "9.7.1-1"], "newest first");
        let s = &all[0];
        assert_eq!(s.version, "9.7.2-4");
        assert_eq!(s.directory, "pool/main/m/mysql-9.7");
        assert_eq!(
            s.files,
            [
                ("mysql-9.7_9.7.2-4.dsc".to_string(), "16c4".to_string()),
                (
                    "mysql-9.7_9.7.2.orig.tar.gz".to_string(),
                    "e5a6".to_string()
                )
            ]
        );
        assert_eq!(find(TEXT, "mysql-9.7", Some("9.7.1"))[0].version, "9.7.1-1");
        assert_eq!(
            find(TEXT, "mysql-9.7", Some("9.7.2-4"))[0].version,
            "9.7.2-4"
        );
        assert!(find(TEXT, "mysql-9.7", Some("9.8")).is_empty());
        assert!(find(TEXT, "mysql-9", None).is_empty(), "names match whole");
    }
}
