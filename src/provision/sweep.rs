//! Version sweeps: a lab target's `versions` (`"16.*"`, `"16.2..16.8"`, `["16.2", "16.9"]`)
//! as a [`VersionSet`], and choosing from a list of fetchable builds one build per DBMS
//! version, the newest package of it, in numeric release order.
//!
//! Must not: read a registry (the caller hands the listing in, so this is testable offline).

use super::Product;
use super::version::{Version, matches, parse_version};
use crate::engine::common::fetchable::VersionStyle;

/// What `versions` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSet {
    /// `"16.*"` (every build whose version starts `16.`) or `"*"` (every build).
    Prefix(String),
    /// `"16.2..16.8"`: every release from the first to the last, both included.
    Range(String, String),
    /// `["16.2", "16.9"]`: the newest build matching each entry (as `version` would pick).
    List(Vec<String>),
}

/// The syntax, for error messages.
pub const SYNTAX: &str =
    "a pattern \"16.*\", an inclusive range \"16.2..16.8\" or a list [\"16.2\", \"16.9\"]";

impl VersionSet {
    /// `"16.*"`, `"*"` or `"16.2..16.8"`; `None` for anything else.
    pub fn parse(text: &str) -> Option<VersionSet> {
        let text = text.trim();
        if text == "*" {
            return Some(VersionSet::Prefix(String::new()));
        }
        if let Some(prefix) = text.strip_suffix(".*") {
            return numbers(prefix).map(|_| VersionSet::Prefix(prefix.to_string()));
        }
        let (lo, hi) = text.split_once("..")?;
        let (a, b) = (numbers(lo.trim())?, numbers(hi.trim())?);
        (a <= b).then(|| VersionSet::Range(lo.trim().to_string(), hi.trim().to_string()))
    }

    /// A list: every entry a version (`16.2`, `8.0.31`, or an exact package version).
    pub fn list(entries: Vec<String>) -> Option<VersionSet> {
        let ok = !entries.is_empty()
            && entries
                .iter()
                .all(|e| numbers(e).is_some() || parse_version(e).is_some());
        ok.then_some(VersionSet::List(entries))
    }

    /// As written in a lab.
    pub fn describe(&self) -> String {
        match self {
            VersionSet::Prefix(p) if p.is_empty() => "\"*\"".into(),
            VersionSet::Prefix(p) => format!("\"{p}.*\""),
            VersionSet::Range(a, b) => format!("\"{a}..{b}\""),
            VersionSet::List(l) => format!("[{}]", quoted(l)),
        }
    }
}

fn quoted(l: &[String]) -> String {
    l.iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `16`, `16.2`, `10.2.11` → their numbers; `None` unless 1 to 3 numbers.
fn numbers(text: &str) -> Option<Vec<u64>> {
    let n: Option<Vec<u64>> = text.split('.').map(|p| p.parse().ok()).collect();
    n.filter(|n| (1..=3).contains(&n.len()))
}

/// The DBMS version a build carries, as its users write it: PostgreSQL's npm packages are
/// `MAJOR.MINOR.0-beta.N` (PostgreSQL `MAJOR.MINOR`); MySQL's and MariaDB's are theirs.
fn release_of(product: Product, v: &Version) -> String {
    match product.versions {
        VersionStyle::MajorMinorPackage => format!("{}.{}", v.major, v.minor),
        VersionStyle::Release => format!("{}.{}.{}", v.major, v.minor, v.patch),
    }
}

/// One build chosen for a sweep: the DBMS version (`16.4`) and the package version to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub release: String,
    pub version: String,
}

/// The builds `set` selects among `available` (package versions, any order): one per DBMS
/// version, the newest package of it, oldest release first. Empty when nothing matches;
/// `Err` names a list entry that matches nothing.
pub fn choose(
    product: Product,
    set: &VersionSet,
    available: &[String],
) -> Result<Vec<Chosen>, String> {
    let mut all: Vec<Version> = available.iter().filter_map(|v| parse_version(v)).collect();
    all.sort();
    let picked: Vec<&Version> = match set {
        VersionSet::Prefix(p) if p.is_empty() => all.iter().collect(),
        VersionSet::Prefix(p) => all.iter().filter(|v| matches(p, v)).collect(),
        VersionSet::Range(lo, hi) => {
            let (lo, hi) = (
                numbers(lo).unwrap_or_default(),
                numbers(hi).unwrap_or_default(),
            );
            all.iter()
                .filter(|v| {
                    let key = [v.major, v.minor, v.patch];
                    key[..lo.len()] >= lo[..] && key[..hi.len()] <= hi[..]
                })
                .collect()
        }
        VersionSet::List(entries) => {
            let mut out = Vec::new();
            for e in entries {
                match all.iter().rev().find(|v| matches(e, v)) {
                    Some(v) => out.push(v),
                    None => return Err(e.clone()),
                }
            }
            out.sort();
            out
        }
    };
    let mut chosen: Vec<Chosen> = Vec::new();
    for v in picked {
        let release = release_of(product, v);
        // Sorted ascending: a later package of the same release replaces the earlier one.
        match chosen.last_mut() {
            Some(last) if last.release == release => last.version = v.text.clone(),
            _ => chosen.push(Chosen {
                release,
                version: v.text.clone(),
            }),
        }
    }
    Ok(chosen)
}

/// The DBMS versions in `available`, oldest first, for "what exists" in an error.
pub fn releases_in(product: Product, available: &[String]) -> Vec<String> {
    match choose(product, &VersionSet::Prefix(String::new()), available) {
        Ok(c) => c.into_iter().map(|c| c.release).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npm(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn patterns_ranges_and_lists_parse_and_bad_ones_do_not() {
        assert_eq!(
            VersionSet::parse("16.*"),
            Some(VersionSet::Prefix("16".into()))
        );
        assert_eq!(
            VersionSet::parse("16.2..16.8"),
            Some(VersionSet::Range("16.2".into(), "16.8".into()))
        );
        assert_eq!(VersionSet::parse("*"), Some(VersionSet::Prefix("".into())));
        for bad in [
            "16",
            "16.x",
            "abc.*",
            "16.8..16.2",
            "16..",
            "..16",
            "1.2.3.4.*",
        ] {
            assert_eq!(VersionSet::parse(bad), None, "{bad}");
        }
        assert!(VersionSet::list(npm(&["16.2", "8.0.31"])).is_some());
        assert!(VersionSet::list(npm(&[])).is_none());
        assert!(VersionSet::list(npm(&["16.*"])).is_none());
    }

    /// Several npm betas carry one PostgreSQL release: the newest package of each; 16.10
    /// sorts after 16.9 (numeric, not lexical).
    #[test]
    fn one_build_per_release_the_newest_package_in_numeric_order() {
        let available = npm(&[
            "16.10.0-beta.1",
            "16.9.0-beta.3",
            "16.9.0-beta.2",
            "15.4.0-beta.1",
            "16.2.0-beta.11",
            "16.2.0-beta.9",
            "17.0.0-beta.1",
        ]);
        let set = VersionSet::parse("16.*").unwrap();
        let got = choose(super::super::product("postgres").unwrap(), &set, &available).unwrap();
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|c| (c.release.as_str(), c.version.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("16.2", "16.2.0-beta.11"),
                ("16.9", "16.9.0-beta.3"),
                ("16.10", "16.10.0-beta.1"),
            ]
        );
        let range = VersionSet::parse("16.3..16.9").unwrap();
        let got = choose(
            super::super::product("postgres").unwrap(),
            &range,
            &available,
        )
        .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].release, "16.9");
        let list = VersionSet::list(npm(&["16.10", "16.2"])).unwrap();
        let got = choose(
            super::super::product("postgres").unwrap(),
            &list,
            &available,
        )
        .unwrap();
        assert_eq!(
            got.iter().map(|c| c.release.as_str()).collect::<Vec<_>>(),
            ["16.2", "16.10"]
        );
        let missing = VersionSet::list(npm(&["16.5"])).unwrap();
        assert_eq!(
            choose(
                super::super::product("postgres").unwrap(),
                &missing,
                &available
            ),
            Err("16.5".into())
        );
        assert!(
            choose(
                super::super::product("postgres").unwrap(),
                &VersionSet::parse("18.*").unwrap(),
                &available
            )
            .unwrap()
            .is_empty()
        );
    }

    /// MariaDB and MySQL releases are three numbers; a range's ends match by prefix.
    #[test]
    fn mariadb_ranges_include_both_ends_by_prefix() {
        let available = npm(&["10.1.48", "10.2.11", "10.5.3", "10.11.5", "11.4.2"]);
        let set = VersionSet::parse("10.2..10.5").unwrap();
        let got = choose(super::super::product("mariadb").unwrap(), &set, &available).unwrap();
        assert_eq!(
            got.iter().map(|c| c.release.as_str()).collect::<Vec<_>>(),
            ["10.2.11", "10.5.3"]
        );
        assert_eq!(
            releases_in(super::super::product("mariadb").unwrap(), &available),
            ["10.1.48", "10.2.11", "10.5.3", "10.11.5", "11.4.2"]
        );
    }
}
