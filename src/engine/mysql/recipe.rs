//! MariaDB's build from source: CMake (`Release`, the optional storage engines off, the
//! system's PCRE and fmt), `cmake --build`, `cmake --install` into the entry's `install/`; the
//! server program it makes (`mariadbd`, or `mysqld` in older trees) and how a source tree tells
//! its version (`VERSION`'s `MYSQL_VERSION_*`). Its name stays `mariadb`, the cache's id; it
//! answers to `mysql` on the command line until Oracle MySQL has a recipe of its own (the
//! family's [`RECIPES`] is the place for it).
//!
//! Owns the commands, their arguments and CMake's cache variables, as data. Must not: run
//! anything (`provision` runs the steps), choose flags or know the cache.

use std::path::{Path, PathBuf};

use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};

/// The recipes of the `mysql` family, which also serves MariaDB.
pub static RECIPES: &[&dyn Recipe] = &[&MariadbRecipe];

/// MariaDB with CMake.
pub struct MariadbRecipe;

impl Recipe for MariadbRecipe {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["mysql"]
    }

    fn stand_in_for(&self) -> &'static [&'static str] {
        &["mysql"]
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        let build = inputs.src.join("_build");
        let release = format!("{} -DNDEBUG", inputs.cflags);
        let mut cmake = BuildStep::new("cmake", "cmake")
            .say("  cmake")
            .arg("-S")
            .arg(inputs.src)
            .arg("-B")
            .arg(&build)
            .arg("-DCMAKE_BUILD_TYPE=Release")
            .arg(format!("-DCMAKE_C_FLAGS_RELEASE={release}"))
            .arg(format!("-DCMAKE_CXX_FLAGS_RELEASE={release}"))
            .arg(format!("-DCMAKE_EXE_LINKER_FLAGS={}", inputs.ldflags))
            .arg(format!("-DCMAKE_SHARED_LINKER_FLAGS={}", inputs.ldflags))
            .arg(format!(
                "-DCMAKE_INSTALL_PREFIX={}",
                inputs.entry.join("install").display()
            ))
            .args([
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
                // The system's libraries: the bundled ones are downloaded at build time, and
                // only the package registries are reachable here.
                "-DWITH_PCRE=system",
                "-DWITH_LIBFMT=system",
            ]);
        if inputs.lto() {
            cmake = cmake.args([
                "-DCMAKE_AR=/usr/bin/gcc-ar",
                "-DCMAKE_RANLIB=/usr/bin/gcc-ranlib",
            ]);
        }
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

    fn main_binary(&self, entry: &Path) -> PathBuf {
        let bin = self.installed(entry).0;
        ["mariadbd", "mysqld"]
            .iter()
            .map(|n| bin.join(n))
            .find(|p| p.exists())
            .unwrap_or_else(|| bin.join("mariadbd"))
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        let body = std::fs::read_to_string(dir.join("VERSION")).ok()?;
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
