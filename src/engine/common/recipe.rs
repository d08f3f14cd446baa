//! What a build from source is, as plain data: the inputs of one compile ([`BuildInputs`]), the
//! commands it runs in order ([`BuildStep`]), and the [`Recipe`] a family gives for each engine
//! it can compile (its configure, compile and install commands, where the result lands, how a
//! source tree tells its version, what a PGO training lab names as its target).
//!
//! Owns the shape of a recipe and what recipes share ([`find_file`]). Must not: run anything
//! (`provision` runs the steps, logs them and reports a failure), choose flags or know the
//! cache.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The inputs of one compile, as `provision` gives them to [`Recipe::steps`].
#[derive(Debug, Clone, Copy)]
pub struct BuildInputs<'a> {
    /// The unpacked source tree.
    pub src: &'a Path,
    /// The cache entry the build installs into.
    pub entry: &'a Path,
    pub cflags: &'a str,
    pub ldflags: &'a str,
    /// Parallel compile jobs.
    pub jobs: usize,
    /// The C compiler (`CC`, else `gcc`).
    pub compiler: &'a str,
}

impl BuildInputs<'_> {
    /// Whether the flags build with link-time optimisation (archives then need `gcc-ar`).
    pub fn lto(&self) -> bool {
        self.cflags.contains("-flto")
    }

    /// Whether the flags build the instrumented stage of a PGO build.
    pub fn instrumented(&self) -> bool {
        self.cflags.contains("-fprofile-generate")
    }
}

/// One command of a build, run with its output appended to the build's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStep {
    /// What a failure names as the stage that failed (`configure`, `make install`).
    pub stage: String,
    /// The progress line shown before it runs; `None`: none (a step an earlier line announced).
    pub say: Option<String>,
    pub program: String,
    pub args: Vec<OsString>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Where it runs; `None`: the source tree.
    pub dir: Option<PathBuf>,
    /// Directories created before it runs (e.g. the one its output is written into).
    pub make_dirs: Vec<PathBuf>,
    /// A file of the source tree whose failed check is appended to the log on failure
    /// (`config.log`, where the compiler's own message is).
    pub extra_log: Option<&'static str>,
}

impl BuildStep {
    /// A step named `stage` that runs `program` in the source tree, with no arguments yet.
    pub fn new(stage: &str, program: &str) -> BuildStep {
        BuildStep {
            stage: stage.to_string(),
            say: None,
            program: program.to_string(),
            args: Vec::new(),
            env: Vec::new(),
            dir: None,
            make_dirs: Vec::new(),
            extra_log: None,
        }
    }

    /// Show `line` before it runs.
    pub fn say(mut self, line: impl Into<String>) -> BuildStep {
        self.say = Some(line.into());
        self
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> BuildStep {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> BuildStep {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> BuildStep {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn dir(mut self, dir: &Path) -> BuildStep {
        self.dir = Some(dir.to_path_buf());
        self
    }

    pub fn make_dir(mut self, dir: PathBuf) -> BuildStep {
        self.make_dirs.push(dir);
        self
    }

    pub fn extra_log(mut self, name: &'static str) -> BuildStep {
        self.extra_log = Some(name);
        self
    }

    /// The command line as one text (program, then arguments, separated by spaces), for tests
    /// and messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How one engine is compiled from an unpacked source tree: a family's build, as data. Its
/// [`Recipe::name`] is the cache's engine id (`build.json`'s `engine`, the
/// `<cache>/compiled/<name>-…` directories), so it never changes once builds are cached.
pub trait Recipe: Sync {
    /// The cache id, also what `dbdelta build NAME` and a lab's `engine` name.
    fn name(&self) -> &'static str;
    /// Other names `dbdelta build` takes for it.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Those of [`Recipe::aliases`] that are another product's engine name, which this recipe
    /// stands in for on the command line only: a lab's target that names one is that product,
    /// which this recipe does not build, so a lab's `build` refuses it.
    fn stand_in_for(&self) -> &'static [&'static str] {
        &[]
    }
    /// The commands of one compile, in order: configure, compile, install.
    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep>;
    /// The configure options a build's provenance records beside its flags (what is built and
    /// with which libraries); empty: none beyond the flags.
    fn options(&self, _inputs: &BuildInputs) -> Vec<String> {
        Vec::new()
    }
    /// Why the source tree `dir` is not one this recipe builds: what it is (another
    /// product's source) and the command that builds it, to follow "source X is "; `None`: it
    /// may be.
    fn foreign_tree(&self, _dir: &Path) -> Option<String> {
        None
    }
    /// Where an entry's result is: the directory of its binaries (servers) or of its library,
    /// and the library a target loads (an embedded engine's).
    fn installed(&self, entry: &Path) -> (PathBuf, Option<PathBuf>) {
        (entry.join("install").join("bin"), None)
    }
    /// The file whose `.text` size reports show.
    fn main_binary(&self, entry: &Path) -> PathBuf;
    /// What a source tree says its version is.
    fn tree_version(&self, dir: &Path) -> Option<String>;
    /// The Debian source package built when no source is named; `None`: a source must be named
    /// (a server's major version is the user's choice).
    fn default_source(&self) -> Option<&'static str> {
        None
    }
    /// Rough wall-clock seconds of one compile stage on a 2-CPU machine, for `--dry-run` when
    /// the cache holds no earlier build of this engine.
    fn default_stage_secs(&self) -> f64;
    /// The lines of the PGO training lab's `[[target]]` that name the instrumented build:
    /// its engine and `bin` directory by default.
    fn training_target(&self, bin: &Path, _library: Option<&Path>) -> String {
        format!("engine = \"{}\"\nbin = \"{}\"", self.name(), bin.display())
    }
}

impl fmt::Debug for dyn Recipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn Recipe {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// The first file called `name` under `dir`, at most `depth` levels down (breadth first).
pub fn find_file(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..=depth {
        let mut next = Vec::new();
        for d in &level {
            let candidate = d.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    next.push(e.path());
                }
            }
        }
        next.sort();
        level = next;
    }
    None
}

/// The steps of `recipe` for the tree `src` with `cflags` and `ldflags`, the entry `/c/e`, two
/// jobs and `gcc`, for the recipes' tests.
#[cfg(test)]
pub fn test_steps(recipe: &dyn Recipe, src: &Path, cflags: &str, ldflags: &str) -> Vec<BuildStep> {
    recipe.steps(&BuildInputs {
        src,
        entry: Path::new("/c/e"),
        cflags,
        ldflags,
        jobs: 2,
        compiler: "gcc",
    })
}

/// Each step's [`BuildStep::command_line`].
#[cfg(test)]
pub fn command_lines(steps: &[BuildStep]) -> Vec<String> {
    steps.iter().map(BuildStep::command_line).collect()
}

#[cfg(test)]
mod tests {
    use crate::engine::{lab_recipe, recipe, recipe_names};

    #[test]
    fn recipes_are_found_by_name_or_alias_and_a_lab_refuses_a_stand_in() {
        assert_eq!(recipe_names(), ["sqlite", "postgres", "mariadb", "mysql"]);
        for (name, id) in [
            ("sqlite", "sqlite"),
            ("postgres", "postgres"),
            ("postgresql", "postgres"),
            ("mariadb", "mariadb"),
            ("mysql", "mysql"),
        ] {
            assert_eq!(recipe(name).map(|r| r.name()), Some(id), "{name}");
        }
        assert!(recipe("oracle").is_none());
        assert_eq!(lab_recipe("postgresql").map(|r| r.name()), Some("postgres"));
        assert_eq!(lab_recipe("mariadb").map(|r| r.name()), Some("mariadb"));
        assert_eq!(lab_recipe("mysql").map(|r| r.name()), Some("mysql"));
    }
}
