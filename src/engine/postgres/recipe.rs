//! PostgreSQL's build from source: `configure` (no readline, zlib, ICU or LLVM, so only a
//! compiler and make are needed), `make`, `make install` into the entry's `install/`, and how a
//! source tree tells its version (`configure`'s `PACKAGE_VERSION`).
//!
//! Owns the commands, their arguments and environment, as data. Must not: run anything
//! (`provision` runs the steps), choose flags or know the cache.

use std::path::{Path, PathBuf};

use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};

/// The recipe of the `postgres` family.
pub struct PgRecipe;

impl Recipe for PgRecipe {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["postgresql"]
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        let prefix = inputs.entry.join("install");
        let mut configure = BuildStep::new("configure", "./configure")
            .say("  configure")
            .arg(format!("--prefix={}", prefix.display()))
            .args([
                "--without-readline",
                "--without-zlib",
                "--without-icu",
                "--without-llvm",
            ])
            .arg(format!("CFLAGS={}", inputs.cflags))
            .arg(format!("LDFLAGS={}", inputs.ldflags))
            .extra_log("config.log");
        if inputs.lto() {
            // `gcc-ar`/`gcc-ranlib` for archives of LTO objects.
            configure = configure
                .env("AR", "gcc-ar")
                .env("RANLIB", "gcc-ranlib")
                .env("NM", "gcc-nm");
        }
        // libpq's build refuses a library that references exit(), which an instrumented
        // build's profiling runtime does; PostgreSQL skips that check for coverage builds.
        let coverage = inputs.instrumented().then_some("enable_coverage=yes");
        vec![
            configure,
            BuildStep::new("make", "make")
                .say(format!("  make -j{}", inputs.jobs))
                .arg(format!("-j{}", inputs.jobs))
                .args(coverage),
            BuildStep::new("make install", "make")
                .say("  make install")
                .arg("install")
                .args(coverage),
        ]
    }

    fn main_binary(&self, entry: &Path) -> PathBuf {
        self.installed(entry).0.join("postgres")
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        std::fs::read_to_string(dir.join("configure"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("PACKAGE_VERSION='"))
            .map(|v| v.trim_end_matches('\'').to_string())
    }

    fn default_stage_secs(&self) -> f64 {
        360.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::common::recipe::{command_lines as lines, test_steps};

    fn steps(cflags: &str, ldflags: &str) -> Vec<BuildStep> {
        test_steps(&PgRecipe, Path::new("/w/src"), cflags, ldflags)
    }

    #[test]
    fn configure_make_and_install_as_before() {
        let s = steps("-O2", "");
        assert_eq!(
            lines(&s),
            [
                "./configure --prefix=/c/e/install --without-readline --without-zlib \
                 --without-icu --without-llvm CFLAGS=-O2 LDFLAGS=",
                "make -j2",
                "make install",
            ]
        );
        let stages: Vec<&str> = s.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(stages, ["configure", "make", "make install"]);
        let said: Vec<Option<&str>> = s.iter().map(|s| s.say.as_deref()).collect();
        assert_eq!(
            said,
            [
                Some("  configure"),
                Some("  make -j2"),
                Some("  make install")
            ]
        );
        assert_eq!(s[0].extra_log, Some("config.log"));
        assert!(s.iter().all(|s| s.env.is_empty() && s.dir.is_none()));
    }

    #[test]
    fn lto_sets_the_archivers_and_pgo_instrumented_enables_coverage() {
        let lto = steps("-O2 -flto=auto", "-flto=auto");
        let env: Vec<(&str, &str)> = (lto[0].env.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [("AR", "gcc-ar"), ("RANLIB", "gcc-ranlib"), ("NM", "gcc-nm")]
        );
        let pgo = steps(
            "-O2 -fprofile-generate=/p -fprofile-update=prefer-atomic",
            "-fprofile-generate=/p",
        );
        assert_eq!(
            lines(&pgo),
            [
                "./configure --prefix=/c/e/install --without-readline --without-zlib \
                 --without-icu --without-llvm \
                 CFLAGS=-O2 -fprofile-generate=/p -fprofile-update=prefer-atomic \
                 LDFLAGS=-fprofile-generate=/p",
                "make -j2 enable_coverage=yes",
                "make install enable_coverage=yes",
            ]
        );
        assert!(pgo[0].env.is_empty());
        // The flags are one argument each, spaces and all.
        assert_eq!(
            pgo[0].args[5],
            "CFLAGS=-O2 -fprofile-generate=/p -fprofile-update=prefer-atomic"
        );
        assert_eq!(pgo[0].args.len(), 7);
    }

    #[test]
    fn version_from_configure_and_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("configure"),
            "#!/bin/sh\nPACKAGE_NAME='PostgreSQL'\nPACKAGE_VERSION='15.18'\n",
        )
        .unwrap();
        assert_eq!(PgRecipe.tree_version(dir.path()).as_deref(), Some("15.18"));
        assert_eq!(
            PgRecipe.main_binary(Path::new("/c/e")),
            Path::new("/c/e/install/bin/postgres")
        );
    }
}
