//! SQLite's build from source: the amalgamation `sqlite3.c` (found within three levels of the
//! tree, else generated first with `configure` and `make sqlite3.c` from a full source tree),
//! compiled and linked into the entry's `lib/libsqlite3.so`, the library a target loads; and how
//! a source tree tells its version (`VERSION`, else the amalgamation's `sqlite3.h`).
//!
//! Owns the commands, their arguments and SQLite's compile-time options, as data. Must not: run
//! anything (`provision` runs the steps), choose flags or know the cache.

use std::path::{Path, PathBuf};

use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe, find_file};

/// SQLite's compile-time options of every built library (the variants differ only in flags).
const DEFINES: &[&str] = &["-DSQLITE_THREADSAFE=1", "-DHAVE_USLEEP=1"];

/// The recipe of the `sqlite` family.
pub struct SqliteRecipe;

impl Recipe for SqliteRecipe {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        let mut steps = Vec::new();
        let amalgamation = match find_file(inputs.src, "sqlite3.c", 3) {
            Some(f) => f,
            None => {
                steps.push(
                    BuildStep::new("configure", "./configure")
                        .say("  generating the amalgamation (configure; make sqlite3.c)")
                        .extra_log("config.log"),
                );
                steps.push(BuildStep::new("make sqlite3.c", "make").arg("sqlite3.c"));
                inputs.src.join("sqlite3.c")
            }
        };
        let dir = amalgamation.parent().unwrap_or(inputs.src);
        let (lib, library) = self.installed(inputs.entry);
        let cflags = inputs.cflags.split_whitespace();
        steps.push(
            BuildStep::new("compile sqlite3.c", inputs.compiler)
                .say("  compile sqlite3.c")
                .make_dir(lib)
                .args(cflags.clone())
                .args(["-fPIC", "-c", "sqlite3.c", "-o", "sqlite3.o"])
                .args(DEFINES.iter().copied())
                .dir(dir),
        );
        steps.push(
            BuildStep::new("link libsqlite3.so", inputs.compiler)
                .say("  link libsqlite3.so")
                .args(cflags)
                .args(["-shared", "-o"])
                .args(library)
                .arg("sqlite3.o")
                .args(inputs.ldflags.split_whitespace())
                .args(["-lpthread", "-lm", "-ldl"])
                .dir(dir),
        );
        steps
    }

    fn installed(&self, entry: &Path) -> (PathBuf, Option<PathBuf>) {
        (
            entry.join("lib"),
            Some(entry.join("lib").join("libsqlite3.so")),
        )
    }

    fn main_binary(&self, entry: &Path) -> PathBuf {
        let (lib, library) = self.installed(entry);
        library.unwrap_or(lib)
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        std::fs::read_to_string(dir.join("VERSION"))
            .ok()
            .map(|v| v.trim().to_string())
            .or_else(|| amalgamation_version(dir))
    }

    fn default_source(&self) -> Option<&'static str> {
        Some("sqlite3")
    }

    fn default_stage_secs(&self) -> f64 {
        60.0
    }

    /// The instrumented library, which the training run's own process loads.
    fn training_target(&self, bin: &Path, library: Option<&Path>) -> String {
        match library {
            Some(lib) => format!("engine = \"sqlite\"\nlibrary = \"{}\"", lib.display()),
            None => format!("engine = \"sqlite\"\nbin = \"{}\"", bin.display()),
        }
    }
}

/// `#define SQLITE_VERSION "3.46.0"` in an amalgamation's header, wherever it sits.
fn amalgamation_version(dir: &Path) -> Option<String> {
    let header = find_file(dir, "sqlite3.h", 3)?;
    std::fs::read_to_string(header)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("#define SQLITE_VERSION "))
        .map(|v| v.trim().trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::common::recipe::{command_lines as lines, test_steps};

    fn steps(src: &Path, cflags: &str, ldflags: &str) -> Vec<BuildStep> {
        test_steps(&SqliteRecipe, src, cflags, ldflags)
    }

    #[test]
    fn an_amalgamation_in_the_tree_is_compiled_and_linked_where_it_is() {
        let tree = tempfile::tempdir().unwrap();
        let sub = tree.path().join("sqlite3");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("sqlite3.c"), "").unwrap();
        let s = steps(tree.path(), "-O2 -flto=auto", "-flto=auto");
        assert_eq!(
            lines(&s),
            [
                "gcc -O2 -flto=auto -fPIC -c sqlite3.c -o sqlite3.o \
                 -DSQLITE_THREADSAFE=1 -DHAVE_USLEEP=1",
                "gcc -O2 -flto=auto -shared -o /c/e/lib/libsqlite3.so sqlite3.o -flto=auto \
                 -lpthread -lm -ldl",
            ]
        );
        assert!(s.iter().all(|s| s.dir.as_deref() == Some(sub.as_path())));
        assert_eq!(s[0].make_dirs, [Path::new("/c/e/lib")]);
        let said: Vec<Option<&str>> = s.iter().map(|s| s.say.as_deref()).collect();
        assert_eq!(
            said,
            [Some("  compile sqlite3.c"), Some("  link libsqlite3.so")]
        );
        let stages: Vec<&str> = s.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(stages, ["compile sqlite3.c", "link libsqlite3.so"]);
        assert!(s.iter().all(|s| s.env.is_empty() && s.extra_log.is_none()));
    }

    #[test]
    fn a_full_source_tree_generates_the_amalgamation_first() {
        let tree = tempfile::tempdir().unwrap();
        let s = steps(tree.path(), "", "");
        assert_eq!(
            lines(&s),
            [
                "./configure",
                "make sqlite3.c",
                "gcc -fPIC -c sqlite3.c -o sqlite3.o -DSQLITE_THREADSAFE=1 -DHAVE_USLEEP=1",
                "gcc -shared -o /c/e/lib/libsqlite3.so sqlite3.o -lpthread -lm -ldl",
            ]
        );
        assert_eq!(
            s[0].say.as_deref(),
            Some("  generating the amalgamation (configure; make sqlite3.c)")
        );
        assert_eq!(
            (s[0].extra_log, s[1].say.as_deref()),
            (Some("config.log"), None)
        );
        assert_eq!((s[0].dir.as_deref(), s[1].dir.as_deref()), (None, None));
        assert_eq!(s[2].dir.as_deref(), Some(tree.path()));
    }

    #[test]
    fn versions_training_target_and_where_the_library_is() {
        let tree = tempfile::tempdir().unwrap();
        let sub = tree.path().join("a").join("b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("sqlite3.h"), "#define SQLITE_VERSION \"3.46.0\"\n").unwrap();
        assert_eq!(
            SqliteRecipe.tree_version(tree.path()).as_deref(),
            Some("3.46.0")
        );
        std::fs::write(tree.path().join("VERSION"), "3.40.1\n").unwrap();
        assert_eq!(
            SqliteRecipe.tree_version(tree.path()).as_deref(),
            Some("3.40.1")
        );
        let entry = Path::new("/c/e");
        assert_eq!(
            SqliteRecipe.main_binary(entry),
            Path::new("/c/e/lib/libsqlite3.so")
        );
        assert_eq!(
            SqliteRecipe.training_target(
                Path::new("/c/e/lib"),
                Some(Path::new("/c/e/lib/libsqlite3.so"))
            ),
            "engine = \"sqlite\"\nlibrary = \"/c/e/lib/libsqlite3.so\""
        );
    }
}
