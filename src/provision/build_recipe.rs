//! How each engine is configured, compiled and installed from an unpacked source tree, with
//! given flags, every command's output appended to the entry's `build.log`.
//!
//! Owns the per-engine commands: PostgreSQL (`configure`, `make`, `make install`; no readline,
//! zlib, ICU or LLVM, so only a compiler and make are needed), SQLite (the amalgamation
//! `sqlite3.c`, generated with `make sqlite3.c` from a full source tree when missing, compiled
//! into `lib/libsqlite3.so`), MariaDB (CMake, `Release`, the optional storage engines off); the
//! compiler's version; the `.text` size of the main binary. A failing command becomes a
//! [`BuildFailed`] carrying the log's last lines (for `configure`, `config.log`'s, where the
//! compiler's own message is).
//! Must not: choose flags or know about the cache key (`build`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use super::build_spec::{BuildEngine, BuildFailed, Flags};

/// Lines of the log a failure carries.
const TAIL_LINES: usize = 15;
/// SQLite's compile-time options of every built library (the variants differ only in flags).
const SQLITE_DEFINES: &[&str] = &["-DSQLITE_THREADSAFE=1", "-DHAVE_USLEEP=1"];

/// One build: its private tree and the cache entry it installs into.
pub struct Recipe {
    engine: BuildEngine,
    /// The unpacked source.
    pub src: PathBuf,
    entry: PathBuf,
    pub log: PathBuf,
}

impl Recipe {
    pub fn new(engine: BuildEngine, work: &Path, entry: &Path) -> Recipe {
        Recipe {
            engine,
            src: work.join("src"),
            entry: entry.to_path_buf(),
            log: entry.join("build.log"),
        }
    }

    /// Configure, compile and install with `flags`.
    pub fn compile(&self, flags: &Flags, say: &dyn Fn(&str)) -> Result<()> {
        std::fs::create_dir_all(&self.entry)?;
        match self.engine {
            BuildEngine::Postgres => self.postgres(flags, say),
            BuildEngine::Sqlite => self.sqlite(flags, say),
            BuildEngine::Mariadb => self.mariadb(flags, say),
        }
    }

    /// The binary whose text size reports show.
    pub fn main_binary(&self) -> PathBuf {
        main_binary(self.engine, &self.entry)
    }

    fn postgres(&self, flags: &Flags, say: &dyn Fn(&str)) -> Result<()> {
        let prefix = self.entry.join("install");
        say("  configure");
        let mut c = Command::new("./configure");
        c.arg(format!("--prefix={}", prefix.display()))
            .args([
                "--without-readline",
                "--without-zlib",
                "--without-icu",
                "--without-llvm",
            ])
            .arg(format!("CFLAGS={}", flags.cflags))
            .arg(format!("LDFLAGS={}", flags.ldflags));
        lto_tools(&mut c, flags);
        self.run(c, "configure", Some("config.log"))?;
        // libpq's build refuses a library that references exit(), which an instrumented
        // build's profiling runtime does; PostgreSQL skips that check for coverage builds.
        let instrumented = flags.cflags.contains("-fprofile-generate");
        let coverage = instrumented.then_some("enable_coverage=yes");
        say(&format!("  make -j{}", jobs()));
        let mut m = Command::new("make");
        m.arg(format!("-j{}", jobs())).args(coverage);
        self.run(m, "make", None)?;
        say("  make install");
        let mut i = Command::new("make");
        i.arg("install").args(coverage);
        self.run(i, "make install", None)
    }

    fn sqlite(&self, flags: &Flags, say: &dyn Fn(&str)) -> Result<()> {
        let amalgamation = match find_file(&self.src, "sqlite3.c", 3) {
            Some(f) => f,
            None => {
                say("  generating the amalgamation (configure; make sqlite3.c)");
                self.run(Command::new("./configure"), "configure", Some("config.log"))?;
                let mut m = Command::new("make");
                m.arg("sqlite3.c");
                self.run(m, "make sqlite3.c", None)?;
                self.src.join("sqlite3.c")
            }
        };
        let dir = amalgamation.parent().unwrap_or(&self.src).to_path_buf();
        let lib = self.entry.join("lib");
        std::fs::create_dir_all(&lib)?;
        say("  compile sqlite3.c");
        let mut cc = Command::new(compiler());
        cc.args(flags.cflags.split_whitespace())
            .args(["-fPIC", "-c", "sqlite3.c", "-o", "sqlite3.o"])
            .args(SQLITE_DEFINES)
            .current_dir(&dir);
        self.run(cc, "compile sqlite3.c", None)?;
        say("  link libsqlite3.so");
        let mut ld = Command::new(compiler());
        ld.args(flags.cflags.split_whitespace())
            .args(["-shared", "-o"])
            .arg(lib.join("libsqlite3.so"))
            .arg("sqlite3.o")
            .args(flags.ldflags.split_whitespace())
            .args(["-lpthread", "-lm", "-ldl"])
            .current_dir(&dir);
        self.run(ld, "link libsqlite3.so", None)
    }

    fn mariadb(&self, flags: &Flags, say: &dyn Fn(&str)) -> Result<()> {
        let build = self.src.join("_build");
        let release = format!("{} -DNDEBUG", flags.cflags);
        say("  cmake");
        let mut c = Command::new("cmake");
        c.arg("-S").arg(&self.src).arg("-B").arg(&build);
        c.arg("-DCMAKE_BUILD_TYPE=Release")
            .arg(format!("-DCMAKE_C_FLAGS_RELEASE={release}"))
            .arg(format!("-DCMAKE_CXX_FLAGS_RELEASE={release}"))
            .arg(format!("-DCMAKE_EXE_LINKER_FLAGS={}", flags.ldflags))
            .arg(format!("-DCMAKE_SHARED_LINKER_FLAGS={}", flags.ldflags))
            .arg(format!(
                "-DCMAKE_INSTALL_PREFIX={}",
                self.entry.join("install").display()
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
        if flags.cflags.contains("-flto") {
            c.args([
                "-DCMAKE_AR=/usr/bin/gcc-ar",
                "-DCMAKE_RANLIB=/usr/bin/gcc-ranlib",
            ]);
        }
        self.run(c, "cmake", None)?;
        say(&format!("  cmake --build -j{}", jobs()));
        let mut b = Command::new("cmake");
        b.arg("--build").arg(&build).arg(format!("-j{}", jobs()));
        self.run(b, "cmake --build", None)?;
        say("  cmake --install");
        let mut i = Command::new("cmake");
        i.arg("--install").arg(&build);
        self.run(i, "cmake --install", None)
    }

    /// Run one command in the source tree (unless it set its own directory), its output
    /// appended to the log. `extra_log`: a file of the tree whose end is appended on failure.
    fn run(&self, mut cmd: Command, stage: &str, extra_log: Option<&str>) -> Result<()> {
        let out = File::options().create(true).append(true).open(&self.log)?;
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&self.src);
        }
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let status = cmd
            .status()
            .with_context(|| format!("{stage}: cannot start {:?}", cmd.get_program()))?;
        if status.success() {
            return Ok(());
        }
        if let Some(name) = extra_log {
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
            what: format!("{} ({status})", self.engine.id()),
            stage: stage.to_string(),
            tail: tail(&self.log, TAIL_LINES),
            log: self.log.clone(),
        }
        .into())
    }
}

/// `gcc-ar`/`gcc-ranlib` for archives of LTO objects.
fn lto_tools(cmd: &mut Command, flags: &Flags) {
    if flags.cflags.contains("-flto") {
        cmd.env("AR", "gcc-ar")
            .env("RANLIB", "gcc-ranlib")
            .env("NM", "gcc-nm");
    }
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
pub fn compiler_version(_engine: BuildEngine) -> Result<String> {
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

/// Where an entry's binaries are: the `bin` directory, and SQLite's library.
pub fn installed(engine: BuildEngine, entry: &Path) -> (PathBuf, Option<PathBuf>) {
    match engine {
        BuildEngine::Sqlite => (
            entry.join("lib"),
            Some(entry.join("lib").join("libsqlite3.so")),
        ),
        _ => (entry.join("install").join("bin"), None),
    }
}

fn main_binary(engine: BuildEngine, entry: &Path) -> PathBuf {
    let (bin, library) = installed(engine, entry);
    match engine {
        BuildEngine::Sqlite => library.unwrap_or(bin),
        BuildEngine::Postgres => bin.join("postgres"),
        BuildEngine::Mariadb => ["mariadbd", "mysqld"]
            .iter()
            .map(|n| bin.join(n))
            .find(|p| p.exists())
            .unwrap_or_else(|| bin.join("mariadbd")),
    }
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

/// The last `n` lines of a text file.
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
    fn text_size_of_an_elf_file_and_none_for_others() {
        let exe = std::env::current_exe().unwrap();
        let size = text_bytes(&exe).expect("the test binary is ELF");
        assert!(size > 100_000, "{size}");
        assert!(size < std::fs::metadata(&exe).unwrap().len());
        assert_eq!(text_bytes(Path::new("Cargo.toml")), None);
    }
}
