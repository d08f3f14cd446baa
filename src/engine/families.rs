//! The engine registry: every engine family dbdelta drives, as one static list of
//! [`Family`] implementations, and the test-only families behind the hidden test switch.
//!
//! A family is its folder under `engine/` and one line here (plus its SQL per suite when it
//! speaks a dialect of its own). Everything else (the lab's engine names, the preflight, the
//! factory in `engine::start`, `connect` URLs, remote targets, fetched builds) asks the
//! family through [`crate::engine::EngineKind`]. Must not: hold any family's behaviour; that
//! is its folder's.

use super::Family;
use super::common::fetchable::Product;

/// Every engine family, in the order `dbdelta list` and messages name them. The first is the
/// default of an empty target description.
pub static FAMILIES: &[&dyn Family] = &[
    &super::sqlite::SqliteFamily,
    &super::postgres::PgFamily,
    &super::mysql::MysqlFamily,
];

#[path = "fake/mod.rs"]
mod fake;

/// Families that exist to test the plug-in seam (a family is a folder plus one line here).
/// Hidden unless [`TEST_ENV`] is set, as the test-only suites are; the integration tests set it.
pub static TEST_FAMILIES: &[&dyn Family] = &[&fake::FakeFamily];

/// The hidden test switch: set (to anything) to make [`TEST_FAMILIES`] (and the test-only
/// suites) available.
pub const TEST_ENV: &str = "DBDELTA_TEST_SUITES";

/// The families this process knows: [`FAMILIES`], then [`TEST_FAMILIES`] when enabled.
pub fn registry() -> Vec<&'static dyn Family> {
    let tests = std::env::var_os(TEST_ENV).is_some();
    (FAMILIES.iter().copied())
        .chain(TEST_FAMILIES.iter().copied().filter(|_| tests))
        .collect()
}

/// Every family compiled in, [`FAMILIES`] then [`TEST_FAMILIES`], whatever the environment: how
/// a stored run's engine names are read (the switch decides what a lab may name, not how a
/// stored run reads).
pub fn all() -> Vec<&'static dyn Family> {
    (FAMILIES.iter().chain(TEST_FAMILIES)).copied().collect()
}

/// Every product whose builds can be fetched, family by family in [`FAMILIES`]' order
/// (`dbdelta list versions` shows them in this order).
pub fn products() -> Vec<&'static Product> {
    (all().into_iter())
        .flat_map(|f| f.products().iter().copied())
        .collect()
}

/// The fetchable product `name` names (its id or an alias: `postgresql`).
pub fn product(name: &str) -> Option<&'static Product> {
    products().into_iter().find(|p| p.answers_to(name))
}

/// The names a lab gives a server engine (each family that is not embedded, then its other
/// products: `mariadb`), for messages: `postgres, mysql, mariadb`.
pub fn server_names() -> Vec<&'static str> {
    (registry().into_iter())
        .filter(|f| !f.embedded())
        .flat_map(|f| std::iter::once(f.name()).chain(other_products(f)))
        .collect()
}

/// The products of `f` a lab names by an alias of the family (`mariadb` of `mysql`).
pub fn other_products(f: &dyn Family) -> impl Iterator<Item = &'static str> + '_ {
    (f.products().iter())
        .map(|p| p.id)
        .filter(move |id| *id != f.name() && f.aliases().contains(id))
}

/// The titles of the families that run inside dbdelta (`SQLite`).
pub fn embedded_titles() -> Vec<&'static str> {
    (registry().into_iter())
        .filter(|f| f.embedded())
        .map(|f| f.title())
        .collect()
}
