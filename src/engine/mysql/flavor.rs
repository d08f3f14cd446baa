//! What differs between MySQL and MariaDB versions, in one table, and the config file built
//! from it.
//!
//! Owns: finding a build's programs and bundled libraries (`Binaries`), reading its version
//! (`mysqld --version`), the [`FLAVORS`] table (per version: how the data directory is
//! initialised, the `[mysqld]` lines that version needs on top of dbdelta's defaults, how root
//! logs in, whether MyRocks exists), the storage engine's needs ([`Storage`]), and rendering
//! `dbdelta.cnf`: dbdelta's defaults (equal for every version), the build's paths, the
//! version's lines, the storage engine's lines, the target's settings, then a `[dbdelta]`
//! group the server never reads that records what dbdelta does around it (initialisation,
//! environment, table DDL), so the report's config differences show all of it.
//! Must not: start processes other than `--version`, or speak SQL (`mysql.rs` does).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::engine::TableDdl;

/// dbdelta's defaults for every MySQL and MariaDB version, written before everything else
/// (later lines win), each with why. Everything else is the server's compiled-in default,
/// recorded with the results.
pub const DEFAULTS: &[(&str, &str)] = &[
    ("skip-name-resolve", "no DNS lookups on connect"),
    (
        "performance_schema = OFF",
        "instrumentation costs CPU per statement: measure the engine, not the profiler",
    ),
    (
        "innodb_buffer_pool_size = 128M",
        "sized for the suite's default scale on small machines; targets set their own",
    ),
    (
        "max_connections = 1000",
        "client sweeps go beyond the default 151 connections",
    ),
    (
        "skip-ssl",
        "clients use the unix socket; TLS setup cost MariaDB 11.4 2-11 s per start",
    ),
    (
        "local_infile = ON",
        "the load uses LOAD DATA LOCAL INFILE everywhere; MySQL 8.0 defaults to OFF",
    ),
    (
        "character-set-server = latin1",
        "every version stores the same bytes; MySQL 8.0 defaults to utf8mb4",
    ),
    ("collation-server = latin1_swedish_ci", "as above"),
];

/// How a data directory is initialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// Copy the package's initialised data directory (`<basedir>/data/mysql`): MySQL 5.6 has no
    /// `--initialize`; a 5.6 build without one runs its `mysql_install_db`.
    Template,
    /// `mysqld --initialize-insecure`: root without a password (MySQL 5.7 and later).
    InitializeInsecure,
    /// `mariadb-install-db` or `mysql_install_db`, with these arguments.
    InstallDb(&'static [&'static str]),
}

/// One row of the per-version table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    pub name: &'static str,
    pub mariadb: bool,
    /// The first version this row covers; a build takes the last row of its family at or
    /// below its version (the first row when it is older than all of them).
    pub since: (u64, u64, u64),
    pub init: Init,
    /// `[mysqld]` lines this version needs on top of [`DEFAULTS`], each with why.
    pub lines: &'static [(&'static str, &'static str)],
    /// Lines of [`DEFAULTS`] this version no longer accepts (its `lines` say what replaces
    /// them).
    pub drops: &'static [&'static str],
    /// How `root` logs in (with the server's random password; `mywire` speaks both).
    pub auth: &'static str,
    /// The `--init-file` statements that leave `root@localhost` the only account that can log
    /// in, with the password `{password}` ([`secure_sql`]): they run before the server
    /// accepts its first connection.
    pub secure: &'static [&'static str],
    /// Whether the family has MyRocks (`ha_rocksdb.so`) at all.
    pub myrocks: bool,
}

/// Securing a data directory whose grant tables are plain tables (MySQL 5.6's template and
/// MariaDB before 10.4 hold anonymous users and `root` at other hosts, all without a password).
const SECURE_TABLES: &[&str] = &[
    "DELETE FROM mysql.user WHERE User = '' OR (User = 'root' AND Host <> 'localhost');",
    "DELETE FROM mysql.db WHERE User = '';",
    "DELETE FROM mysql.proxies_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');",
    "FLUSH PRIVILEGES;",
    "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('{password}');",
];
/// MySQL 5.7 and later: `--initialize-insecure` creates `root@localhost` alone (and locked
/// system accounts).
const SECURE_ALTER: &[&str] = &["ALTER USER 'root'@'localhost' IDENTIFIED BY '{password}';"];
/// MariaDB 10.4 and later: accounts live in `mysql.global_priv`; `root@localhost` may also
/// allow `unix_socket`, which the password replaces.
const SECURE_GLOBAL_PRIV: &[&str] = &[
    "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');",
    "DELETE FROM mysql.db WHERE User = '';",
    "DELETE FROM mysql.proxies_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');",
    "FLUSH PRIVILEGES;",
    "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('{password}');",
];

const MARIADB_INSTALL_10_2: &[&str] = &["--auth-root-authentication-method=normal"];
const MARIADB_INSTALL_10_5: &[&str] =
    &["--auth-root-authentication-method=normal", "--skip-test-db"];

/// The differences between versions, in one place.
pub const FLAVORS: &[Flavor] = &[
    Flavor {
        name: "MySQL 5.6",
        mariadb: false,
        since: (5, 6, 0),
        init: Init::Template,
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_TABLES,
        myrocks: false,
    },
    Flavor {
        name: "MySQL 5.7",
        mariadb: false,
        since: (5, 7, 0),
        init: Init::InitializeInsecure,
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_ALTER,
        myrocks: false,
    },
    Flavor {
        name: "MySQL 8.0",
        mariadb: false,
        since: (8, 0, 0),
        init: Init::InitializeInsecure,
        lines: &[
            (
                "loose-mysqlx = OFF",
                "the X plugin would listen on port 33060 and /tmp/mysqlx.sock, shared by every server (loose: a build without the plugin, e.g. dbdelta's, has no such option)",
            ),
            (
                "skip-log-bin",
                "8.0 turns the binary log on; 5.6, 5.7 and MariaDB have it off",
            ),
            (
                "information_schema_stats_expiry = 0",
                "8.0 caches table sizes for a day; the others report them live",
            ),
        ],
        drops: &[],
        auth: "caching_sha2_password (fast path)",
        secure: SECURE_ALTER,
        myrocks: false,
    },
    // 8.4 (LTS) and 9.x. What `mysqld --verbose --help` of Debian's 9.7.4-2 shows, checked
    // here: no `ssl` option (MySQL 8.4.0's release notes: --ssl and --admin-ssl removed;
    // `tls_version = ''` turns TLS off since 8.0.16), no `innodb_log_file_size` (the redo log
    // is `innodb_redo_log_capacity` since 8.0.30), no `mysql_native_password` plugin
    // (`plugin-dir` has none; 8.4 disabled it, 9.0 removed it: root keeps 8.0's
    // caching_sha2_password), and `mysqlx`, `log-bin` and `information_schema_stats_expiry`
    // as in 8.0. Defaults that changed in 8.4 and are kept as the server's (recorded with the
    // results): innodb_io_capacity 10000, innodb_adaptive_hash_index OFF,
    // innodb_log_buffer_size 64M, innodb_doublewrite_pages 128.
    Flavor {
        name: "MySQL 8.4-9.x",
        mariadb: false,
        since: (8, 4, 0),
        init: Init::InitializeInsecure,
        lines: &[
            (
                "tls_version = ''",
                "no TLS, as skip-ssl does for the others (8.4 removed the ssl option)",
            ),
            (
                "loose-mysqlx = OFF",
                "the X plugin would listen on port 33060 and /tmp/mysqlx.sock, shared by every server (loose: a build without the plugin, e.g. dbdelta's, has no such option)",
            ),
            (
                "skip-log-bin",
                "8.0 and later turn the binary log on; 5.6, 5.7 and MariaDB have it off",
            ),
            (
                "information_schema_stats_expiry = 0",
                "8.0 and later cache table sizes for a day; the others report them live",
            ),
            (
                "secure-file-priv = NULL",
                "no server-side file import or export (loads are LOAD DATA LOCAL); Debian's build defaults to /var/lib/mysql-files and stops when it is missing",
            ),
        ],
        drops: &["skip-ssl"],
        auth: "caching_sha2_password (fast path)",
        secure: SECURE_ALTER,
        myrocks: false,
    },
    Flavor {
        name: "MariaDB 10.1",
        mariadb: true,
        since: (10, 1, 0),
        init: Init::InstallDb(&[]),
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_TABLES,
        myrocks: true,
    },
    Flavor {
        name: "MariaDB 10.2-10.3",
        mariadb: true,
        since: (10, 2, 0),
        init: Init::InstallDb(MARIADB_INSTALL_10_2),
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_TABLES,
        myrocks: true,
    },
    Flavor {
        name: "MariaDB 10.4",
        mariadb: true,
        since: (10, 4, 0),
        init: Init::InstallDb(MARIADB_INSTALL_10_2),
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_GLOBAL_PRIV,
        myrocks: true,
    },
    Flavor {
        name: "MariaDB 10.5+",
        mariadb: true,
        since: (10, 5, 0),
        init: Init::InstallDb(MARIADB_INSTALL_10_5),
        lines: &[],
        drops: &[],
        auth: "mysql_native_password",
        secure: SECURE_GLOBAL_PRIV,
        myrocks: true,
    },
];

impl Flavor {
    /// The `--init-file` text that secures a fresh data directory with `password` (which must
    /// need no quoting: [`crate::engine::common::secret::new_password`]'s do not).
    pub fn secure_sql(&self, password: &str) -> String {
        debug_assert!(password.chars().all(|c| c.is_ascii_alphanumeric()));
        let mut out = String::new();
        for line in self.secure {
            out.push_str(&line.replace("{password}", password));
            out.push('\n');
        }
        out
    }

    /// [`DEFAULTS`] without the lines this version no longer accepts, with their title.
    fn defaults(&self) -> (String, Vec<(&'static str, &'static str)>) {
        let lines = DEFAULTS
            .iter()
            .filter(|(line, _)| !self.drops.contains(line))
            .copied()
            .collect();
        let title = match self.drops {
            [] => "dbdelta's defaults (every version)".to_string(),
            drops => format!(
                "dbdelta's defaults (every version; {} has no {})",
                self.name,
                drops.join(", ")
            ),
        };
        (title, lines)
    }

    /// The row for a build of `version` (MariaDB or not).
    pub fn of(mariadb: bool, version: (u64, u64, u64)) -> &'static Flavor {
        let family: Vec<&'static Flavor> =
            FLAVORS.iter().filter(|f| f.mariadb == mariadb).collect();
        family
            .iter()
            .rev()
            .find(|f| f.since <= version)
            .or(family.first())
            .expect("each family has a row")
    }
}

/// The storage engine of a target's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    InnoDb,
    RocksDb,
}

impl Storage {
    pub fn of(ddl: &TableDdl) -> Storage {
        if ddl.rocksdb() {
            Storage::RocksDb
        } else {
            Storage::InnoDb
        }
    }

    /// `[mysqld]` lines the storage engine needs.
    fn lines(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Storage::InnoDb => &[],
            Storage::RocksDb => &[(
                "plugin-load-add = ha_rocksdb.so",
                "storage_engine = \"rocksdb\": load MyRocks",
            )],
        }
    }
}

/// The programs and directories of one build.
#[derive(Debug, Clone, PartialEq)]
pub struct Binaries {
    pub server: PathBuf,
    /// `mariadb-install-db`/`mysql_install_db`, when the build has one.
    pub install: Option<PathBuf>,
    /// The installation root (`basedir`) of a `bin` build.
    pub basedir: Option<PathBuf>,
    /// A directory of libraries the build bundles (`libaio.so.1`), put on `LD_LIBRARY_PATH`.
    pub libs: Option<PathBuf>,
}

const SERVER_NAMES: &[&str] = &["mariadbd", "mysqld"];
const INSTALL_NAMES: &[&str] = &["mariadb-install-db", "mysql_install_db"];
const DEBIAN_SERVER: &str = "/usr/sbin/mariadbd";
const DEBIAN_INSTALL: &str = "/usr/bin/mariadb-install-db";
/// Where Debian's MariaDB keeps its plugins (`mariadb-plugin-rocksdb` installs there).
const DEBIAN_PLUGIN_DIR: &str = "/usr/lib/mysql/plugin";
/// A library some builds bundle because the host may lack it.
const BUNDLED_LIBAIO: &str = "libaio.so.1";

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn first_file(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

/// Find a target's programs: in `bin` (basedir: `bin` itself when it holds `share/`, else its
/// parent; install-db also in `<basedir>/scripts` and `<basedir>/bin`, then `PATH`), or without `bin` Debian's
/// MariaDB, then `PATH`.
pub fn find_binaries(bin: Option<&Path>) -> Result<Binaries> {
    let Some(bin) = bin else {
        let server = Some(PathBuf::from(DEBIAN_SERVER))
            .filter(|p| p.is_file())
            .or_else(|| SERVER_NAMES.iter().find_map(|n| on_path(n)))
            .with_context(|| {
                format!(
                    "no MySQL/MariaDB server found: looked for {DEBIAN_SERVER} and for {} on PATH; \
                     install mariadb-server or set the target's `bin`",
                    SERVER_NAMES.join("/")
                )
            })?;
        let install = Some(PathBuf::from(DEBIAN_INSTALL))
            .filter(|p| p.is_file())
            .or_else(|| INSTALL_NAMES.iter().find_map(|n| on_path(n)));
        return Ok(Binaries {
            server,
            install,
            basedir: None,
            libs: None,
        });
    };
    let server = first_file(&[bin.to_path_buf()], SERVER_NAMES).with_context(|| {
        format!(
            "bin directory {} holds no MySQL/MariaDB server: looked for {}",
            bin.display(),
            SERVER_NAMES.join(" and ")
        )
    })?;
    let basedir = if bin.join("share").is_dir() {
        Some(bin.to_path_buf())
    } else {
        bin.parent().map(Path::to_path_buf)
    };
    let mut dirs = vec![bin.to_path_buf()];
    if let Some(base) = &basedir {
        // `bin/` beside a `sbin/` server: Debian's layout (fetched from a Debian suite).
        dirs.extend([base.join("scripts"), base.join("bin")]);
    }
    let install =
        first_file(&dirs, INSTALL_NAMES).or_else(|| INSTALL_NAMES.iter().find_map(|n| on_path(n)));
    let mut lib_dirs = vec![bin.to_path_buf()];
    if let Some(base) = &basedir {
        lib_dirs.extend([base.join("libs"), base.join("lib")]);
    }
    let libs = lib_dirs
        .into_iter()
        .find(|d| d.join(BUNDLED_LIBAIO).is_file());
    Ok(Binaries {
        server,
        install,
        basedir,
        libs,
    })
}

impl Binaries {
    /// The server's environment: the target's, with a bundled library directory first on
    /// `LD_LIBRARY_PATH`.
    pub fn env(
        &self,
        target: &std::collections::BTreeMap<String, String>,
    ) -> std::collections::BTreeMap<String, String> {
        let mut env = target.clone();
        if let Some(libs) = &self.libs {
            let mut path = libs.display().to_string();
            if let Some(rest) = env.get("LD_LIBRARY_PATH").filter(|r| !r.is_empty()) {
                path = format!("{path}:{rest}");
            }
            env.insert("LD_LIBRARY_PATH".into(), path);
        }
        env
    }

    /// `<basedir>/share` when it holds the English messages.
    pub fn messages(&self) -> Option<PathBuf> {
        self.basedir
            .as_ref()
            .map(|b| b.join("share"))
            .filter(|s| s.join("english").is_dir())
    }

    /// Where the server looks for plugins.
    fn plugin_dirs(&self) -> Vec<PathBuf> {
        match &self.basedir {
            Some(b) => vec![b.join("lib").join("plugin"), b.join("lib/mysql/plugin")],
            None => vec![PathBuf::from(DEBIAN_PLUGIN_DIR)],
        }
    }
}

/// A build: its programs, version and flavor.
#[derive(Debug, Clone)]
pub struct Build {
    pub bins: Binaries,
    /// `8.0.31`, `10.11.19-MariaDB-0+deb12u1`: what `--version` said.
    pub version: String,
    pub flavor: &'static Flavor,
}

/// `mysqld  Ver 8.0.31 for Linux on x86_64 (...)` → (`8.0.31`, MariaDB?, (8, 0, 31)).
pub fn parse_version(text: &str) -> Option<(String, bool, (u64, u64, u64))> {
    let ver = text.split_whitespace().skip_while(|w| *w != "Ver").nth(1)?;
    let mut nums = ver
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u64>());
    let triple = (nums.next()?.ok()?, nums.next()?.ok()?, nums.next()?.ok()?);
    Some((ver.to_string(), text.contains("MariaDB"), triple))
}

impl Build {
    /// Ask the server for its version and pick its flavor.
    pub fn probe(
        bins: Binaries,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Build> {
        let out = Command::new(&bins.server)
            .arg("--version")
            .envs(env)
            .output()
            .with_context(|| format!("running {} --version", bins.server.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let Some((version, mariadb, triple)) = parse_version(&text) else {
            bail!(
                "{} --version said {:?}{}; is it a MySQL or MariaDB server?",
                bins.server.display(),
                text.trim(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            );
        };
        Ok(Build {
            flavor: Flavor::of(mariadb, triple),
            bins,
            version,
        })
    }

    /// Fail clearly when `storage` cannot run on this build.
    pub fn check_storage(&self, storage: Storage) -> Result<()> {
        if storage != Storage::RocksDb {
            return Ok(());
        }
        let server = self.bins.server.display();
        if !self.flavor.myrocks {
            bail!(
                "storage_engine = \"rocksdb\": {} ({server}) has no MyRocks; use a MariaDB target (Debian's, with mariadb-plugin-rocksdb)",
                self.flavor.name
            );
        }
        let dirs = self.bins.plugin_dirs();
        if dirs.iter().any(|d| d.join("ha_rocksdb.so").is_file()) {
            return Ok(());
        }
        let looked = dirs
            .iter()
            .map(|d| d.join("ha_rocksdb.so").display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        if self.bins.basedir.is_none() {
            bail!(
                "storage_engine = \"rocksdb\": Debian's MariaDB has no RocksDB plugin ({looked} is missing); apt-get install mariadb-plugin-rocksdb"
            );
        }
        bail!(
            "storage_engine = \"rocksdb\": the build {server} has no RocksDB plugin (looked for {looked}); fetched MariaDB builds ship no plugins: use Debian's MariaDB (no bin or version) with mariadb-plugin-rocksdb"
        )
    }

    /// How the data directory is initialised, as recorded (`[dbdelta] init = ...`).
    pub fn init_text(&self) -> String {
        let install = || {
            self.bins
                .install
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "mysql_install_db".into())
        };
        match self.flavor.init {
            Init::Template if self.template().is_some() => "copy <basedir>/data/mysql".into(),
            Init::Template => install(),
            Init::InitializeInsecure => "mysqld --initialize-insecure".into(),
            Init::InstallDb(args) => {
                let mut s = install();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
        }
    }

    /// The package's initialised data directory, when the build has one.
    pub fn template(&self) -> Option<PathBuf> {
        self.bins
            .basedir
            .as_ref()
            .map(|b| b.join("data").join("mysql"))
            .filter(|d| d.join("mysql").is_dir())
    }
}

/// `dbdelta.cnf` for a target: dbdelta's defaults, the build's paths, the version's lines, the
/// storage engine's, the target's settings (as written, they win), and the `[dbdelta]` record.
/// The build's directory is written as `basedir`; `shown_base` replaces it in the text
/// (`<basedir>` in the recorded copy).
pub fn render_config(
    build: &Build,
    storage: Storage,
    ddl: &TableDdl,
    settings: &[String],
    shown_base: Option<&str>,
) -> String {
    let base_text = |p: &Path| {
        let real = p.display().to_string();
        let base = build.bins.basedir.as_ref().map(|b| b.display().to_string());
        match (shown_base, base) {
            (Some(shown), Some(base)) => real.replacen(&base, shown, 1),
            _ => real,
        }
    };
    let mut out = format!(
        "# Written by dbdelta for {} {} ({}): dbdelta's defaults, this version's lines, then the\n\
         # target's settings (later lines win). [dbdelta] is read by dbdelta, not by the server.\n\
         [mysqld]\n",
        if build.flavor.mariadb {
            "MariaDB"
        } else {
            "MySQL"
        },
        build.version,
        build.flavor.name
    );
    let section = |out: &mut String, title: &str, lines: &[(&str, &str)]| {
        if lines.is_empty() {
            return;
        }
        let _ = writeln!(out, "# {title}");
        for (line, why) in lines {
            let _ = writeln!(out, "# {why}\n{line}");
        }
    };
    let (title, defaults) = build.flavor.defaults();
    section(&mut out, &title, &defaults);
    if let Some(base) = &build.bins.basedir {
        let _ = writeln!(out, "# this build\nbasedir = {}", base_text(base));
        if let Some(dir) = build.bins.messages() {
            let _ = writeln!(out, "lc-messages-dir = {}", base_text(&dir));
        }
    }
    section(&mut out, build.flavor.name, build.flavor.lines);
    section(&mut out, "storage engine", storage.lines());
    out.push_str("# target settings\n");
    for line in settings {
        out.push_str(line.trim());
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "[dbdelta]\ninit = {}\nauth = {}",
        build.init_text(),
        build.flavor.auth
    );
    if let Some(libs) = &build.bins.libs {
        let _ = writeln!(out, "env = LD_LIBRARY_PATH={}", base_text(libs));
    }
    let mut tables = Vec::new();
    if let Some(e) = &ddl.engine {
        tables.push(format!("ENGINE={e}"));
    }
    tables.extend(ddl.table_options.iter().cloned());
    if !tables.is_empty() {
        let _ = writeln!(out, "table-options = {}", tables.join(" "));
    }
    if let Some(i) = &ddl.index_options {
        let _ = writeln!(out, "index-options = {i}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_their_row() {
        let name = |m, v| Flavor::of(m, v).name;
        assert_eq!(name(false, (5, 6, 24)), "MySQL 5.6");
        assert_eq!(name(false, (5, 7, 22)), "MySQL 5.7");
        assert_eq!(name(false, (8, 0, 12)), "MySQL 8.0");
        assert_eq!(name(false, (8, 3, 0)), "MySQL 8.0");
        assert_eq!(name(false, (9, 7, 4)), "MySQL 8.4-9.x");
        assert_eq!(name(false, (5, 5, 9)), "MySQL 5.6");
        assert_eq!(name(true, (10, 2, 11)), "MariaDB 10.2-10.3");
        assert_eq!(name(true, (10, 4, 1)), "MariaDB 10.4");
        // The grant tables became `mysql.global_priv` in 10.4: securing them changes there.
        assert!(
            Flavor::of(true, (10, 3, 9))
                .secure_sql("pw")
                .contains("mysql.user")
        );
        assert!(
            Flavor::of(true, (10, 4, 1))
                .secure_sql("pw")
                .contains("global_priv")
        );
        assert!(
            Flavor::of(false, (8, 0, 31))
                .secure_sql("pw")
                .contains("BY 'pw'")
        );
        assert_eq!(name(true, (10, 11, 19)), "MariaDB 10.5+");
        assert_eq!(name(true, (11, 4, 5)), "MariaDB 10.5+");
        assert_eq!(Flavor::of(false, (8, 0, 31)).init, Init::InitializeInsecure);
    }

    #[test]
    fn version_lines_parse() {
        assert_eq!(
            parse_version(
                "/x/mysqld  Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)"
            ),
            Some(("8.0.31".into(), false, (8, 0, 31)))
        );
        assert_eq!(
            parse_version(
                "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu"
            ),
            Some(("10.11.19-MariaDB-0+deb12u1".into(), true, (10, 11, 19)))
        );
        assert_eq!(parse_version("mysqld: unknown option"), None);
    }

    fn build(flavor: &'static Flavor, basedir: Option<&str>) -> Build {
        Build {
            bins: Binaries {
                server: PathBuf::from("/b/bin/mysqld"),
                install: None,
                basedir: basedir.map(PathBuf::from),
                libs: basedir.map(|b| PathBuf::from(b).join("libs")),
            },
            version: "8.0.31".into(),
            flavor,
        }
    }

    #[test]
    fn config_has_defaults_then_version_lines_then_target_settings() {
        let b = build(Flavor::of(false, (8, 0, 31)), Some("/cache/8.0.31/tree"));
        let ddl = TableDdl {
            engine: None,
            table_options: Some("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8".into()),
            index_options: None,
        };
        let settings = [
            "innodb_buffer_pool_size = 1G".to_string(),
            "  sync_binlog=0 ".into(),
        ];
        let cfg = render_config(&b, Storage::InnoDb, &ddl, &settings, None);
        let lines: Vec<&str> = cfg.lines().collect();
        let pos = |s: &str| {
            lines
                .iter()
                .position(|l| *l == s)
                .unwrap_or_else(|| panic!("{s}: {cfg}"))
        };
        assert!(pos("[mysqld]") < pos("skip-name-resolve"));
        assert!(pos("innodb_buffer_pool_size = 128M") < pos("innodb_buffer_pool_size = 1G"));
        assert!(pos("loose-mysqlx = OFF") < pos("# target settings"));
        assert!(pos("sync_binlog=0") < pos("[dbdelta]"));
        assert!(cfg.contains("basedir = /cache/8.0.31/tree\n"), "{cfg}");
        assert!(cfg.contains("init = mysqld --initialize-insecure\n"));
        assert!(cfg.contains("table-options = ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8\n"));
        let shown = render_config(&b, Storage::InnoDb, &ddl, &settings, Some("<basedir>"));
        assert!(shown.contains("basedir = <basedir>\n"), "{shown}");
        assert!(
            shown.contains("env = LD_LIBRARY_PATH=<basedir>/libs\n"),
            "{shown}"
        );

        // MariaDB with MyRocks: the plugin line, no MySQL 8.0 lines.
        let m = build(Flavor::of(true, (10, 11, 19)), None);
        let rocks = TableDdl {
            engine: Some("ROCKSDB".into()),
            ..TableDdl::default()
        };
        let cfg = render_config(&m, Storage::RocksDb, &rocks, &[], None);
        assert!(cfg.contains("plugin-load-add = ha_rocksdb.so"), "{cfg}");
        assert!(!cfg.contains("mysqlx") && !cfg.contains("basedir"), "{cfg}");
        assert!(cfg.contains("table-options = ENGINE=ROCKSDB\n"), "{cfg}");
    }

    #[test]
    fn mysql_9_drops_skip_ssl_and_turns_tls_off_its_own_way() {
        let b = build(Flavor::of(false, (9, 7, 4)), None);
        let cfg = render_config(&b, Storage::InnoDb, &TableDdl::default(), &[], None);
        let lines: Vec<&str> = cfg.lines().collect();
        // mysqld 9.7 refuses to start on an unknown option: skip-ssl must be gone.
        assert!(!lines.contains(&"skip-ssl"), "{cfg}");
        for line in [
            "tls_version = ''",
            "secure-file-priv = NULL",
            "skip-log-bin",
        ] {
            assert!(lines.contains(&line), "{line}: {cfg}");
        }
        assert!(cfg.contains("MySQL 8.4-9.x has no skip-ssl"), "{cfg}");
        // 8.0 keeps every default.
        let b = build(Flavor::of(false, (8, 0, 31)), None);
        let cfg = render_config(&b, Storage::InnoDb, &TableDdl::default(), &[], None);
        assert!(cfg.lines().any(|l| l == "skip-ssl") && !cfg.contains("tls_version"));
    }

    #[test]
    fn debian_layout_finds_install_db_in_usr_bin() {
        // A Debian root: the server in usr/sbin, mariadb-install-db in usr/bin.
        let dir = tempfile::tempdir().unwrap();
        let usr = dir.path().join("usr");
        std::fs::create_dir_all(usr.join("sbin")).unwrap();
        std::fs::create_dir_all(usr.join("bin")).unwrap();
        std::fs::write(usr.join("sbin/mariadbd"), "").unwrap();
        std::fs::write(usr.join("bin/mariadb-install-db"), "").unwrap();
        let b = find_binaries(Some(&usr.join("sbin"))).unwrap();
        assert_eq!(b.basedir.as_deref(), Some(usr.as_path()));
        assert_eq!(b.install, Some(usr.join("bin/mariadb-install-db")));
    }

    #[test]
    fn a_bin_dir_without_a_server_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_binaries(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(err.contains("mariadbd") && err.contains("mysqld"), "{err}");
    }

    #[test]
    fn bundled_libaio_goes_on_the_library_path() {
        let dir = tempfile::tempdir().unwrap();
        let server = dir.path().join("server");
        std::fs::create_dir_all(server.join("share")).unwrap();
        std::fs::write(server.join("mysqld"), "").unwrap();
        std::fs::write(server.join(BUNDLED_LIBAIO), "").unwrap();
        let b = find_binaries(Some(&server)).unwrap();
        assert_eq!(b.basedir.as_deref(), Some(server.as_path()));
        assert_eq!(b.libs.as_deref(), Some(server.as_path()));
        let mut env = std::collections::BTreeMap::new();
        env.insert("LD_LIBRARY_PATH".to_string(), "/mine".to_string());
        assert_eq!(
            b.env(&env)["LD_LIBRARY_PATH"],
            format!("{}:/mine", server.display())
        );
    }
}
