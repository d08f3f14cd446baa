//! Oracle MySQL's build from source (8.0, 8.4, 9.x): the family's CMake steps with the options
//! a benchmark build needs and nothing that downloads; `lto` through MySQL's own
//! `-DWITH_LTO=ON`; its server `mysqld`; its version from `MYSQL_VERSION` (`VERSION` in
//! earlier 8.0 trees). A MariaDB tree is refused (MariaDB's recipe builds it).
//!
//! Owns the options and why each is there, as data. Must not: run anything (`provision` runs
//! the steps), choose flags or know the cache.

use std::path::{Path, PathBuf};

use super::recipe::{MYSQL_VERSION_FILE, VERSION_FILE, cmake_steps, other_product, version_file};
use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};

/// Oracle MySQL's CMake options beyond the flags. Off: what a benchmark never starts (the unit
/// tests, MySQL Router, NDB Cluster and its storage engine, which release builds compile in
/// disabled, the X plugin: dbdelta speaks the classic protocol) and
/// the authentication plugins that need libraries a server host rarely has (LDAP, Kerberos,
/// FIDO/WebAuthn, the client-side plugins), telemetry's CURL, the installed test suite and
/// static libraries. The system's OpenSSL, zlib, zstd, lz4, protobuf and ICU (each otherwise
/// compiled from the copy in the tree's `extra/`; nothing is downloaded either way). Boost is
/// the copy in `extra/`, so no `-DWITH_BOOST`.
pub const MYSQL_OPTIONS: &[&str] = &[
    "-DWITH_UNIT_TESTS=OFF",
    "-DWITH_ROUTER=OFF",
    "-DWITH_NDB=OFF",
    "-DWITHOUT_NDBCLUSTER_STORAGE_ENGINE=ON",
    "-DWITH_MYSQLX=OFF",
    "-DWITH_AUTHENTICATION_LDAP=OFF",
    "-DWITH_AUTHENTICATION_KERBEROS=OFF",
    "-DWITH_AUTHENTICATION_WEBAUTHN=OFF",
    "-DWITH_AUTHENTICATION_CLIENT_PLUGINS=OFF",
    "-DWITH_FIDO=none",
    "-DWITH_CURL=none",
    "-DINSTALL_MYSQLTESTDIR=",
    "-DINSTALL_STATIC_LIBRARIES=OFF",
    "-DWITH_SSL=system",
    "-DWITH_ZLIB=system",
    "-DWITH_ZSTD=system",
    "-DWITH_LZ4=system",
    "-DWITH_PROTOBUF=system",
    "-DWITH_ICU=system",
];

/// Oracle MySQL with CMake.
pub struct MysqlRecipe;

impl MysqlRecipe {
    /// The flags without `-flto…`: MySQL's `-DWITH_LTO=ON` adds `-flto` to every compile and
    /// `-flto=<CPUs>` to every link itself, and sets gcc's archivers (the reference build's way).
    fn without_lto(flags: &str) -> String {
        (flags.split_whitespace())
            .filter(|f| !f.starts_with("-flto"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn options(inputs: &BuildInputs) -> Vec<String> {
        let mut o: Vec<String> = MYSQL_OPTIONS.iter().map(|s| s.to_string()).collect();
        if inputs.lto() {
            o.push("-DWITH_LTO=ON".into());
        }
        o
    }
}

impl Recipe for MysqlRecipe {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        cmake_steps(
            inputs,
            &Self::without_lto(inputs.cflags),
            &Self::without_lto(inputs.ldflags),
            &Self::options(inputs),
        )
    }

    fn options(&self, inputs: &BuildInputs) -> Vec<String> {
        Self::options(inputs)
    }

    fn foreign_tree(&self, dir: &Path) -> Option<String> {
        other_product(dir, false)
    }

    fn main_binary(&self, entry: &Path) -> PathBuf {
        self.installed(entry).0.join("mysqld")
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        version_file(&dir.join(MYSQL_VERSION_FILE))
            .or_else(|| version_file(&dir.join(VERSION_FILE)))
    }

    fn default_stage_secs(&self) -> f64 {
        5400.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::common::recipe::{command_lines, test_steps};

    /// The command line docs/lab.md shows for `o2`.
    const CMAKE: &str = "cmake -S /w/src -B /w/src/_build -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG \
        -DCMAKE_EXE_LINKER_FLAGS= -DCMAKE_SHARED_LINKER_FLAGS= \
        -DCMAKE_INSTALL_PREFIX=/c/e/install -DWITH_UNIT_TESTS=OFF -DWITH_ROUTER=OFF \
        -DWITH_NDB=OFF -DWITHOUT_NDBCLUSTER_STORAGE_ENGINE=ON -DWITH_MYSQLX=OFF -DWITH_AUTHENTICATION_LDAP=OFF \
        -DWITH_AUTHENTICATION_KERBEROS=OFF -DWITH_AUTHENTICATION_WEBAUTHN=OFF \
        -DWITH_AUTHENTICATION_CLIENT_PLUGINS=OFF -DWITH_FIDO=none -DWITH_CURL=none \
        -DINSTALL_MYSQLTESTDIR= -DINSTALL_STATIC_LIBRARIES=OFF -DWITH_SSL=system \
        -DWITH_ZLIB=system -DWITH_ZSTD=system -DWITH_LZ4=system -DWITH_PROTOBUF=system \
        -DWITH_ICU=system";

    fn steps(cflags: &str, ldflags: &str) -> Vec<BuildStep> {
        test_steps(&MysqlRecipe, Path::new("/w/src"), cflags, ldflags)
    }

    #[test]
    fn cmake_build_and_install() {
        assert_eq!(
            command_lines(&steps("-O2", "")),
            [
                CMAKE,
                "cmake --build /w/src/_build -j2",
                "cmake --install /w/src/_build"
            ]
        );
        let os = steps("-Os", "");
        assert_eq!(os[0].command_line(), CMAKE.replace("-O2", "-Os"));
    }

    #[test]
    fn the_command_lines_are_what_the_docs_show() {
        let doc = include_str!("../../../docs/lab.md");
        let shown: Vec<&str> = (doc.lines())
            .map(str::trim)
            .skip_while(|l| !l.starts_with("cmake -S <tree>"))
            .take(3)
            .collect();
        let ours: Vec<String> = command_lines(&steps("-O2", ""))
            .iter()
            .map(|l| {
                l.replace("/w/src", "<tree>")
                    .replace("/c/e", "<entry>")
                    .replace("-j2", "-j<CPUs>")
            })
            .collect();
        assert_eq!(shown, ours, "docs/lab.md's Oracle MySQL command lines");
    }

    #[test]
    fn lto_is_mysqls_own_option_not_the_flag() {
        let s = steps("-O2 -flto=auto", "-flto=auto");
        assert_eq!(s[0].command_line(), format!("{CMAKE} -DWITH_LTO=ON"));
        let pgo_lto = steps(
            "-O2 -flto=auto -fprofile-use=/p -fprofile-correction",
            "-flto=auto",
        );
        assert_eq!(
            pgo_lto[0].command_line(),
            CMAKE.replace(
                "-O2 -DNDEBUG",
                "-O2 -fprofile-use=/p -fprofile-correction -DNDEBUG"
            ) + " -DWITH_LTO=ON"
        );
    }

    #[test]
    fn the_instrumented_stage_passes_gccs_profile_flags() {
        let flags = "-O2 -fprofile-generate=/p -fprofile-update=prefer-atomic";
        let s = steps(flags, "-fprofile-generate=/p");
        let expected = CMAKE
            .replace("-O2 -DNDEBUG", &format!("{flags} -DNDEBUG"))
            .replace("LINKER_FLAGS= ", "LINKER_FLAGS=-fprofile-generate=/p ");
        assert_eq!(s[0].command_line(), expected);
    }

    #[test]
    fn a_tree_tells_its_product_and_version() {
        use super::super::recipe::MariadbRecipe;
        let tree = |file: &str, version: &str, maria: bool| {
            let dir = tempfile::tempdir().unwrap();
            let (major, rest) = version.split_once('.').unwrap();
            let (minor, patch) = rest.split_once('.').unwrap();
            let body = format!(
                "MYSQL_VERSION_MAJOR={major}\nMYSQL_VERSION_MINOR={minor}\nMYSQL_VERSION_PATCH={patch}\n"
            );
            std::fs::write(dir.path().join(file), body).unwrap();
            if maria {
                std::fs::create_dir_all(dir.path().join("storage/maria")).unwrap();
            }
            dir
        };
        let mysql = tree("MYSQL_VERSION", "9.7.2", false);
        let mysql_80 = tree("VERSION", "8.0.20", false);
        let mariadb = tree("VERSION", "11.4.5", true);
        for (dir, version) in [(&mysql, "9.7.2"), (&mysql_80, "8.0.20")] {
            assert_eq!(
                MysqlRecipe.tree_version(dir.path()).as_deref(),
                Some(version)
            );
            assert_eq!(MysqlRecipe.foreign_tree(dir.path()), None);
            let other = MariadbRecipe.foreign_tree(dir.path()).unwrap();
            assert!(
                other.starts_with("Oracle MySQL's source (it has a MySQL version file and no storage/maria, MariaDB's Aria engine); build it with `dbdelta build mysql`"),
                "{other}"
            );
        }
        let refused = MysqlRecipe.foreign_tree(mariadb.path()).unwrap();
        assert!(
            refused.starts_with("MariaDB's source (it has storage/maria, MariaDB's Aria engine); build it with `dbdelta build mariadb`"),
            "{refused}"
        );
        assert_eq!(MariadbRecipe.foreign_tree(mariadb.path()), None);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(MariadbRecipe.foreign_tree(empty.path()), None);
        assert_eq!(MysqlRecipe.foreign_tree(empty.path()), None);
        assert_eq!(
            MysqlRecipe.main_binary(Path::new("/nonexistent/e")),
            Path::new("/nonexistent/e/install/bin/mysqld")
        );
    }
}
