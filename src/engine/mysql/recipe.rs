//! The MySQL family's builds from source: the CMake steps its two recipes share (configure
//! into the tree's `_build/` with `Release` and the variant's flags, `cmake --build`, `cmake
//! --install` into the entry's `install/`), and MariaDB's recipe (the optional storage engines
//! off, the system's PCRE and fmt; its server `mariadbd`, or `mysqld` in older trees; its
//! version from `VERSION`). Oracle MySQL's recipe is [`super::oracle_recipe`]; a tree of one
//! is refused by the other's recipe (only MariaDB's trees have `storage/maria`).
//!
//! Owns the commands, their arguments and CMake's cache variables, as data. Must not: run
//! anything (`provision` runs the steps), choose flags or know the cache.

use std::path::{Path, PathBuf};

use super::oracle_recipe::MysqlRecipe;
use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};

/// The recipes of the `mysql` family: MariaDB's, then Oracle MySQL's.
pub static RECIPES: &[&dyn Recipe] = &[&MariadbRecipe, &MysqlRecipe];

/// Oracle MySQL's version file since 8.0's later releases (earlier trees, and MariaDB's, have
/// [`VERSION_FILE`]).
pub const MYSQL_VERSION_FILE: &str = "MYSQL_VERSION";
/// MariaDB's version file, and older MySQL trees'.
pub const VERSION_FILE: &str = "VERSION";
/// What only MariaDB's trees have: its Aria storage engine.
const MARIADB_ONLY: &str = "storage/maria";

/// MariaDB's CMake options beyond the flags: the storage engines a benchmark never loads off
/// (each is minutes of compile), the system's PCRE and fmt (the bundled ones are downloaded at
/// build time, and only the package registries are reachable here).
const MARIADB_OPTIONS: &[&str] = &[
    "-DWITH_UNIT_TESTS=OFF",
    "-DWITH_EMBEDDED_SERVER=OFF",
    "-DPLUGIN_ROCKSDB=NO",
    "-DPLUGIN_MROONGA=NO",
    "-DPLUGIN_SPIDER=NO",
    "-DPLUGIN_OQGRAPH=NO",
    "-DPLUGIN_CONNECT=NO",
    "-DPLUGIN_COLUMNSTORE=NO",
    "-DPLUGIN_S3=NO",
    "-DPLUGIN_TOKUDB=NO",
    "-DWITH_PCRE=system",
    "-DWITH_LIBFMT=system",
];

/// Configure, compile and install with CMake: `Release` with `cflags` (plus `-DNDEBUG`) as its
/// flags, `ldflags` for every link, then `options`.
pub fn cmake_steps(
    inputs: &BuildInputs,
    cflags: &str,
    ldflags: &str,
    options: &[String],
) -> Vec<BuildStep> {
    let build = inputs.src.join("_build");
    let release = format!("{cflags} -DNDEBUG");
    let cmake = BuildStep::new("cmake", "cmake")
        .say("  cmake")
        .arg("-S")
        .arg(inputs.src)
        .arg("-B")
        .arg(&build)
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .arg(format!("-DCMAKE_C_FLAGS_RELEASE={release}"))
        .arg(format!("-DCMAKE_CXX_FLAGS_RELEASE={release}"))
        .arg(format!("-DCMAKE_EXE_LINKER_FLAGS={ldflags}"))
        .arg(format!("-DCMAKE_SHARED_LINKER_FLAGS={ldflags}"))
        .arg(format!(
            "-DCMAKE_INSTALL_PREFIX={}",
            inputs.entry.join("install").display()
        ))
        .args(options);
    vec![
        cmake,
        BuildStep::new("cmake --build", "cmake")
            .say(format!("  cmake --build -j{}", inputs.jobs))
            .arg("--build")
            .arg(&build)
            .arg(format!("-j{}", inputs.jobs)),
        BuildStep::new("cmake --install", "cmake")
            .say("  cmake --install")
            .arg("--install")
            .arg(&build),
    ]
}

/// `MYSQL_VERSION_MAJOR=…` lines of a version file → `MAJOR.MINOR.PATCH`.
pub fn version_file(path: &Path) -> Option<String> {
    let body = std::fs::read_to_string(path).ok()?;
    let part = |k: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim_start_matches('=').trim().to_string())
    };
    Some(format!(
        "{}.{}.{}",
        part("MYSQL_VERSION_MAJOR")?,
        part("MYSQL_VERSION_MINOR")?,
        part("MYSQL_VERSION_PATCH")?
    ))
}

/// Whether `dir` is MariaDB's tree: it has [`MARIADB_ONLY`].
pub fn mariadb_tree(dir: &Path) -> bool {
    dir.join(MARIADB_ONLY).is_dir()
}

/// Why `dir` is not a tree this family's recipe for `mariadb` (or Oracle MySQL's, when not)
/// builds: a tree of the other product, told apart by [`MARIADB_ONLY`].
pub fn other_product(dir: &Path, mariadb: bool) -> Option<String> {
    let has_version = [MYSQL_VERSION_FILE, VERSION_FILE]
        .iter()
        .any(|f| dir.join(f).is_file());
    let (other, command) = match (mariadb, mariadb_tree(dir)) {
        (false, true) => (
            "MariaDB's source (it has storage/maria, MariaDB's Aria engine)",
            "mariadb",
        ),
        (true, false) if has_version => (
            "Oracle MySQL's source (it has a MySQL version file and no storage/maria, MariaDB's Aria engine)",
            "mysql",
        ),
        _ => return None,
    };
    Some(format!("{other}; build it with `dbdelta build {command}`"))
}

/// MariaDB with CMake.
pub struct MariadbRecipe;

impl MariadbRecipe {
    fn options(inputs: &BuildInputs) -> Vec<String> {
        let mut o: Vec<String> = MARIADB_OPTIONS.iter().map(|s| s.to_string()).collect();
        if inputs.lto() {
            o.push("-DCMAKE_AR=/usr/bin/gcc-ar".into());
            o.push("-DCMAKE_RANLIB=/usr/bin/gcc-ranlib".into());
        }
        o
    }
}

impl Recipe for MariadbRecipe {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        cmake_steps(
            inputs,
            inputs.cflags,
            inputs.ldflags,
            &Self::options(inputs),
        )
    }

    fn options(&self, inputs: &BuildInputs) -> Vec<String> {
        Self::options(inputs)
    }

    fn foreign_tree(&self, dir: &Path) -> Option<String> {
        other_product(dir, true)
    }

    fn main_binary(&self, entry: &Path) -> PathBuf {
        let bin = self.installed(entry).0;
        ["mariadbd", "mysqld"]
            .iter()
            .map(|n| bin.join(n))
            .find(|p| p.exists())
            .unwrap_or_else(|| bin.join("mariadbd"))
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        version_file(&dir.join(VERSION_FILE))
    }

    fn default_stage_secs(&self) -> f64 {
        5400.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::common::recipe::{command_lines, test_steps};

    const CMAKE: &str = "cmake -S /w/src -B /w/src/_build -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG \
        -DCMAKE_EXE_LINKER_FLAGS= -DCMAKE_SHARED_LINKER_FLAGS= \
        -DCMAKE_INSTALL_PREFIX=/c/e/install -DWITH_UNIT_TESTS=OFF -DWITH_EMBEDDED_SERVER=OFF \
        -DPLUGIN_ROCKSDB=NO -DPLUGIN_MROONGA=NO -DPLUGIN_SPIDER=NO -DPLUGIN_OQGRAPH=NO \
        -DPLUGIN_CONNECT=NO -DPLUGIN_COLUMNSTORE=NO -DPLUGIN_S3=NO -DPLUGIN_TOKUDB=NO \
        -DWITH_PCRE=system -DWITH_LIBFMT=system";

    fn steps(cflags: &str, ldflags: &str) -> Vec<BuildStep> {
        test_steps(&MariadbRecipe, Path::new("/w/src"), cflags, ldflags)
    }

    #[test]
    fn cmake_build_and_install_as_before() {
        let s = steps("-O2", "");
        assert_eq!(
            command_lines(&s),
            [
                CMAKE,
                "cmake --build /w/src/_build -j2",
                "cmake --install /w/src/_build"
            ]
        );
        let stages: Vec<&str> = s.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(stages, ["cmake", "cmake --build", "cmake --install"]);
        let said: Vec<Option<&str>> = s.iter().map(|s| s.say.as_deref()).collect();
        assert_eq!(
            said,
            [
                Some("  cmake"),
                Some("  cmake --build -j2"),
                Some("  cmake --install")
            ]
        );
        assert!(s.iter().all(|s| s.env.is_empty() && s.dir.is_none()));
        assert!(s.iter().all(|s| s.extra_log.is_none()));
    }

    #[test]
    fn lto_names_gccs_archivers() {
        let s = steps("-O2 -flto=auto", "-flto=auto");
        let expected = CMAKE
            .replace("-O2 -DNDEBUG", "-O2 -flto=auto -DNDEBUG")
            .replace("LINKER_FLAGS= ", "LINKER_FLAGS=-flto=auto ")
            + " -DCMAKE_AR=/usr/bin/gcc-ar -DCMAKE_RANLIB=/usr/bin/gcc-ranlib";
        assert_eq!(s[0].command_line(), expected);
    }

    #[test]
    fn version_from_the_version_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("VERSION"),
            "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=11\nMYSQL_VERSION_PATCH=18\n",
        )
        .unwrap();
        assert_eq!(
            MariadbRecipe.tree_version(dir.path()).as_deref(),
            Some("10.11.18")
        );
        assert_eq!(
            MariadbRecipe.main_binary(Path::new("/nonexistent/e")),
            Path::new("/nonexistent/e/install/bin/mariadbd")
        );
    }
}
