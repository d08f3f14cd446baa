//! A private MySQL/MariaDB server's lifecycle: the config file, initialising the data directory
//! (or copying a template), launching as the server user on a unix socket and a free loopback
//! port, letting the client in with a fresh password, and [`MysqlServer`]'s `Server` side
//! through to stopping it. Must not: open client sessions for the workload (`session.rs`) or
//! time anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::MysqlFamily;
use super::diagnostics::{
    cause_lines, dir_bytes, effective_settings, innodb_background, read_from, version_label,
};
use super::flavor::{Build, Init, Storage, find_binaries, render_config};
use super::postwrite::{innodb_postwrite, rocksdb_postwrite};
use super::session::{MyEndpoint, MysqlDriver};
use super::{DB_NAME, USER};
use crate::engine::common::mywire::MyConn;
use crate::engine::common::process::{self, ServerProcess, ServerUser};
use crate::engine::common::secret;
use crate::engine::{Background, Driver, Observed, Server, Started, TargetSpec};

/// Config file written into the data directory.
const CONFIG_NAME: &str = "dbdelta.cnf";

/// Unix socket, inside the data directory when the path is short enough.
const SOCKET_NAME: &str = "mysqld.sock";

/// Longest socket path we use (`sun_path` holds 108 bytes including the NUL).
const MAX_SOCKET_PATH: usize = 100;

/// How long the server may take to accept connections, and to stop.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// MyRocks' files, inside the data directory (`rocksdb_datadir`'s default).
const ROCKSDB_DIR: &str = "#rocksdb";

/// Access denied: the server is up, the password did not take.
const ER_ACCESS_DENIED: &[u16] = &[1045, 1698];

// ---------------------------------------------------------------------------------------------
// Server

/// A running MySQL/MariaDB server of one target.
pub struct MysqlServer {
    started: Started,
    log: PathBuf,
    process: Mutex<ServerProcess>,
    admin: Mutex<Option<MyConn>>,
    driver: Arc<MysqlDriver>,
    /// The unix socket clients connect to.
    socket: PathBuf,
    /// `root`'s password on this server.
    password: String,
    /// `<data_dir>.password`, removed when the server goes.
    _password_file: secret::PrivateFile,
    /// A private directory outside the data directory holding the socket (long paths), removed
    /// at stop.
    outside_dir: Option<PathBuf>,
    /// The server's own temporary directory (`<data_dir>.tmp`), removed at stop when it made it.
    tmp_dir: Option<PathBuf>,
    storage: Storage,
    /// `dbdelta.cnf` as recorded with the run (`<basedir>` for the build's directory).
    config: String,
    /// How a remote target's client logs in, when the target listens for one.
    tcp: Option<crate::engine::TcpEndpoint>,
}

/// On the first connection: the `dbdelta` database (and a remote client's login), then what
/// the server says of itself: its version, whether backslashes escape in literals, and its
/// effective settings.
fn prepare_admin(
    admin: &mut MyConn,
    target: &TargetSpec,
    data_dir: &Path,
    socket: &Path,
    build: &Build,
    password: &str,
) -> anyhow::Result<(String, bool, BTreeMap<String, String>)> {
    // A restored data directory (`TargetSpec::restored`) holds it already.
    admin
        .query(&format!("CREATE DATABASE IF NOT EXISTS {DB_NAME}"))
        .context("creating the dbdelta database")?;
    admin.query(&format!("USE {DB_NAME}"))?;
    if let Some(l) = &target.listen {
        let_client_in(admin, &l.client, password)?;
    }
    // The admin connection idles through whole steps: do not let the server drop it.
    let _ = admin.query("SET SESSION wait_timeout = 31536000");
    let version = admin
        .first("SELECT VERSION()")?
        .context("SELECT VERSION() returned no row")?;
    let version = version_label(version);
    let sql_mode = admin.first("SELECT @@GLOBAL.sql_mode")?.unwrap_or_default();
    let vars: Vec<(String, Option<String>)> = admin
        .rows("SHOW GLOBAL VARIABLES")?
        .into_iter()
        .filter_map(|r| {
            let mut cols = r.into_iter();
            Some((cols.next()??, cols.next().flatten()))
        })
        .collect();
    let settings = effective_settings(vars, data_dir, socket, build.bins.basedir.as_deref());
    Ok((
        version,
        !sql_mode.contains("NO_BACKSLASH_ESCAPES"),
        settings,
    ))
}

/// A remote target's client host may log in as `root` with the server's password.
fn let_client_in(admin: &mut MyConn, client: &str, password: &str) -> anyhow::Result<()> {
    admin
        .query(&format!(
            "CREATE USER '{USER}'@'{client}' IDENTIFIED BY '{password}'"
        ))
        .with_context(|| format!("creating {USER}@{client} for the remote client"))?;
    admin
        .query(&format!(
            "GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'{client}'"
        ))
        .with_context(|| format!("granting {USER}@{client} its privileges"))?;
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl MysqlServer {
    /// Write the config, initialise `data_dir`, start the server and wait until it accepts
    /// connections, create the `dbdelta` database, record version and settings.
    pub fn start(
        target: &TargetSpec,
        data_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        Ok(Box::new(Self::start_inner(target, data_dir, log)?))
    }

    fn start_inner(target: &TargetSpec, data_dir: &Path, log: &Path) -> anyhow::Result<Self> {
        // Absolute, as PostgreSQL's: the tools run in the data directory, where a relative
        // `bin` (the lab's folder joined to `../mdb/bin`) would name nothing.
        let bin = target.bin.as_deref().map(std::path::absolute).transpose()?;
        let bins = find_binaries(bin.as_deref())?;
        let env = bins.env(&target.env);
        let build = Build::probe(bins, &env)?;
        let storage = Storage::of(&target.tables);
        build.check_storage(storage)?;
        let config = render_config(&build, storage, &target.tables, &target.settings, None);
        let (data_dir, user) = data_dir_for(target, &build, &config, (data_dir, &env, log))?;
        let password = secret::new_password();
        let password_file = secret::password_file(&data_dir, &password)?;
        let cnf = write_cnf(&data_dir, &config, user.as_ref())?;
        let place = Place {
            cnf: &cnf,
            data_dir: &data_dir,
            user: user.as_ref(),
            env: &env,
            log,
        };
        let launched = launch(target, &build, &place, &password)?;
        let Launched {
            process: proc,
            mut admin,
            socket,
            outside_dir,
            tmp_dir,
            port,
        } = launched;
        let (version, backslash_escapes, settings) =
            prepare_admin(&mut admin, target, &data_dir, &socket, &build, &password)?;
        let driver = Arc::new(MysqlDriver::new(
            MyEndpoint::Own {
                socket: socket.clone(),
                password: password.clone(),
            },
            target.prepared,
            backslash_escapes,
        ));
        let recorded = recorded_config(&build, storage, target);
        Ok(MysqlServer {
            started: Started {
                version,
                settings,
                data_dir,
            },
            log: log.to_path_buf(),
            process: Mutex::new(proc),
            admin: Mutex::new(Some(admin)),
            driver,
            socket,
            outside_dir,
            tmp_dir,
            storage,
            config: recorded,
            tcp: target.listen.as_ref().map(|_| crate::engine::TcpEndpoint {
                port,
                user: USER.into(),
                password: password.clone(),
                database: DB_NAME.into(),
                backslash_escapes,
            }),
            password,
            _password_file: password_file,
        })
    }

    fn admin(&self) -> anyhow::Result<MutexGuard<'_, Option<MyConn>>> {
        let guard = lock(&self.admin);
        if guard.is_none() {
            bail!("the admin connection is closed");
        }
        Ok(guard)
    }
}

/// `dbdelta.cnf` in the data directory, the server user's when dbdelta runs as root.
fn write_cnf(data_dir: &Path, config: &str, user: Option<&ServerUser>) -> anyhow::Result<PathBuf> {
    let cnf = data_dir.join(CONFIG_NAME);
    std::fs::write(&cnf, config).with_context(|| format!("writing {}", cnf.display()))?;
    if let Some(u) = user {
        process::chown_tree(&cnf, u)?;
    }
    Ok(cnf)
}

/// The config as the run records it: the build directory written as `<basedir>`, and what
/// `<basedir>` stands for in a comment.
fn recorded_config(build: &Build, storage: Storage, target: &TargetSpec) -> String {
    let mut recorded = render_config(
        build,
        storage,
        &target.tables,
        &target.settings,
        Some("<basedir>"),
    );
    if let Some(base) = &build.bins.basedir {
        recorded.push_str(&format!("# <basedir> = {}\n", base.display()));
    }
    recorded
}

/// Initialise `data_dir` the build's way ([`Init`]), as the server user, with `config`. The
/// config sits beside the data directory meanwhile (`--initialize` wants an empty directory),
/// or in a private directory under the temporary directory when the data directory's path has
/// whitespace: install-db scripts split `--defaults-file` at spaces.
fn initialise(
    build: &Build,
    config: &str,
    data_dir: &Path,
    user: Option<&ServerUser>,
    env: &BTreeMap<String, String>,
    log: &Path,
) -> anyhow::Result<()> {
    let spaced = |p: &Path| p.to_string_lossy().contains(char::is_whitespace);
    let mut apart = None;
    let init_cnf = if spaced(data_dir) {
        let tmp = std::env::temp_dir();
        let dir = tmp.join(format!(
            "dbdelta-init-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        if spaced(&dir) {
            bail!(
                "the work directory {} has whitespace in its path and so has the temporary directory {}; mariadb-install-db cannot take such a path: choose a --workdir or TMPDIR without spaces",
                data_dir.parent().unwrap_or(data_dir).display(),
                tmp.display()
            );
        }
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        apart = Some(dir.clone());
        dir.join("init.cnf")
    } else {
        PathBuf::from(format!("{}.init.cnf", data_dir.display()))
    };
    let written = std::fs::write(&init_cnf, config)
        .with_context(|| format!("writing {}", init_cnf.display()))
        .and_then(|()| match (user, &apart) {
            (Some(u), Some(dir)) => process::chown_tree(dir, u),
            _ => Ok(()),
        });
    let result = written.and_then(|()| initialise_with(build, &init_cnf, data_dir, user, env, log));
    let _ = std::fs::remove_file(&init_cnf);
    if let Some(dir) = apart {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

fn initialise_with(
    build: &Build,
    cnf: &Path,
    data_dir: &Path,
    user: Option<&ServerUser>,
    env: &BTreeMap<String, String>,
    log: &Path,
) -> anyhow::Result<()> {
    if build.flavor.init == Init::Template
        && let Some(template) = build.template()
    {
        copy_template(&template, data_dir).with_context(|| {
            format!("copying the template data directory {}", template.display())
        })?;
        if let Some(u) = user {
            process::chown_tree(data_dir, u)?;
        }
        return Ok(());
    }
    if let Some(u) = user {
        process::chown_tree(data_dir, u)?;
    }
    let defaults = format!("--defaults-file={}", cnf.display());
    let datadir = format!("--datadir={}", data_dir.display());
    let mut cmd = match build.flavor.init {
        Init::InitializeInsecure => {
            let mut cmd = Command::new(&build.bins.server);
            cmd.arg(&defaults)
                .arg(&datadir)
                .arg("--initialize-insecure");
            cmd
        }
        Init::Template | Init::InstallDb(_) => {
            let install = build.bins.install.as_ref().with_context(|| {
                format!(
                    "no mariadb-install-db or mysql_install_db for {} ({}): looked beside it, in <basedir>/scripts and on PATH",
                    build.bins.server.display(),
                    build.flavor.name
                )
            })?;
            let mut cmd = Command::new(install);
            cmd.arg(&defaults).arg(&datadir);
            if let Init::InstallDb(args) = build.flavor.init {
                cmd.args(args);
            }
            if let Some(base) = &build.bins.basedir {
                cmd.arg(format!("--basedir={}", base.display()));
            }
            cmd
        }
    };
    cmd.current_dir(data_dir).envs(env);
    let log_start = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    if let Err(e) = process::run_tool(cmd, user, log, "initialising the data directory") {
        // install-db ends with a page of advice that pushes the cause out of the log tail:
        // put the cause first.
        let errors = cause_lines(&read_from(log, log_start));
        if errors.is_empty() {
            return Err(e);
        }
        bail!(
            "initialising the data directory: {}\n{e:#}",
            errors.join("; ")
        );
    }
    Ok(())
}

/// Copy a package's initialised data directory, without its `auto.cnf` (each server makes its
/// own UUID).
fn copy_template(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "auto.cnf" {
            continue;
        }
        let dest = to.join(&name);
        if entry.file_type()?.is_dir() {
            std::fs::create_dir(&dest)?;
            copy_template(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// A started server and the first connection to it.
struct Launched {
    process: ServerProcess,
    admin: MyConn,
    socket: PathBuf,
    /// A private directory outside the data directory holding the socket (long paths).
    outside_dir: Option<PathBuf>,
    /// The server's own temporary directory, when this start made it.
    tmp_dir: Option<PathBuf>,
    port: u16,
}

/// Where a server starts: its config, data directory, account, environment and log.
struct Place<'a> {
    cnf: &'a Path,
    data_dir: &'a Path,
    user: Option<&'a ServerUser>,
    env: &'a BTreeMap<String, String>,
    log: &'a Path,
}

/// The data directory, absolute, private to the server's user, initialised with `config`
/// unless the target's is restored (its config is written again and `root`'s password set by
/// the `--init-file` of every start), and that user (`None`: the server runs as dbdelta).
fn data_dir_for(
    target: &TargetSpec,
    build: &Build,
    config: &str,
    (data_dir, env, log): (&Path, &BTreeMap<String, String>, &Path),
) -> anyhow::Result<(PathBuf, Option<ServerUser>)> {
    let data_dir = data_dir
        .canonicalize()
        .with_context(|| format!("data directory {}", data_dir.display()))?;
    let user = process::server_user()?;
    if let Some(u) = &user {
        process::check_reachable(&data_dir, u)?;
    }
    // Nobody else may read the files or reach the socket inside: before the tool writes the
    // first file, and again after (a tool may set its own mode).
    secret::private_dir(&data_dir)?;
    if !target.restored {
        initialise(build, config, &data_dir, user.as_ref(), env, log)?;
    } else if let Some(u) = &user {
        process::chown_tree(&data_dir, u)?;
    }
    secret::private_dir(&data_dir)?;
    Ok((data_dir, user))
}

/// The socket's path: in the data directory, or when that path is too long to bind, in a
/// directory of its own under the temporary directory that only the server account may enter
/// (returned second, for removal at stop).
fn socket_path(place: &Place<'_>, port: u16) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    let socket = place.data_dir.join(SOCKET_NAME);
    if socket.as_os_str().len() <= MAX_SOCKET_PATH {
        return Ok((socket, None));
    }
    let dir = std::env::temp_dir().join(format!("dbdelta-mysqld-{}-{port}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    secret::private_dir(&dir)?;
    if let Some(u) = place.user {
        process::chown_tree(&dir, u)?;
    }
    Ok((dir.join(SOCKET_NAME), Some(dir)))
}

/// The server's own temporary directory, `<data_dir>.tmp` (0700, the server account's), and
/// whether this start made it (then it is removed at stop). A server at its start deletes the
/// temporary-table files (`#sql…`) it finds in its temporary directory: in a shared `/tmp`, a
/// MariaDB 10.11 counting cell starting beside another deleted that one's, whose load then
/// failed (`Error on delete of '/tmp/#sql-temptable-…MAI' (Errcode: 2)`).
fn own_tmpdir(place: &Place<'_>) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    let dir = PathBuf::from(format!("{}.tmp", place.data_dir.display()));
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {
            return Ok((dir, None));
        }
        Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
    }
    secret::private_dir(&dir)?;
    if let Some(u) = place.user {
        process::chown_tree(&dir, u)?;
    }
    Ok((dir.clone(), Some(dir)))
}

/// Start the server on a unix socket and a loopback port, `root`'s password set by an
/// `--init-file` (a 0600 file removed once the server is up), and wait until it accepts
/// `root` with it.
fn launch(
    target: &TargetSpec,
    build: &Build,
    place: &Place<'_>,
    password: &str,
) -> anyhow::Result<Launched> {
    let (tmp, made) = own_tmpdir(place)?;
    match launch_in(target, build, place, (password, &tmp)) {
        Ok(launched) => Ok(Launched {
            tmp_dir: made,
            ..launched
        }),
        Err(e) => {
            if let Some(d) = made {
                let _ = std::fs::remove_dir_all(d);
            }
            Err(e)
        }
    }
}

/// [`launch`] with the server's temporary directory `tmp` made.
fn launch_in(
    target: &TargetSpec,
    build: &Build,
    place: &Place<'_>,
    (password, tmp): (&str, &Path),
) -> anyhow::Result<Launched> {
    let port = match target.port {
        Some(p) => {
            process::check_port_free(p)?;
            p
        }
        None => process::free_port()?,
    };
    let (socket, outside_dir) = socket_path(place, port)?;
    let init = secret::PrivateFile::create(
        &PathBuf::from(format!("{}.init.sql", place.data_dir.display())),
        &build.flavor.secure_sql(password),
        place.user,
    )?;
    let mut cmd = Command::new(&build.bins.server);
    cmd.arg(format!("--defaults-file={}", place.cnf.display()))
        .arg(format!("--datadir={}", place.data_dir.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--port={port}"))
        .arg(format!("--init-file={}", init.path().display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .arg(match &target.listen {
            // One address: MySQL before 8.0.13 and MariaDB before 10.11 take no list.
            Some(l) => format!("--bind-address={}", l.address),
            None => "--bind-address=127.0.0.1".into(),
        })
        .args(&target.args)
        .args(under_valgrind(&target.wrap, place.cnf))
        .current_dir(place.data_dir)
        .envs(place.env);
    let mut proc = ServerProcess::spawn(
        cmd,
        &target.wrap,
        place.user,
        target.server_cpus.as_ref(),
        place.log,
        "the MySQL server",
    )?;
    let mut first = None;
    proc.wait_ready(READY_TIMEOUT, || {
        match MyConn::connect(&socket, USER, Some(password), None) {
            Ok(c) => first = Some(Ok(c)),
            Err(e) if e.code().is_some_and(|c| ER_ACCESS_DENIED.contains(&c)) => {
                first = Some(Err(e))
            }
            Err(_) => {}
        }
        first.is_some()
    })?;
    drop(init);
    let admin = match first.expect("connected when ready") {
        Ok(c) => c,
        Err(e) => bail!(
            "the server refused root with the password its --init-file set ({e}); last lines of {}:\n{}",
            place.log.display(),
            crate::sys::log_tail(place.log, 20)
        ),
    };
    Ok(Launched {
        process: proc,
        admin,
        socket,
        outside_dir,
        tmp_dir: None,
        port,
    })
}

/// What a server run under valgrind (`wrap`, the counting pass) needs that a native one does
/// not: InnoDB's native asynchronous IO off (under callgrind MariaDB 10.11's start waits on it
/// for good), and on servers that reserve address space for the largest buffer pool up front
/// (MariaDB 10.11.12 and later: 8 TiB by default, which valgrind cannot map) that reservation
/// cut to the configured pool (`--loose-`: servers without the option ignore it). Neither
/// changes what a statement executes. And a redo log of 512 MiB (8.0.30 and later: its
/// capacity; older servers and MariaDB: 256 MiB files), whatever the target sets: under
/// valgrind the page cleaner falls behind, the checkpoint age nears the log's size and the
/// statements themselves flush, by the clock (MySQL 5.6.24, 1 × 100,000 rows, `update-one`:
/// pairs 79,273 / 96,848 / 79,326 instructions/op with the default 2 × 48 MiB, 79,200 to
/// 79,362 over four pairs with this). And no spinning while a statement waits for its redo to be
/// flushed (`innodb_log_spin_cpu_pct_hwm = 0`, 8.0.11 and later): InnoDB spins there only while
/// the CPU use it measures lies between two marks (by default, below half of the cores), and
/// valgrind, which runs one thread at a time, keeps it near one core: on two cores, at that
/// mark, so some passes spun and others did not (8.0.31 A/A, `update-nonindex`: one pass of seven 127,532 instructions/op
/// against 81,677–82,091, 4,272 of them in `log_write_up_to` against 185). A spin waits; it
/// does no work of the statement's.
pub(super) fn under_valgrind(wrap: &[String], cnf: &Path) -> Vec<String> {
    if wrap.is_empty() {
        return Vec::new();
    }
    let text = std::fs::read_to_string(cnf).unwrap_or_default();
    let pool = (text.lines().rev())
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim().replace('-', "_") == "innodb_buffer_pool_size")
        .map_or("128M".to_string(), |(_, v)| v.trim().to_string());
    vec![
        "--innodb-use-native-aio=0".into(),
        format!("--loose-innodb-buffer-pool-size-max={pool}"),
        "--loose-innodb-redo-log-capacity=512M".into(),
        "--loose-innodb-log-file-size=256M".into(),
        "--loose-innodb-log-spin-cpu-pct-hwm=0".into(),
    ]
}

impl Server for MysqlServer {
    fn background(&self) -> Background {
        match (self.storage, self.admin()) {
            (Storage::InnoDb, Ok(mut guard)) => {
                guard.as_mut().map(innodb_background).unwrap_or_default()
            }
            _ => Background::default(),
        }
    }

    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn tcp_endpoint(&self) -> Option<crate::engine::TcpEndpoint> {
        self.tcp.clone()
    }

    fn client_url(&self) -> Option<crate::engine::connect::ConnectUrl> {
        Some(crate::engine::connect::ConnectUrl {
            engine: crate::engine::EngineKind::of(&MysqlFamily),
            user: USER.into(),
            password: Some(self.password.clone()),
            address: crate::engine::connect::Address::Unix(self.socket.clone()),
            port: 3306,
            database: DB_NAME.into(),
        })
    }

    fn observed(&self) -> Observed {
        Observed::Tree(lock(&self.process).pid())
    }

    fn started_pid(&self) -> Option<u32> {
        Some(lock(&self.process).pid())
    }

    /// The reference's `du -bs`: MyRocks' bytes under `#rocksdb`, InnoDB's under the database's
    /// directory (one `.ibd` per table). Not `data_length + index_length`: InnoDB fills those
    /// from persistent statistics, which after a bulk load can still say 0 (MySQL 8.0).
    fn db_size(&self) -> Option<u64> {
        let dir = match self.storage {
            Storage::RocksDb => ROCKSDB_DIR,
            Storage::InnoDb => DB_NAME,
        };
        dir_bytes(&self.started.data_dir.join(dir))
    }

    fn config_text(&self) -> Option<String> {
        Some(self.config.clone())
    }

    fn postwrite(&self, tables: &[String], budget: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + budget;
        let mut guard = self.admin()?;
        let conn = guard.as_mut().expect("checked by admin()");
        for t in tables {
            conn.query(&format!("ANALYZE TABLE {t}"))
                .with_context(|| format!("ANALYZE TABLE {t}"))?;
        }
        match self.storage {
            Storage::InnoDb => innodb_postwrite(conn, deadline),
            Storage::RocksDb => rocksdb_postwrite(conn, deadline),
        }
    }

    fn log_path(&self) -> Option<PathBuf> {
        Some(self.log.clone())
    }

    fn check_alive(&self) -> anyhow::Result<()> {
        if lock(&self.process).alive() {
            return Ok(());
        }
        bail!(
            "the MySQL server exited; last lines of its log {}:\n{}",
            self.log.display(),
            crate::sys::log_tail(&self.log, 20)
        )
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        // Close our connection first, so the server has no client left.
        drop(lock(&self.admin).take());
        let result = lock(&self.process).stop(libc::SIGTERM, STOP_TIMEOUT);
        for d in [&self.outside_dir, &self.tmp_dir].into_iter().flatten() {
            let _ = std::fs::remove_dir_all(d);
        }
        result
    }
}
