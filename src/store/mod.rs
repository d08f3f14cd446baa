//! The results store: every run, in an SQLite file (default `./dbdelta.db`) or a shared
//! PostgreSQL database (`--store postgres://…`), with one schema and one set of migrations.
//!
//! Owns the facade every caller uses ([`Store`]: open, write each result in its own transaction
//! the moment it exists, read runs back as [`RunData`], copy a run to another store), written
//! once against the small SQL interface of [`sql`], which [`sqlite`] and [`postgres`]
//! implement; the schema and its migrations ([`migrations`]); reading rows back ([`read`]);
//! copying a run ([`push`]); keeping no password ([`redact`]: every text value written is
//! redacted). The facade's writes live beside it: a run's and its targets' rows ([`runs`]), a
//! step's and a load's ([`steps`]). The schema is meant to be read by people too (`sqlite3`, `psql`,
//! pandas): one row per measurement, plain columns, units in column names. `ARCHITECTURE.md`
//! documents it. Must not: compute metrics or format reports.

mod bisect;
mod explain;
mod floors;
mod migrations;
mod names;
mod postgres;
mod push;
mod read;
mod redact;
mod resume;
mod runs;
mod sql;
mod sqlite;
mod steps;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::InputError;
use crate::results::RunData;
pub use bisect::Bisection;
pub use migrations::{MIGRATIONS, schema_version, tables};
pub use names::{RunLabel, check_label};
pub use postgres::is_url;
pub use resume::CellKey;
use sql::{Db, Lock, Tx};

/// A summary line of `dbdelta list runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub lab: String,
    pub started: String,
    pub complete: bool,
    pub targets: Vec<String>,
    /// Measurements of reported steps: one per step × target × clients × repeat.
    pub measurements: u64,
    /// Distinct reported steps measured (warm-ups left out), what `serve` shows too.
    pub steps: u64,
    /// `run --name`, unique in the store.
    pub name: Option<String>,
    /// `run --tag`, in the order given.
    pub tags: Vec<String>,
    /// `None` for a lab's run; `explain` for the run of explain's twins
    /// ([`names::EXPLAIN`]).
    pub kind: Option<String>,
    /// The run a run of explain's twins explains.
    pub explains: Option<String>,
}

pub struct Store {
    /// Behind a `RefCell`: reading needs the connection mutably (PostgreSQL's client does),
    /// while readers hold the store shared.
    db: RefCell<Box<dyn Db>>,
    /// The file, or the URL without its password: what messages name.
    path: PathBuf,
}

/// A store file that is not there, is a directory, or holds no tables yet is bad input (a
/// reader must not make a store where there is none).
fn no_file(location: &Path, flag: &str) -> Result<()> {
    if !location.exists() {
        return crate::error::input(format!(
            "no results store at {}; run `dbdelta run` first or pass {flag} PATH",
            location.display()
        ));
    }
    if location.is_dir() {
        return crate::error::input(format!(
            "{flag} {}: is a directory; name the results file instead, e.g. {flag} {}",
            location.display(),
            location.join("dbdelta.db").display()
        ));
    }
    if sqlite::holds_nothing(location) {
        // A reader never writes: migrating would put a whole schema into the file.
        return crate::error::input(format!(
            "no results store in {} yet (the file holds no tables); run `dbdelta run --store {}` to make one there",
            location.display(),
            location.display()
        ));
    }
    Ok(())
}

/// A store opened without migrating it must be at this build's schema version.
fn at_this_schema(version: i64, shown: &str, flag: &str) -> Result<()> {
    if version == schema_version() {
        return Ok(());
    }
    if version > schema_version() {
        return crate::error::input(format!(
            "{flag} {shown}: the results store {}",
            migrations::newer(version)
        ));
    }
    crate::error::input(format!(
        "{flag} {shown}: the results store is at schema version {version}, this dbdelta reads \
         version {} without migrating it; run `dbdelta list runs --store {shown}` once (it \
         migrates a writable store), or copy it somewhere writable first",
        schema_version()
    ))
}

impl Store {
    /// Open (creating when missing) and migrate the store: a file path, or a `postgres://` /
    /// `postgresql://` URL of an existing database.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_as(path, "--store", false)
    }

    /// [`Store::open`] of a store named by another flag than `--store` (e.g. `--to`).
    pub fn open_flag(path: &Path, flag: &str) -> Result<Store> {
        Store::open_as(path, flag, false)
    }

    /// Open an existing store for reading; a missing file, or a database without a store, is
    /// bad input, not a new store.
    pub fn open_existing(path: &Path) -> Result<Store> {
        Store::open_as(path, "--store", true)
    }

    /// Open an existing store to add to it (`explain`'s twins' run): missing, empty or
    /// read-only to this user is bad input before anything starts, as for `run`.
    pub fn open_existing_to_write(path: &Path) -> Result<Store> {
        if postgres::is_url(&path.to_string_lossy()) {
            return Store::open_existing(path);
        }
        no_file(path, "--store")?;
        Store::open_as(path, "--store", false)
    }

    /// Open the store at `location`, named as `flag` in messages; with `existing`, a store
    /// that is not there yet is bad input.
    fn open_as(location: &Path, flag: &str, existing: bool) -> Result<Store> {
        let text = location.to_string_lossy();
        let (db, path): (Box<dyn Db>, PathBuf) = if postgres::is_url(&text) {
            let (mut db, shown) = postgres::Postgres::connect(&text, flag)?;
            if existing && !db.has_store()? {
                return crate::error::input(format!(
                    "{flag} {shown}: the database holds no dbdelta results store yet; run \
                     `dbdelta run --store URL` or `dbdelta store push` into it first"
                ));
            }
            (Box::new(db), PathBuf::from(shown))
        } else if text.contains("://") {
            return crate::error::input(format!(
                "{flag} {text}: a results store is an SQLite file path or a postgres:// URL"
            ));
        } else {
            if existing {
                no_file(location, flag)?;
            }
            // A store this process cannot write, or on a file system too full for WAL's files,
            // is still read (a command that writes fails at its first write, naming the store).
            if existing && (!sqlite::writable_store(location) || !sqlite::room_to_open(location)) {
                return Store::read_only(location, flag);
            }
            let db = sqlite::Sqlite::open(location, flag)?;
            (Box::new(db), location.to_path_buf())
        };
        let store = Store {
            db: RefCell::new(Box::new(redact::Redacting(db))),
            path,
        };
        migrations::migrate(
            &mut **store.db.borrow_mut(),
            &store.path.display().to_string(),
        )?;
        Ok(store)
    }

    /// Hold run `run_id` in the store for as long as this process keeps the store open: false
    /// when another dbdelta holds it (a PostgreSQL store shared by hosts: its session advisory
    /// lock on the run; a store file: always true, the work directory's lock decides there).
    pub fn hold_run(&mut self, run_id: &str) -> Result<bool> {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(run_id.as_bytes());
        let key = i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
        self.db().try_hold(key)
    }

    /// An existing SQLite store this process cannot write, opened to read (`list`, `report`,
    /// `compare`, `profile`): without migrating it, so it must be at this build's schema.
    fn read_only(location: &Path, flag: &str) -> Result<Store> {
        let mut db = sqlite::Sqlite::open_read_only(location, flag, false)?;
        let version = db.schema_version()?;
        at_this_schema(version, &location.display().to_string(), flag)?;
        Ok(Store {
            db: RefCell::new(Box::new(db)),
            path: location.to_path_buf(),
        })
    }

    /// Open an existing store to read it only, for as long as this process runs (`dbdelta
    /// serve`), while runs may write it: never migrated, so it must be at this build's schema;
    /// an SQLite file is opened read-only by SQLite, a PostgreSQL session is made read-only
    /// (`SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`) before the first read.
    pub fn open_reader(location: &Path) -> Result<Store> {
        let flag = "--store";
        let text = location.to_string_lossy();
        if !postgres::is_url(&text) {
            no_file(location, flag)?;
            let mut db = sqlite::Sqlite::open_read_only(location, flag, true)?;
            at_this_schema(db.schema_version()?, &text, flag)?;
            return Ok(Store {
                db: RefCell::new(Box::new(db)),
                path: location.to_path_buf(),
            });
        }
        let (mut db, shown) = postgres::Postgres::connect(&text, flag)?;
        if !db.has_store()? {
            return crate::error::input(format!(
                "{flag} {shown}: the database holds no dbdelta results store yet; run \
                 `dbdelta run --store URL` or `dbdelta store push` into it first"
            ));
        }
        let rows = db.query("SELECT version FROM dbdelta_schema", &[])?;
        let version: i64 = rows.first().map(|r| r.get(0)).transpose()?.unwrap_or(0);
        at_this_schema(version, &shown, flag)?;
        db.batch("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")?;
        Ok(Store {
            db: RefCell::new(Box::new(db)),
            path: PathBuf::from(shown),
        })
    }

    /// The file, or the URL without its password.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One line saying that the store file is readable by every user of this host, and how
    /// to make it private; `None` when it is not (or the store is a database). The mode of an
    /// existing store is its owner's choice: dbdelta only says so. (Its `-wal` and `-shm`
    /// files, made by SQLite while it is open, take the file's mode.)
    pub fn exposure(&self) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        if postgres::is_url(&self.path.to_string_lossy()) {
            return None;
        }
        let mode = std::fs::metadata(&self.path).ok()?.permissions().mode() & 0o7777;
        (mode & 0o004 != 0).then(|| {
            format!(
                "warning: the results store {0} is readable by every user of this host (mode \
                 {mode:04o}) and keeps lab texts and server settings; make it private: chmod 600 {0}",
                self.path.display()
            )
        })
    }

    fn db(&self) -> std::cell::RefMut<'_, Box<dyn Db>> {
        self.db.borrow_mut()
    }

    /// The id of the run `offset` places before the newest.
    fn nth_newest(&self, offset: i64) -> Result<Option<String>> {
        let rows = self.db().query(
            "SELECT id FROM runs WHERE kind IS NULL
             ORDER BY started DESC, rowid DESC LIMIT 1 OFFSET ?1",
            &[offset.into()],
        )?;
        rows.first().map(|r| r.get(0)).transpose()
    }

    /// The newest lab run's id (a run of explain's twins is never the latest).
    pub fn latest_run(&self) -> Result<Option<String>> {
        self.nth_newest(0)
    }

    /// Resolve `RUN` (an id, a run's name, `latest`/none, or `previous`: the run before the
    /// latest) to an existing run id.
    pub fn resolve_run(&self, run: Option<&str>) -> Result<String> {
        let store = self.path.display();
        match run {
            Some("previous") => self.nth_newest(1)?.ok_or_else(|| {
                InputError::new(format!(
                    "previous: the store {store} holds fewer than 2 runs; `dbdelta list runs` shows them"
                ))
                .into()
            }),
            None | Some("latest") => self.latest_run()?.ok_or_else(|| {
                InputError::new(format!(
                    "the store {store} holds no run yet; run `dbdelta run` first"
                ))
                .into()
            }),
            Some(id) => {
                if self.has_run(id)? {
                    return Ok(id.to_string());
                }
                match self.run_named(id)? {
                    Some(run) => Ok(run),
                    None => crate::error::input(format!(
                        "no run {id} (an id or a name) in {store}; `dbdelta list runs` shows the runs it holds"
                    )),
                }
            }
        }
    }

    /// Whether the store holds the run `id`.
    fn has_run(&self, id: &str) -> Result<bool> {
        let rows = self
            .db()
            .query("SELECT 1 FROM runs WHERE id = ?1", &[id.into()])?;
        Ok(!rows.is_empty())
    }

    /// The runs of labs, oldest first: what `list runs`, `history` and `serve` show.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>> {
        let mut runs = self.list_all_runs()?;
        runs.retain(|r| r.kind.is_none());
        Ok(runs)
    }

    /// Every run, oldest first, the runs of explain's twins too (`list runs --all`).
    pub fn list_all_runs(&self) -> Result<Vec<RunSummary>> {
        let mut db = self.db();
        let mut targets: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in db.query(
            "SELECT run_id, name FROM targets ORDER BY run_id, position",
            &[],
        )? {
            targets.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        let mut tags: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in db.query("SELECT run_id, tag FROM run_tags ORDER BY rowid", &[])? {
            tags.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        let rows = db.query(
            "SELECT r.id, r.lab, r.started, r.complete,
                    (SELECT count(*) FROM measurements m WHERE m.run_id = r.id AND m.warm = 0),
                    r.name,
                    (SELECT count(DISTINCT m.step) FROM measurements m
                     WHERE m.run_id = r.id AND m.warm = 0),
                    r.kind, r.explains
             FROM runs r ORDER BY r.started, r.rowid",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                let id: String = r.get(0)?;
                Ok(RunSummary {
                    targets: targets.remove(&id).unwrap_or_default(),
                    tags: tags.remove(&id).unwrap_or_default(),
                    lab: r.get(1)?,
                    started: r.get(2)?,
                    complete: r.get(3)?,
                    measurements: r.get(4)?,
                    name: r.get(5)?,
                    steps: r.get(6)?,
                    kind: r.get(7)?,
                    explains: r.get(8)?,
                    id,
                })
            })
            .collect()
    }

    /// Everything stored about one run.
    pub fn load_run(&self, run_id: &str) -> Result<RunData> {
        let mut data = read::run(&mut **self.db(), run_id)?;
        self.attach_invocations(&mut data)?;
        data.floors = self.floors_of(&data.targets)?;
        Ok(data)
    }

    /// Copy the run `run_id` (every table's rows of it) into the store `to`, in one
    /// transaction there; a run `to` already holds is bad input. Returns the rows copied.
    pub fn push_run(&self, run_id: &str, to: &Store) -> Result<u64> {
        let already = || {
            crate::error::input(format!(
                "run {run_id} is already in {}; nothing was copied",
                to.path.display()
            ))
        };
        if to.has_run(run_id)? {
            return already();
        }
        self.refuse_name_taken_at(run_id, to)?;
        let copied = push::copy_run(&mut **self.db(), &mut **to.db(), run_id);
        match copied {
            // Another push of the same run committed first: its key is taken.
            Err(_) if to.has_run(run_id).unwrap_or(false) => already(),
            copied => copied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{
        HostInfo, Latency, Measurement, Metric, RunInfo, SecondSample, TargetInfo, Values,
    };

    fn run() -> RunInfo {
        RunInfo {
            id: "r1".into(),
            lab: "lab".into(),
            lab_text: "[lab]".into(),
            started: "2026-11-22T00:00:00Z".into(),
            finished: None,
            complete: false,
            host: HostInfo {
                cpu_model: "cpu".into(),
                cores: 2,
                memory_bytes: 1,
                kernel: "k".into(),
                online_cpus: "0-1".into(),
                usable_cpus: "1".into(),
                cpu_topology: vec![crate::results::CpuTopology {
                    cpu: 1,
                    core: 1,
                    package: 0,
                    siblings: "1".into(),
                }],
            },
            dbdelta_version: "0.1.0".into(),
            quick: true,
            min_effect: Some(0.03),
            looks: Some(4),
            profiling: None,
            invocations: Vec::new(),
        }
    }

    #[test]
    fn two_openers_of_a_new_store_both_succeed() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let barrier = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                let open = || {
                    barrier.wait();
                    Store::open(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
                };
                let a = s.spawn(open);
                let b = s.spawn(open);
                assert_eq!(a.join().unwrap(), Ok(()));
                assert_eq!(b.join().unwrap(), Ok(()));
            });
        }
    }

    /// A name finds one run, a tag the latest of its runs; `store push` carries
    /// both and refuses a name the destination gives another run.
    #[test]
    fn names_and_tags_find_runs_and_travel_with_push() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Store::open(&dir.path().join("a.db")).unwrap();
        let label = |name: &str, tags: &[&str]| RunLabel {
            name: Some(name.into()),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..RunLabel::default()
        };
        for (id, started, name) in [
            ("r1", "2026-11-22T00:00:00Z", "one"),
            ("r2", "2026-11-23T00:00:00Z", "two"),
        ] {
            let info = RunInfo {
                id: id.into(),
                started: started.into(),
                ..run()
            };
            a.begin_run(&info, &[]).unwrap();
            a.set_run_label(id, &label(name, &["baseline"])).unwrap();
        }
        assert_eq!(a.resolve_run(Some("one")).unwrap(), "r1");
        assert_eq!(a.latest_tagged("baseline").unwrap(), "r2");
        assert!(a.refuse_taken_name("two").is_err());
        a.refuse_taken_name("three").unwrap();
        // The unique index holds even when the check was skipped (two runs racing).
        assert!(a.set_run_label("r1", &label("two", &[])).is_err());

        let mut b = Store::open(&dir.path().join("b.db")).unwrap();
        a.push_run("r1", &b).unwrap();
        let listed = b.list_runs().unwrap();
        assert_eq!(listed[0].name.as_deref(), Some("one"));
        assert_eq!(listed[0].tags, ["baseline"]);
        let other = RunInfo {
            id: "r9".into(),
            ..run()
        };
        b.begin_run(&other, &[]).unwrap();
        b.set_run_label("r9", &label("two", &[])).unwrap();
        let e = a.push_run("r2", &b).unwrap_err().to_string();
        assert!(e.contains("named two") && e.contains("r9"), "{e}");
    }

    #[test]
    fn a_run_pushed_to_another_store_loads_the_same_and_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Store::open(&dir.path().join("a.db")).unwrap();
        let t = TargetInfo {
            name: "a".into(),
            engine: "sqlite".into(),
            sweep: Some("s".into()),
            ..Default::default()
        };
        a.begin_run(&run(), std::slice::from_ref(&t)).unwrap();
        let m = Measurement {
            target: "a".into(),
            step: "point-query".into(),
            ops: 10,
            ..Default::default()
        };
        let series = [1, 0].map(|second| SecondSample {
            target: "a".into(),
            step: "point-query".into(),
            clients: 1,
            repeat: 0,
            second,
            ops: 5,
            p99_us: Some(2.5),
            max_us: None,
        });
        a.save_step("r1", &m, &series, &[1, 2, 3], &[]).unwrap();
        let b = Store::open(&dir.path().join("b.db")).unwrap();
        assert_eq!(a.push_run("r1", &b).unwrap(), 1 + 1 + 1 + 2);
        let (loaded, pushed) = (a.load_run("r1").unwrap(), b.load_run("r1").unwrap());
        assert_eq!(loaded, pushed);
        let t = TargetInfo {
            facts: crate::engine::facts(&t),
            ..t
        };
        assert_eq!(loaded.targets, [t], "the sweep is stored and read back");
        assert_eq!(pushed.series[0].second, 1, "insertion order kept");
        let e = a.push_run("r1", &b).unwrap_err();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert_eq!(b.list_runs().unwrap().len(), 1);
    }

    /// The run of explain's twins is stored as what it is (kind `explain`, the run it
    /// explains), is never `latest`, `previous` or the latest incomplete run, nor in the labs'
    /// run list (only in the whole one), and its twins name the build of the target they copy.
    #[test]
    fn explains_twins_run_stays_apart_and_names_the_targets_build() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("s.db")).unwrap();
        let small = TargetInfo {
            name: "small".into(),
            engine: "postgres".into(),
            build: Some(crate::results::BuildInfo {
                engine: "postgres".into(),
                source: "postgresql-17".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        for (id, started) in [
            ("r0", "2026-11-21T00:00:00Z"),
            ("r1", "2026-11-22T00:00:00Z"),
        ] {
            let info = RunInfo {
                id: id.into(),
                started: started.into(),
                ..run()
            };
            s.begin_run(&info, std::slice::from_ref(&small)).unwrap();
            s.finish_run(id, "2026-11-22T01:00:00Z", true).unwrap();
        }
        let settings = BTreeMap::from([("shared_buffers".to_string(), "16MB".to_string())]);
        s.set_target_server("r1", "small", "PostgreSQL 17.10", &settings)
            .unwrap();
        let p = crate::results::BinaryProvenance {
            version_line: Some("postgres (PostgreSQL) 17.10".into()),
            ..Default::default()
        };
        s.set_target_provenance("r1", "small", &p).unwrap();
        let twins = RunInfo {
            id: "r2".into(),
            started: "2026-11-23T00:00:00Z".into(),
            ..run()
        };
        s.begin_run(&twins, &[]).unwrap();
        let label = RunLabel {
            explains: Some("r1".into()),
            ..RunLabel::default()
        };
        s.set_run_label("r2", &label).unwrap();
        let twin = TargetInfo {
            name: "small-twin1".into(),
            build: None,
            ..small.clone()
        };
        s.add_target("r2", 0, &twin).unwrap();
        s.copy_target_build("r2", "small-twin1", ("r1", "small"))
            .unwrap();

        assert_eq!(s.resolve_run(Some("latest")).unwrap(), "r1");
        assert_eq!(s.resolve_run(Some("previous")).unwrap(), "r0");
        assert_eq!(s.latest_incomplete_run().unwrap(), None);
        assert_eq!(s.resolve_run(Some("r2")).unwrap(), "r2", "asked for by id");
        assert_eq!(s.run_explained("r2").unwrap().as_deref(), Some("r1"));
        assert_eq!(s.run_explained("r1").unwrap(), None);
        let ids = |runs: Vec<RunSummary>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(s.list_runs().unwrap()), ["r0", "r1"]);
        let all = s.list_all_runs().unwrap();
        assert_eq!(all[2].kind.as_deref(), Some("explain"));
        assert_eq!(all[2].explains.as_deref(), Some("r1"));
        assert_eq!(all[1].kind, None);
        let copied = &s.load_run("r2").unwrap().targets[0];
        let original = &s.load_run("r1").unwrap().targets[0];
        assert_eq!(copied.server_version.as_deref(), Some("PostgreSQL 17.10"));
        assert_eq!(copied.build, original.build);
        assert_eq!(copied.provenance.as_ref(), Some(&p));
        assert!(copied.settings.is_empty(), "a twin's settings are its own");
    }

    /// A started server's provenance is stored with its target, read back whole and pushed
    /// with the run.
    #[test]
    fn a_targets_provenance_is_stored_read_back_and_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Store::open(&dir.path().join("a.db")).unwrap();
        let t = TargetInfo {
            name: "m".into(),
            engine: "mysql".into(),
            ..Default::default()
        };
        a.begin_run(&run(), std::slice::from_ref(&t)).unwrap();
        let p = crate::results::BinaryProvenance {
            file: Some("/opt/mysql/bin/mysqld".into()),
            compilers: vec!["gcc (GNU) 8.3.1 20190311 (Red Hat 8.3.1-3)".into()],
            version_line: Some("mysqld Ver 8.0.31 for Linux on x86_64".into()),
            unread: Vec::new(),
            build_flags: Some("-O2 -g".into()),
        };
        a.set_target_provenance("r1", "m", &p).unwrap();
        let loaded = a.load_run("r1").unwrap();
        assert_eq!(loaded.targets[0].provenance.as_ref(), Some(&p));
        let b = Store::open(&dir.path().join("b.db")).unwrap();
        a.push_run("r1", &b).unwrap();
        assert_eq!(b.load_run("r1").unwrap().targets, loaded.targets);
    }

    #[test]
    fn a_directory_or_a_foreign_file_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let e = Store::open(dir.path()).err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(format!("{e}").contains("is a directory"), "{e}");
        let junk = dir.path().join("notes.txt");
        std::fs::write(
            &junk,
            "not a database, just some text long enough to be a header....",
        )
        .unwrap();
        let e = Store::open(&junk).err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(
            format!("{e}").contains("is not a dbdelta results store"),
            "{e}"
        );
    }

    #[test]
    fn another_programs_sqlite_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.db");
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE notes (x); INSERT INTO notes VALUES (1);")
            .unwrap();
        drop(conn);
        let before = std::fs::read(&other).unwrap();
        for e in [
            Store::open(&other).err().unwrap(),
            Store::open_existing(&other).err().unwrap(),
        ] {
            assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
            assert!(
                format!("{e}").contains("other.db: is an SQLite database of another program"),
                "{e}"
            );
        }
        assert_eq!(
            std::fs::read(&other).unwrap(),
            before,
            "the file is unchanged"
        );
        // An empty SQLite file (no objects) becomes a store.
        let empty = dir.path().join("empty.db");
        drop(rusqlite::Connection::open(&empty).unwrap());
        Store::open(&empty).unwrap();
    }

    /// A store copied as SQL (`sqlite3 old.db .dump | sqlite3 new.db`: every table, no
    /// `user_version`) is recognised by its tables, left as it is, and the fix names its version.
    #[test]
    fn a_store_copied_without_its_version_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path).unwrap());
        let copy = dir.path().join("copy.db");
        let from = rusqlite::Connection::open(&path).unwrap();
        let to = rusqlite::Connection::open(&copy).unwrap();
        let mut q = from
            .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            .unwrap();
        for sql in q.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            to.execute_batch(&sql.unwrap()).unwrap();
        }
        drop(to);
        let before = std::fs::read(&copy).unwrap();
        let v = migrations::schema_version();
        for e in [
            Store::open(&copy).err().unwrap(),
            Store::open_reader(&copy).err().unwrap(),
        ] {
            assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
            let fix = format!("at schema version {v} that has lost its version");
            assert!(format!("{e}").contains(&fix), "{e}");
            let cmd = format!("'PRAGMA user_version = {v}'");
            assert!(format!("{e}").contains(&cmd), "{e}");
        }
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            before,
            "the copy is unchanged"
        );
    }

    /// A reader (`list`, `report`, `serve`) on an existing empty file says there is no store
    /// yet and writes nothing; a store of a newer dbdelta is bad input (exit 2) for every opener.
    #[test]
    fn readers_write_no_schema_and_a_newer_store_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        for e in [
            Store::open_existing(&empty).err().unwrap(),
            Store::open_reader(&empty).err().unwrap(),
        ] {
            assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
            assert!(format!("{e}").starts_with("no results store in"), "{e}");
        }
        assert_eq!(
            std::fs::metadata(&empty).unwrap().len(),
            0,
            "nothing written"
        );
        let path = dir.path().join("s.db");
        drop(Store::open(&path).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", migrations::schema_version() + 1)
            .unwrap();
        drop(conn);
        for e in [
            Store::open(&path).err().unwrap(),
            Store::open_existing(&path).err().unwrap(),
            Store::open_reader(&path).err().unwrap(),
        ] {
            assert!(e.chain().any(|c| c.is::<InputError>()), "{e:#}");
            assert!(format!("{e:#}").contains("use a newer dbdelta"), "{e:#}");
        }
    }

    /// What `list`/`report` open when this user cannot write the store (root can write any
    /// file, so the fallback is called directly; the read-only file itself was shown,
    /// outside the tests, with an unprivileged user).
    #[test]
    fn a_store_opened_read_only_reads_and_leaves_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut store = Store::open(&path).unwrap();
        store.begin_run(&run(), &[]).unwrap();
        drop(store);
        let files = || std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files(), 1, "only the store file");
        let ro = Store::read_only(&path, "--store").unwrap();
        assert_eq!(ro.list_runs().unwrap().len(), 1);
        drop(ro);
        assert_eq!(files(), 1, "no -wal or -shm left");
    }

    /// `dbdelta serve`'s reader: open while a run writes, it sees the new run (it is not read
    /// as immutable), and it cannot write.
    #[test]
    fn a_reader_sees_later_runs_and_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut writer = Store::open(&path).unwrap();
        writer.begin_run(&run(), &[]).unwrap();
        let reader = Store::open_reader(&path).unwrap();
        assert_eq!(reader.list_runs().unwrap().len(), 1);
        let mut second = run();
        second.id = format!("{}-2", second.id);
        writer.begin_run(&second, &[]).unwrap();
        assert_eq!(
            reader.list_runs().unwrap().len(),
            2,
            "the later run is seen"
        );
        let e = (reader.db().execute("DELETE FROM runs", &[])).expect_err("no write");
        assert!(format!("{e:#}").contains("readonly"), "{e:#}");
        assert_eq!(reader.list_runs().unwrap().len(), 2);
        let e = Store::open_reader(&dir.path().join("none.db"))
            .err()
            .unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
    }

    #[test]
    fn a_store_in_a_missing_directory_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let e = Store::open(&dir.path().join("no/such/x.db")).err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(format!("{e}").contains("does not exist; create it"), "{e}");
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn a_full_store_is_named_as_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        // SQLite reports a database at its page limit as full, as it does a full disk.
        let pages: i64 = store.db().query("PRAGMA page_count", &[]).unwrap()[0]
            .get(0)
            .unwrap();
        store
            .db()
            .batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let t = TargetInfo {
            name: "a".into(),
            engine: "sqlite".into(),
            ..Default::default()
        };
        let mut big = run();
        big.lab_text = "x".repeat(100_000);
        let e = store.begin_run(&big, &[t]).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("s.db: the results store's filesystem is full; free space there"),
            "{msg}"
        );
    }

    /// A measured step with every kind of field set: what a round trip must keep.
    fn full_measurement() -> Measurement {
        Measurement {
            target: "a".into(),
            step: "point-query".into(),
            ops: 10,
            events: 10,
            qps: Some(5.0),
            latency_us: Some(Latency {
                p50: 1.5,
                ..Default::default()
            }),
            values: Values::default().with(&[
                (Metric::PeakRss, (1u64 << 40) as f64),
                (Metric::RowsPerEvent, 41.5),
                (Metric::ScanKrows, 1234.5),
            ]),
            rows_per_statement: Some(vec![0.0, 1.0, 10.0]),
            instruction_pairs: Some(crate::results::InstructionPairs {
                events: 200,
                per_op: vec![41_000.0, 41_100.5],
                counter: Some("perf stat -e task-clock".into()),
                seeds: vec![1, 2],
                starts: vec![1, 2],
                background: Vec::new(),
                client: vec![900.0, 901.5],
            }),
            server_cpus_seen: Some("0".into()),
            server_cpus_allowed: Some("0-1".into()),
            client_cpus_seen: Some("1".into()),
            client_cpus_allowed: Some("1".into()),
            wakeup_bound: true,
            duration_rule: "adaptive".into(),
            precision_target: Some(0.01),
            precision_achieved: Some(0.0093),
            stop_reason: Some("precision".into()),
            operations: vec![
                crate::results::OpMeasurement {
                    role: "querier".into(),
                    op: "range".into(),
                    pacer: "closed".into(),
                    counted: true,
                    operations: 10,
                    units: 10,
                    series: vec![5, 5],
                    ..Default::default()
                },
                crate::results::OpMeasurement {
                    role: "inserter".into(),
                    op: "insert".into(),
                    pacer: "rate".into(),
                    target_ops_per_sec: Some(2.0),
                    ops_per_sec: Some(1.9),
                    response_us: Some(Latency {
                        max: 2.5e6,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    /// Every metric of the table has its column in `measurements`, of its kind: a new metric
    /// needs a migration that adds it.
    #[test]
    fn every_metric_has_a_column_of_its_kind() {
        let ddl = MIGRATIONS.concat();
        for d in crate::results::metrics::METRICS {
            let kind = if d.integer() { "INTEGER" } else { "REAL" };
            let column = format!("{} {kind}", d.id);
            assert!(ddl.contains(&column), "no migration creates `{column}`");
        }
    }

    #[test]
    fn round_trips_a_run_and_stays_incomplete_until_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut s = Store::open(&path).unwrap();
        let t = TargetInfo {
            name: "a".into(),
            engine: "sqlite".into(),
            placement: "shared".into(),
            client_cpus: Some("1".into()),
            ..Default::default()
        };
        s.begin_run(&run(), std::slice::from_ref(&t)).unwrap();
        let m = full_measurement();
        s.save_step("r1", &m, &[], &[], &[]).unwrap();
        let warm = Measurement {
            step: "scan.warm".into(),
            warm: true,
            ..m.clone()
        };
        s.save_step("r1", &warm, &[], &[], &[]).unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let data = s.load_run("r1").unwrap();
        assert!(!data.run.complete);
        assert_eq!(
            data.run.min_effect,
            Some(0.03),
            "the lab's min_effect is kept"
        );
        assert_eq!(data.measurements, vec![m, warm]);
        let t = TargetInfo {
            facts: crate::engine::facts(&t),
            ..t
        };
        assert_eq!(data.targets, vec![t], "read back with its engine's facts");
        assert_eq!(data.run.host, run().host);
        assert_eq!(s.resolve_run(None).unwrap(), "r1");
        assert!(s.resolve_run(Some("nope")).is_err());
        assert!(
            s.resolve_run(Some("previous")).is_err(),
            "one run has no previous"
        );
        assert_eq!(s.db().schema_version().unwrap(), schema_version());
    }
}
