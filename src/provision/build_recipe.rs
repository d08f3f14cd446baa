//! How a family's recipe is run: its [`BuildStep`]s in order in the unpacked source tree, with
//! the flags of one compile, every command's output appended to the entry's `build.log`.
//!
//! Owns running the steps (each one's progress line, directory and environment); the
//! compiler's version; the `.text` size of the main binary; the profile directory of an
//! instrumented build. A failing command becomes a [`BuildFailed`] carrying the log's last
//! lines (and, when the step names one, the end of the failed check in a file of the tree such
//! as `config.log`, where the compiler's own message is).
//! Must not: name an engine or hold any engine's commands (the families' recipes do, in
//! `crate::engine`), choose flags or know about the cache key (`build`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::build_spec::{BuildFailed, Flags};
use crate::engine::common::process::Listed;
use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};

/// Lines of the log a failure carries.
const TAIL_LINES: usize = 15;

/// One build: its recipe, its private tree and the cache entry it installs into.
pub struct Builder {
    recipe: &'static dyn Recipe,
    /// The unpacked source.
    pub src: PathBuf,
    entry: PathBuf,
    pub log: PathBuf,
}

impl Builder {
    pub fn new(recipe: &'static dyn Recipe, work: &Path, entry: &Path) -> Builder {
        Builder {
            recipe,
            src: work.join("src"),
            entry: entry.to_path_buf(),
            log: entry.join("build.log"),
        }
    }

    /// Configure, compile and install with `flags`: the recipe's steps for this tree, in order.
    pub fn compile(&self, flags: &Flags, say: &dyn Fn(&str)) -> Result<()> {
        std::fs::create_dir_all(&self.entry)?;
        let compiler = compiler();
        for step in self.recipe.steps(&self.inputs(flags, &compiler)) {
            if let Some(line) = &step.say {
                say(line);
            }
            for dir in &step.make_dirs {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            self.run(&step, say)?;
        }
        Ok(())
    }

    fn inputs<'a>(&'a self, flags: &'a Flags, compiler: &'a str) -> BuildInputs<'a> {
        BuildInputs {
            src: &self.src,
            entry: &self.entry,
            cflags: &flags.cflags,
            ldflags: &flags.ldflags,
            jobs: jobs(),
            compiler,
        }
    }

    /// The binary whose text size reports show.
    pub fn main_binary(&self) -> PathBuf {
        self.recipe.main_binary(&self.entry)
    }

    /// Run one step in its directory (the source tree unless it names one), its output
    /// appended to the log, in a process group of its own (a terminating signal stops it
    /// through [`wait`], leaving the tree to continue from); on failure, the end of its
    /// `extra_log` file too.
    fn run(&self, step: &BuildStep, say: &dyn Fn(&str)) -> Result<()> {
        let out = File::options().create(true).append(true).open(&self.log)?;
        let mut cmd = Command::new(&step.program);
        cmd.args(&step.args)
            .envs(step.env.iter().map(|(k, v)| (k, v)))
            .current_dir(step.dir.as_deref().unwrap_or(&self.src))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let stage = &step.stage;
        let child = Listed::spawn(&mut cmd)
            .with_context(|| format!("{stage}: cannot start {:?}", cmd.get_program()))?;
        let status = wait(child, &self.log, stage, say)?;
        if status.success() {
            return Ok(());
        }
        if let Some(name) = step.extra_log {
            let text = std::fs::read_to_string(self.src.join(name)).unwrap_or_default();
            let note = format!(
                "\n==== the failed check in {name} ====\n{}\n",
                failed_check(&text, TAIL_LINES)
            );
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .open(&self.log)
                .and_then(|mut f| std::io::Write::write_all(&mut f, note.as_bytes()));
        }
        Err(BuildFailed {
            what: format!("{} ({status})", self.recipe.name()),
            stage: stage.to_string(),
            tail: tail(&self.log, TAIL_LINES),
            log: self.log.clone(),
        }
        .into())
    }
}

/// How often a long step's progress is shown.
const PROGRESS_EVERY: Duration = Duration::from_secs(60);
/// How long a stopped step's processes get to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Wait for a step's process, saying every [`PROGRESS_EVERY`] how far it is (the last
/// `[ NN%]` of make or `[N/M]` of ninja in the log, else the time so far). A terminating signal
/// stops its process group and is an error that says the tree is kept.
fn wait(mut child: Listed, log: &Path, stage: &str, say: &dyn Fn(&str)) -> Result<ExitStatus> {
    let started = Instant::now();
    let mut shown = started;
    loop {
        if let Some(status) = child.exited()? {
            return Ok(status);
        }
        if crate::signals::interrupted() {
            child.stop(rustix::process::Signal::TERM, STOP_GRACE);
            bail!(
                "{stage} stopped by {}; the build tree is kept, so the same command continues the build (log: {})",
                crate::signals::first().map_or("a signal", crate::signals::name),
                log.display()
            );
        }
        if shown.elapsed() >= PROGRESS_EVERY {
            shown = Instant::now();
            let so_far = crate::progress::duration(started.elapsed());
            say(&match progress(&crate::sys::log_tail(log, 40)) {
                Some(p) => format!("    {stage}: {p} after {so_far}"),
                None => format!("    {stage}: running for {so_far}"),
            });
        }
        std::thread::sleep(crate::signals::POLL);
    }
}

/// How far a compile is, from the end of its log: make's `[ 45%]` or ninja's `[1234/5678]`
/// (the last one), as `45%`.
fn progress(tail: &str) -> Option<String> {
    tail.lines().rev().find_map(|line| {
        let inner = line
            .trim_start()
            .strip_prefix('[')?
            .split_once(']')?
            .0
            .trim();
        if let Some(pct) = inner.strip_suffix('%') {
            return pct.trim().parse::<u32>().ok().map(|p| format!("{p}%"));
        }
        let (done, all) = inner.split_once('/')?;
        let (done, all) = (done.parse::<f64>().ok()?, all.parse::<f64>().ok()?);
        (all > 0.0).then(|| format!("{:.0}%", 100.0 * done / all))
    })
}

/// The C compiler: `CC`, else `gcc`.
fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "gcc".into())
}

/// Parallel compile jobs: the CPUs dbdelta may use.
fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The compiler's own first line of `--version` (part of the cache key).
pub fn compiler_version() -> Result<String> {
    let cc = compiler();
    let out = Command::new(&cc)
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "cannot run the C compiler `{cc}`; install gcc (apt-get install gcc make) or set CC"
            )
        })?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or(&cc)
        .to_string())
}

/// A directory the instrumented server (running as another user) can write its profile into,
/// emptied of earlier counts.
pub fn open_profile_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))
        .with_context(|| format!("cannot open {} for the profile", dir.display()))?;
    // Counts from the build itself (configure's test programs, tools the build runs) are not
    // training, and files the build wrote as root are ones the server user could not update.
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.path().extension().is_some_and(|e| e == "gcda") {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("cannot clear {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The end of an autoconf `config.log`'s checks: the command of the check that failed and
/// the compiler's message, without the test program (`| ` lines) and before the cache
/// variables and `confdefs.h` that close the file.
fn failed_check(config_log: &str, n: usize) -> String {
    let checks = config_log
        .split("## Cache variables. ##")
        .next()
        .unwrap_or_default();
    let lines: Vec<&str> = checks
        .lines()
        .filter(|l| !l.starts_with("| ") && !l.starts_with("## ") && !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The last `n` lines of a text file.
fn tail(path: &Path, n: usize) -> String {
    crate::sys::log_tail(path, n)
}

/// Size of the `.text` section of an ELF64 little-endian file.
pub fn text_bytes(path: &Path) -> Option<u64> {
    let mut f = File::open(path).ok()?;
    let mut head = [0u8; 64];
    f.read_exact(&mut head).ok()?;
    if &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(&head, 0x28),
        u16_at(&head, 0x3a),
        u16_at(&head, 0x3c),
        u16_at(&head, 0x3e),
    );
    let mut table = vec![0u8; (shentsize * shnum) as usize];
    f.seek(SeekFrom::Start(shoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    let section = |i: u64| &table[(i * shentsize) as usize..((i + 1) * shentsize) as usize];
    let names = section(shstrndx);
    let mut strtab = vec![0u8; u64_at(names, 0x20) as usize];
    f.seek(SeekFrom::Start(u64_at(names, 0x18))).ok()?;
    f.read_exact(&mut strtab).ok()?;
    (0..shnum).map(section).find_map(|s| {
        let name = &strtab[u32_at(s, 0) as usize..];
        name.starts_with(b".text\0").then(|| u64_at(s, 0x20))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configure_failure_shows_the_compilers_message() {
        let log = "configure:4034: gcc -O2 -fno-such-flag   conftest.c  >&5\n\
                   gcc: error: unrecognized command-line option '-fno-such-flag'\n\
                   configure:4038: $? = 1\n\
                   configure: failed program was:\n\
                   | /* confdefs.h */\n\
                   | #define PACKAGE_NAME \"PostgreSQL\"\n\
                   configure:4083: error: C compiler cannot create executables\n\
                   \n## ---------------- ##\n## Cache variables. ##\n## ---------------- ##\n\
                   ac_cv_env_CFLAGS_value='-O2 -fno-such-flag'\n";
        let shown = failed_check(log, 15);
        assert!(shown.contains("unrecognized command-line option '-fno-such-flag'"));
        assert!(
            shown.ends_with("C compiler cannot create executables"),
            "{shown}"
        );
        assert!(
            !shown.contains("confdefs") && !shown.contains("ac_cv_env"),
            "{shown}"
        );
    }

    #[test]
    fn progress_is_the_last_percentage_or_ninjas_count() {
        let make = "[ 44%] Building CXX object sql/a.o\n[ 45%] Building CXX object sql/b.o\nIn file included from x.h:3,\n";
        assert_eq!(progress(make).as_deref(), Some("45%"));
        let ninja = "[120/480] Building CXX object sql/a.o\nwarning: unused\n";
        assert_eq!(progress(ninja).as_deref(), Some("25%"));
        assert_eq!(progress("checking for gcc... gcc\n[note] x\n"), None);
    }

    #[test]
    fn text_size_of_an_elf_file_and_none_for_others() {
        let exe = std::env::current_exe().unwrap();
        let size = text_bytes(&exe).expect("the test binary is ELF");
        assert!(size > 100_000, "{size}");
        assert!(size < std::fs::metadata(&exe).unwrap().len());
        assert_eq!(text_bytes(Path::new("Cargo.toml")), None);
    }
}
