//! MySQL and MariaDB as one engine family of the registry (`crate::engine::families`): its
//! names, what the lab, the preflight and a counting pass need to know of it, its `connect`
//! URL form and its factories. Must not: hold the engine itself (this folder's other files do).

use crate::engine::common::fetchable::Product;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::counter::Attribution;
use crate::engine::common::recipe::Recipe;
use crate::engine::connect::{ConnectUrl, UrlForm};
use crate::engine::{Dialect, Driver, Family, Server, TableDdl, TargetSpec, TcpEndpoint};

/// The registry's entry for `engine = "mysql"` and `"mariadb"`.
pub struct MysqlFamily;

/// `mysql://` and `mariadb://` URLs.
static URL: UrlForm = UrlForm {
    schemes: &["mysql", "mariadb"],
    user: "root",
    port: 3306,
    database: "dbdelta",
    socket_key: "socket",
    socket: "/run/mysqld/mysqld.sock",
};

impl Family for MysqlFamily {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["mariadb"]
    }

    fn title(&self) -> &'static str {
        "MySQL/MariaDB"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn embedded(&self) -> bool {
        false
    }

    /// A thread per connection (MySQL 5.6 to 9.7, MariaDB 10.2 to 11.8), and every
    /// connection's statements go through `dispatch_command`, which no background thread runs.
    fn attribution(&self) -> Attribution {
        Attribution::Threads {
            foreground: &["dispatch_command"],
        }
    }

    /// A consistent snapshot, which InnoDB's purge cannot pass. Purge runs by the clock, and
    /// how far it has got changes what the next writes cost; held back, every pass finds the
    /// rows as the same passes before it left them.
    fn purge_hold(&self) -> Option<&'static str> {
        Some("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    }

    /// Counted under callgrind: 5.6 names no OS thread for a connection, and reading
    /// `performance_schema.threads` for the others is not built yet.
    fn server_tasks(&self) -> bool {
        false
    }

    fn table_options(&self) -> bool {
        true
    }

    /// InnoDB, or MyRocks (`ROCKSDB`), which Oracle MySQL's builds lack.
    fn storage_engine(
        &self,
        written: &str,
        fetched: Option<&'static Product>,
    ) -> Result<&'static str, String> {
        match written.to_ascii_lowercase().as_str() {
            "innodb" => Ok("InnoDB"),
            "rocksdb" if fetched.is_some_and(|p| *p == super::fetch::MYSQL) => Err(
                "Oracle MySQL builds have no MyRocks; use engine = \"mariadb\" (Debian's MariaDB with mariadb-plugin-rocksdb)"
                    .into(),
            ),
            "rocksdb" => Ok("ROCKSDB"),
            other => Err(format!(
                "unknown storage_engine \"{other}\"; use \"innodb\" or \"rocksdb\""
            )),
        }
    }

    fn starters(&self) -> &'static [crate::engine::Starter] {
        STARTERS
    }

    fn products(&self) -> &'static [&'static Product] {
        super::fetch::PRODUCTS
    }

    /// From the stored record alone: a server whose own version line says `MariaDB` is
    /// `mariadb` (the stored engine is the family, `mysql`, for both), and a target whose
    /// tables dbdelta created with `ENGINE=ROCKSDB` (its stored `table-options` line) adds
    /// ` (myrocks)`.
    fn stored_product(&self, server_version: Option<&str>, settings: &str) -> String {
        let mariadb = server_version.is_some_and(|v| v.contains("MariaDB"));
        let product = if mariadb { "mariadb" } else { self.name() };
        let rocksdb = settings.lines().any(|l| {
            let l = l.trim().to_ascii_lowercase().replace(' ', "");
            l.starts_with("table-options=") && l.contains("engine=rocksdb")
        });
        match rocksdb {
            true => format!("{product} (myrocks)"),
            false => product.to_string(),
        }
    }

    /// `mariadb (myrocks)` for MyRocks tables; else the fetched product, the recipe of a
    /// build (`mariadb` or `mysql`), or `mariadb` for Debian's install (MariaDB's
    /// `mariadbd`); `mysql` when none tells (a running server or another host: the report
    /// names it from its version).
    fn product_name(
        &self,
        target: &TargetSpec,
        fetched: Option<&'static str>,
        built: Option<&'static str>,
    ) -> &'static str {
        if target.tables.rocksdb() {
            return "mariadb (myrocks)";
        }
        if let Some(p) = fetched.or(built) {
            return p;
        }
        let server = || super::flavor::find_binaries(target.bin.as_deref());
        let mariadbd = (target.connect.is_none() && target.remote.is_none())
            && server().is_ok_and(|b| {
                (b.server.file_name()).is_some_and(|n| n.to_string_lossy().starts_with("mariadbd"))
            });
        if mariadbd { "mariadb" } else { "mysql" }
    }

    /// InnoDB's clustered index and page fill; MyRocks' compression.
    fn disk_percent(&self, tables: &TableDdl) -> u64 {
        if tables.rocksdb() { 60 } else { 130 }
    }

    /// InnoDB's system tablespace, redo and undo logs (MariaDB 10.11's redo log alone is
    /// 96 MiB).
    fn fixed_bytes(&self) -> u64 {
        200 << 20
    }

    fn check_server(
        &self,
        bin: Option<&Path>,
        env: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let bin = bin.map(std::path::absolute).transpose()?;
        let found = super::flavor::find_binaries(bin.as_deref())?;
        crate::engine::common::process::answers_version(&found.server, &found.env(env))
    }

    fn build_file(&self, target: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
        let bin = target.bin.as_deref().map(std::path::absolute).transpose()?;
        Ok(Some(super::flavor::find_binaries(bin.as_deref())?.server))
    }

    /// MariaDB's (`recipe`); Oracle MySQL has none yet.
    fn recipes(&self) -> &'static [&'static dyn Recipe] {
        super::recipe::RECIPES
    }

    /// The option table of `mysqld --no-defaults --verbose --help`, run with the libraries a
    /// fetched build bundles: every variable it takes at start (not `build_id`, `have_*`,
    /// `version_compile_os`, which `SHOW VARIABLES` lists too).
    fn startup_settings(
        &self,
        target: &TargetSpec,
    ) -> anyhow::Result<Option<std::collections::BTreeSet<String>>> {
        let bin = target.bin.as_deref().map(std::path::absolute).transpose()?;
        let found = super::flavor::find_binaries(bin.as_deref())?;
        let mut cmd = std::process::Command::new(&found.server);
        cmd.args(["--no-defaults", "--verbose", "--help"])
            .envs(found.env(&target.env));
        let names = crate::engine::common::process::names_listed(cmd, help_variables)?;
        Ok(Some(names))
    }

    /// `mysqld --version` needs the libraries a fetched build bundles, as its start does.
    fn provenance(&self, target: &TargetSpec) -> crate::results::BinaryProvenance {
        let bin = target.bin.as_deref().map(std::path::absolute).transpose();
        match bin
            .map_err(anyhow::Error::from)
            .and_then(|b| super::flavor::find_binaries(b.as_deref()))
        {
            Ok(found) => crate::engine::common::provenance::of_program(
                &found.server,
                &found.env(&target.env),
            ),
            Err(e) => crate::results::BinaryProvenance {
                unread: vec![format!("{e:#}")],
                ..Default::default()
            },
        }
    }

    fn start(
        &self,
        target: &TargetSpec,
        data_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        super::MysqlServer::start(target, data_dir, log)
    }

    fn url(&self) -> Option<&'static UrlForm> {
        Some(&URL)
    }

    fn attach(&self, target: &TargetSpec, url: &ConnectUrl) -> anyhow::Result<Box<dyn Server>> {
        super::existing::MyExisting::attach(target, url)
    }

    fn tcp_driver(
        &self,
        url: ConnectUrl,
        prepared: bool,
        tcp: &TcpEndpoint,
    ) -> anyhow::Result<Arc<dyn Driver>> {
        Ok(super::tcp_driver(url, prepared, tcp.backslash_escapes))
    }
}

/// The variable names of `mysqld --verbose --help`'s table (`Variables (--variable-name=value)`,
/// a header, a rule, then one `name  value` line per variable up to a blank line), normalised.
fn help_variables(help: &str) -> BTreeSet<String> {
    let mut lines = help.lines();
    let found = lines
        .by_ref()
        .any(|l| l.starts_with("Variables (--variable-name=value)"));
    let rows = lines
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty());
    match found {
        true => (rows.filter_map(|l| l.split_whitespace().next()))
            .map(|n| n.to_ascii_lowercase().replace('-', "_"))
            .collect(),
        false => BTreeSet::new(),
    }
}

/// `dbdelta init --engine NAME`'s labs of the family.
static STARTERS: &[crate::engine::Starter] = &[
    crate::engine::Starter {
        title: "mysql 8.0: innodb_flush_log_at_trx_commit 1 vs 2",
        engine: "mysql",
        source: "# Oracle MySQL, fetched and cached on first use (dbdelta list versions mysql)\n\
                 version = \"8.0\"\n",
        setting: [
            "innodb_flush_log_at_trx_commit = 1",
            "innodb_flush_log_at_trx_commit = 2",
        ],
    },
    crate::engine::Starter {
        title: "mariadb: innodb_flush_log_at_trx_commit 1 vs 2",
        engine: "mariadb",
        source: "# Debian's MariaDB (apt-get install mariadb-server); or one of:\n\
                 # version = \"11.4\"   # fetch a build (dbdelta list versions mariadb)\n\
                 # bin = \"/opt/mariadb/bin\"\n",
        setting: [
            "innodb_flush_log_at_trx_commit = 1",
            "innodb_flush_log_at_trx_commit = 2",
        ],
    },
];

#[cfg(test)]
mod help_tests {
    #[test]
    fn the_help_tables_variables_are_the_settings_taken_at_start() {
        let help = "mysqld  Ver 9.7.4\n  --innodb-adaptive-hash-index\n\
            Variables (--variable-name=value)\n\
            and boolean options {FALSE|TRUE}                             Value (after reading options)\n\
            ------------------------------------------------------------ -------------\n\
            activate-all-roles-on-login                                  FALSE\n\
            innodb-adaptive-hash-index                                   FALSE\n\
            a-name-longer-than-the-sixty-characters-of-the-first-column-of-it 1\n\
            \n\
            To see what values a running MySQL server is using, type\n";
        let names = super::help_variables(help);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "a_name_longer_than_the_sixty_characters_of_the_first_column_of_it",
                "activate_all_roles_on_login",
                "innodb_adaptive_hash_index"
            ]
        );
        assert!(super::help_variables("no table here").is_empty());
    }

    /// Debian's MariaDB (CI installs it): its option table, not `SHOW VARIABLES`'s read-only
    /// `have_*` entries.
    #[test]
    fn debian_mariadb_names_the_variables_it_takes_at_start() {
        use crate::engine::{EngineKind, Family, TargetSpec};
        if !std::path::Path::new("/usr/sbin/mariadbd").exists() {
            return;
        }
        let spec = TargetSpec {
            engine: EngineKind::parse("mysql").unwrap(),
            ..Default::default()
        };
        let names = super::MysqlFamily.startup_settings(&spec).unwrap().unwrap();
        assert!(names.contains("innodb_buffer_pool_size"), "{names:?}");
        // `SHOW VARIABLES` has them; MariaDB's table (unlike MySQL's) lists `version_compile_os`.
        assert!(!names.contains("have_ssl") && !names.contains("have_query_cache"));
    }
}
