//! Expanding version sweeps: each `[[target]]` with `versions` becomes one target per release
//! the registries offer (`pg-16.2`, `pg-16.3`, …), in release order, each fetching the newest
//! package of its release and tagged with the sweep's name (the `[[target]]` name), so the run
//! records the order and reports and `bisect` can read it.
//!
//! Owns the expansion and its errors (nothing matches, a list entry that matches nothing, a
//! name the expansion makes twice). Must not: read a registry itself (the listing is handed
//! in, so tests run offline), or change anything but the lab's targets.

use anyhow::Result;

use super::lab::{Lab, LabTarget};
use crate::error::InputError;
use crate::provision::Product;
use crate::provision::sweep::{self, VersionSet};

/// Every fetchable package version of a product; the `&str` (a version prefix, when the sweep
/// has one) may narrow which sources are read.
pub type Listing<'a> = &'a dyn Fn(Product, Option<&str>) -> Result<Vec<String>>;

/// The registries' listing ([`crate::provision::versions`]).
pub fn registry_listing(product: Product, hint: Option<&str>) -> Result<Vec<String>> {
    crate::provision::versions(product, hint)
}

/// Replace every sweep target of `lab` by its releases, in place (other targets keep their
/// places). A lab without `versions` is left as it is and `listing` is not called.
pub fn expand(lab: &mut Lab, listing: Listing<'_>) -> Result<(), InputError> {
    if lab.targets.iter().all(|t| t.versions.is_none()) {
        return Ok(());
    }
    let mut out = Vec::new();
    for t in std::mem::take(&mut lab.targets) {
        match &t.versions {
            None => out.push(t),
            Some(set) => out.extend(releases(&t, set, listing)?),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = out.iter().find(|t| !seen.insert(t.name.as_str())) {
        return Err(InputError::new(format!(
            "target name \"{}\" is used twice once the sweeps are expanded (a sweep's targets are named NAME-RELEASE); rename the other target",
            dup.name
        )));
    }
    lab.targets = out;
    Ok(())
}

/// One target per release of the sweep `t`.
fn releases(
    t: &LabTarget,
    set: &VersionSet,
    listing: Listing<'_>,
) -> Result<Vec<LabTarget>, InputError> {
    let product = t.product.expect("the lab sets a product with versions");
    let hint = match set {
        VersionSet::Prefix(p) if !p.is_empty() => Some(p.as_str()),
        _ => None,
    };
    let at = format!("target {}: versions = {}", t.name, set.describe());
    let available = listing(product, hint).map_err(|e| {
        InputError::new(format!(
            "{at}: the list of {} builds could not be read ({e:#}); check the network or the registry settings (`dbdelta list versions {}`)",
            product.title,
            product.id
        ))
    })?;
    let exists = || summary(&sweep::releases_in(product, &available));
    let chosen = sweep::choose(product, set, &available).map_err(|entry| {
        InputError::new(format!(
            "{at}: no {} build matches \"{entry}\" (fetchable: {}); remove it or pick one of those",
            product.title,
            exists()
        ))
    })?;
    if chosen.is_empty() {
        return Err(InputError::new(format!(
            "{at} matches no {} build (fetchable: {}); widen the pattern",
            product.title,
            exists()
        )));
    }
    Ok(chosen
        .into_iter()
        .map(|c| LabTarget {
            name: format!("{}-{}", t.name, c.release),
            version: Some(c.version),
            versions: None,
            sweep: Some(t.name.clone()),
            ..t.clone()
        })
        .collect())
}

/// The releases as written, or per major `16.1–16.14 (13)` when there are more than 12.
fn summary(releases: &[String]) -> String {
    if releases.len() <= 12 {
        return releases.join(", ");
    }
    let mut out: Vec<(String, &str, &str, usize)> = Vec::new();
    for r in releases {
        let major = r.split('.').next().unwrap_or(r).to_string();
        match out.last_mut() {
            Some((m, _, last, n)) if *m == major => {
                *last = r;
                *n += 1;
            }
            _ => out.push((major, r, r, 1)),
        }
    }
    (out.iter())
        .map(|(_, first, last, n)| match n {
            1 => first.to_string(),
            n => format!("{first}–{last} ({n})"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn lab(targets: &str) -> Lab {
        let text = format!("[lab]\nname = \"s\"\n\n{targets}");
        super::super::lab::parse(&text, "lab.toml", Path::new(".")).unwrap()
    }

    fn fake(product: Product, _hint: Option<&str>) -> Result<Vec<String>> {
        Ok(match product.id {
            "postgres" => [
                "16.9.0-beta.1",
                "16.10.0-beta.2",
                "16.10.0-beta.1",
                "15.2.0-beta.1",
            ]
            .map(String::from)
            .to_vec(),
            _ => vec!["10.2.11".into()],
        })
    }

    fn names(l: &Lab) -> Vec<(&str, Option<&str>, Option<&str>)> {
        (l.targets.iter())
            .map(|t| (t.name.as_str(), t.version.as_deref(), t.sweep.as_deref()))
            .collect()
    }

    #[test]
    fn a_sweep_becomes_one_target_per_release_in_order_after_the_targets_before_it() {
        let mut l = lab(
            "[[target]]\nname = \"base\"\nengine = \"postgres\"\nversion = \"15\"\n\n[[target]]\nname = \"pg\"\nengine = \"postgres\"\nversions = \"16.*\"\nsettings = [\"jit = off\"]\n",
        );
        expand(&mut l, &fake).unwrap();
        assert_eq!(
            names(&l),
            [
                ("base", Some("15"), None),
                ("pg-16.9", Some("16.9.0-beta.1"), Some("pg")),
                ("pg-16.10", Some("16.10.0-beta.2"), Some("pg")),
            ]
        );
        assert!(l.targets.iter().all(|t| t.versions.is_none()));
        assert_eq!(l.targets[2].settings, ["jit = off"]);
    }

    #[test]
    fn an_empty_sweep_a_missing_entry_an_unreadable_registry_and_a_clash_are_one_line_errors() {
        let e = |targets: &str, listing: Listing<'_>| {
            let mut l = lab(targets);
            expand(&mut l, listing).unwrap_err().0
        };
        let pg =
            |v: &str| format!("[[target]]\nname = \"pg\"\nengine = \"postgres\"\nversions = {v}\n");
        assert_eq!(
            e(&pg("\"17.*\""), &fake),
            "target pg: versions = \"17.*\" matches no PostgreSQL build (fetchable: 15.2, 16.9, 16.10); widen the pattern"
        );
        assert_eq!(
            e(&pg("[\"16.9\", \"16.4\"]"), &fake),
            "target pg: versions = [\"16.9\", \"16.4\"]: no PostgreSQL build matches \"16.4\" (fetchable: 15.2, 16.9, 16.10); remove it or pick one of those"
        );
        let offline =
            |_: Product, _: Option<&str>| -> Result<Vec<String>> { anyhow::bail!("offline") };
        let msg = e(&pg("\"16.*\""), &offline);
        assert!(
            msg.contains("could not be read (offline)") && !msg.contains('\n'),
            "{msg}"
        );
        let clash = format!(
            "{}\n[[target]]\nname = \"pg-16.9\"\nengine = \"postgres\"\nversion = \"16.9\"\n",
            pg("\"16.*\"")
        );
        assert!(e(&clash, &fake).starts_with("target name \"pg-16.9\" is used twice"));
        let many: Vec<String> = (1..=14)
            .map(|m| format!("16.{m}"))
            .chain(["17.0".into()])
            .collect();
        assert_eq!(summary(&many), "16.1–16.14 (14), 17.0");
    }
}
