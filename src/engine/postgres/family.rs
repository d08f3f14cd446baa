//! PostgreSQL as an engine family of the registry (`crate::engine::families`): its names,
//! what the preflight and a counting pass need to know of it, its `connect` URL form and its
//! factories. Must not: hold the engine itself (this folder's other files do).

use crate::engine::common::fetchable::Product;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::counter::Attribution;
use crate::engine::common::recipe::Recipe;
use crate::engine::connect::{ConnectUrl, UrlForm};
use crate::engine::{Dialect, Driver, Family, Server, TableDdl, TargetSpec, TcpEndpoint};

/// The registry's entry for `engine = "postgres"`.
pub struct PgFamily;

/// `postgres://` and `postgresql://` URLs.
static URL: UrlForm = UrlForm {
    schemes: &["postgres", "postgresql"],
    user: "postgres",
    port: 5432,
    database: "postgres",
    socket_key: "host",
    socket: "/var/run/postgresql",
};

impl Family for PgFamily {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["postgresql"]
    }

    fn title(&self) -> &'static str {
        "PostgreSQL"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn embedded(&self) -> bool {
        false
    }

    /// A process per connection: the postmaster and the autovacuum workers are background,
    /// the pass's backends foreground. A worker runs `AutoVacWorkerMain` from 17 on; before,
    /// that function is static and inlined, and what its dump shows is the rest of
    /// `StartAutoVacWorker`, where the postmaster forked it. (PostgreSQL's counting server
    /// runs without autovacuum, so it needs no purge hold.)
    fn attribution(&self) -> Attribution {
        Attribution::Processes {
            background: &["AutoVacWorkerMain", "StartAutoVacWorker"],
        }
    }

    /// `key = 'value'`: `pg_settings` gives each value in its base unit, which a quoted
    /// value in `postgresql.conf` takes as it is (strings such as `DateStyle` need the quotes).
    fn setting_line(&self, key: &str, value: &str) -> String {
        format!("{key} = '{}'", value.replace('\'', "''"))
    }

    /// `postgres --describe-config` (run as the server account: PostgreSQL refuses root):
    /// every parameter but the `internal` ones (`block_size`, `server_version`, …), which
    /// nothing sets.
    fn startup_settings(&self, target: &TargetSpec) -> anyhow::Result<Option<BTreeSet<String>>> {
        let server = super::server_binary(target.bin.as_deref())?;
        let mut cmd = std::process::Command::new(&server);
        cmd.arg("--describe-config").envs(&target.env);
        if let Some(u) = crate::engine::common::process::server_user()? {
            cmd.uid(u.uid).gid(u.gid);
        }
        let names = crate::engine::common::process::names_listed(cmd, settable)?;
        Ok(Some(names))
    }

    fn starters(&self) -> &'static [crate::engine::Starter] {
        STARTERS
    }

    fn products(&self) -> &'static [&'static Product] {
        super::fetch::PRODUCTS
    }

    /// Measured with a debug build on a loaded 2-core host (a 5 s-step lab, two counting cells at
    /// once); the counting pairs with a release build too (PostgreSQL 15 vs 17, the whole
    /// catalog `--quick --instructions`, load 3: 1,184 s for two cells of 32 steps, about 12 s
    /// per pair where the debug build's client took 25).
    fn pace(&self, release: bool) -> crate::engine::Pace {
        crate::engine::Pace {
            server_secs: 3.0,
            load_rows_per_sec: 10_000.0,
            postwrite_extra_secs: 0.5,
            step_extra_secs: 0.4,
            count_server_secs: 10.0,
            count_load_factor: 3.0,
            count_pair_secs: if release { 12.0 } else { 25.0 },
        }
    }

    /// The reference the suites' bytes per row are measured on.
    fn disk_percent(&self, _tables: &TableDdl) -> u64 {
        100
    }

    /// The catalog and first WAL segments (a fresh PostgreSQL 15 cluster is 39 MB).
    fn fixed_bytes(&self) -> u64 {
        48 << 20
    }

    /// Finding the server runs `postgres --version` already (for the major version).
    fn check_server(
        &self,
        bin: Option<&Path>,
        _env: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        super::server_binary(bin).map(|_| ())
    }

    fn build_file(&self, target: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
        super::server_binary(target.bin.as_deref()).map(Some)
    }

    fn recipes(&self) -> &'static [&'static dyn Recipe] {
        &[&super::recipe::PgRecipe]
    }

    fn start(
        &self,
        target: &TargetSpec,
        data_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        super::PgServer::start(target, data_dir, log)
    }

    fn url(&self) -> Option<&'static UrlForm> {
        Some(&URL)
    }

    fn attach(&self, target: &TargetSpec, url: &ConnectUrl) -> anyhow::Result<Box<dyn Server>> {
        super::existing::PgExisting::attach(target, url)
    }

    fn tcp_driver(
        &self,
        url: ConnectUrl,
        prepared: bool,
        _tcp: &TcpEndpoint,
    ) -> anyhow::Result<Arc<dyn Driver>> {
        Ok(super::tcp_driver(url, prepared))
    }
}

/// The parameters of `postgres --describe-config` (tab-separated: name, context, group, …)
/// whose context is not `internal`, lower case.
fn settable(described: &str) -> BTreeSet<String> {
    (described.lines())
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let (name, context) = (fields.next()?, fields.next()?);
            (context != "internal" && !name.is_empty()).then(|| name.to_ascii_lowercase())
        })
        .collect()
}

/// `dbdelta init --engine NAME`'s labs of the family.
static STARTERS: &[crate::engine::Starter] = &[crate::engine::Starter {
    title: "postgres: synchronous_commit on vs off",
    engine: "postgres",
    source: "# Debian's postgresql package (apt-get install postgresql-15); or one of:\n\
                 # bin = \"/usr/lib/postgresql/15/bin\"   # a directory of server binaries\n\
                 # version = \"17\"                       # fetch a build (dbdelta list versions)\n",
    setting: ["synchronous_commit = on", "synchronous_commit = off"],
}];

#[cfg(test)]
mod describe_tests {
    #[test]
    fn internal_parameters_are_not_settable() {
        let described = "block_size\tinternal\tPreset Options\tINTEGER\t8192\n\
            enable_indexscan\tuser\tQuery Tuning\tBOOLEAN\ttrue\n\
            shared_buffers\tpostmaster\tResource Usage\tINTEGER\t1024\n";
        let names: Vec<String> = super::settable(described).into_iter().collect();
        assert_eq!(names, ["enable_indexscan", "shared_buffers"]);
    }

    /// Debian's PostgreSQL 15 (CI installs it), asked as the server account when root.
    #[test]
    fn debian_postgres_names_its_settable_parameters() {
        use crate::engine::{EngineKind, Family, TargetSpec};
        let bin = std::path::Path::new("/usr/lib/postgresql/15/bin");
        if !bin.join("postgres").exists() {
            return;
        }
        let spec = TargetSpec {
            engine: EngineKind::parse("postgres").unwrap(),
            bin: Some(bin.to_path_buf()),
            ..Default::default()
        };
        let names = super::PgFamily.startup_settings(&spec).unwrap().unwrap();
        assert!(names.contains("enable_indexscan") && names.contains("shared_buffers"));
        assert!(!names.contains("block_size") && !names.contains("server_version"));
    }
}
