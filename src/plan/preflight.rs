//! Preflight: what a run needs of this host, checked before anything is loaded — the tools
//! its options call for ([`tools`]: valgrind to count instructions, perf to profile), every
//! server it starts able to run ([`servers`]) and how much space its data directories need
//! against the work directory's filesystem.
//!
//! The estimate is rows × bytes per row (the suite's table and indexes, measured once per
//! engine family and given by the suite, `SuiteSettings::disk_rows`) × tables, plus each engine's fixed files (catalog,
//! redo/WAL). Cells run one at a time and each suite loads into a fresh data directory that
//! is removed after it (unless `--keep`), so the run needs the largest one target × suite
//! needs; with `--keep` every directory stays and the needs add up. A `connect` target keeps its
//! data on its own server, a remote one (`host`) on its host: they need nothing here. Must not: create, write or remove anything
//! (it reads `statvfs` and runs the tools' own checks), or time anything.

use std::path::{Path, PathBuf};

use crate::engine::EngineKind;
use crate::error::InputError;
use crate::plan::{RunPlan, TargetPlan};

/// How much more (or less) an engine stores per row than PostgreSQL, in percent: InnoDB's
/// clustered index and page fill, MyRocks' compression, SQLite's compact records.
fn engine_factor(t: &TargetPlan) -> u64 {
    t.engine.family().disk_percent(&t.tables)
}

/// Files an engine writes whatever the data: PostgreSQL's catalog and first WAL segments (a
/// fresh PostgreSQL 15 cluster is 39 MB), InnoDB's system tablespace, redo and undo logs
/// (MariaDB 10.11's redo log alone is 96 MiB).
fn fixed_bytes(engine: EngineKind) -> u64 {
    engine.family().fixed_bytes()
}

/// Each suite of the plan with the most rows it holds at once and its bytes per row with
/// indexes (PostgreSQL heap + B-trees; other engines scale it by [`engine_factor`]).
fn suite_rows(plan: &RunPlan) -> Vec<(&'static str, u64, u64)> {
    (plan.settings.iter())
        .map(|s| {
            let (rows, bytes) = s.disk_rows();
            (s.name(), rows, bytes)
        })
        .collect()
}

/// What the run needs on the work directory's filesystem, in bytes, and the target and suite
/// that need the most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskNeed {
    pub bytes: u64,
    /// The single largest data directory: `target suite`.
    pub largest: Option<String>,
}

/// The estimate for a plan (see the module doc).
pub fn disk_need(plan: &RunPlan) -> DiskNeed {
    let suites = suite_rows(plan);
    let mut total = 0u64;
    let mut largest: Option<(u64, String)> = None;
    // A running server's data is not ours, and a remote target's is on its own host.
    for t in (plan.targets.iter()).filter(|t| t.connect.is_none() && t.remote.is_none()) {
        for (suite, rows, row_bytes) in &suites {
            // Saturating: the lab's largest scales (10^12 rows × 1000 tables) overflow u64,
            // and such a need is refused as more than any filesystem has.
            let data = rows
                .saturating_mul(*row_bytes)
                .saturating_mul(engine_factor(t))
                / 100;
            let dir = fixed_bytes(t.engine).saturating_add(data);
            // `repeats = "auto"` may run up to `max_repeats` rounds.
            let rounds = plan.auto.map_or(plan.repeats, |a| a.max);
            let cells = u64::from(rounds) * plan.clients.len() as u64;
            total = total.saturating_add(dir.saturating_mul(cells));
            if largest.as_ref().is_none_or(|(b, _)| dir > *b) {
                largest = Some((dir, format!("{} {suite}", t.name).to_lowercase()));
            }
        }
    }
    let (one, name) = largest.map_or((0, None), |(b, n)| (b, Some(n)));
    DiskNeed {
        bytes: if plan.keep { total } else { one },
        largest: name,
    }
}

/// Free bytes for an unprivileged writer on the filesystem that holds `dir`, or would hold it
/// once created (its nearest existing ancestor), and that ancestor.
pub fn free_bytes(dir: &Path) -> std::io::Result<(PathBuf, u64)> {
    let abs = std::path::absolute(dir)?;
    let existing = abs
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` is written by statvfs before it is read.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok((existing, st.f_bavail.saturating_mul(st.f_frsize)))
}

/// Sizes for people: `1.2 GB`, `340 MB`, `12 kB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000_000 => format!("{:.0} kB", b / 1e3),
        1_000_000..1_000_000_000 => format!("{:.0} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

/// The estimate as one line for `--dry-run` and the run's start.
pub fn describe(need: &DiskNeed, free: Option<(&Path, u64)>) -> String {
    let largest = need
        .largest
        .as_deref()
        .map(|l| format!(", largest data directory: {l}"))
        .unwrap_or_default();
    let free = free
        .map(|(p, b)| format!("; {} free on {}", human(b), p.display()))
        .unwrap_or_default();
    format!("disk: about {} needed{largest}{free}", human(need.bytes))
}

/// The work directory, or the nearest of its ancestors that exists, must be a directory: a
/// file there is bad input before the store or anything else is created.
fn workdir_is_a_directory(dir: &Path) -> Result<(), InputError> {
    let Some(existing) = dir.ancestors().find(|p| p.exists()) else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    Err(InputError::new(format!(
        "--workdir {}: {} is a file, not a directory; name a directory (created when missing)",
        dir.display(),
        existing.display()
    )))
}

/// The tools the plan calls for, found and working here: valgrind (with vgdb) for a counting
/// pass that needs callgrind, perf for profiles. A missing one is bad input naming the option
/// and how to install it, before the first cell (not after every timed cell).
pub fn tools(plan: &RunPlan) -> Result<(), InputError> {
    if plan.instructions.is_some() {
        let (counter, _) = crate::counter::choose();
        counting_tools(plan, &counter, crate::counter::check)?;
    }
    if let Some(settings) = &plan.profile {
        crate::profiler::check(settings).map_err(|why| {
            InputError::new(format!(
                "--profile (or the lab's profile = true) records with perf: {why}"
            ))
        })?;
    }
    Ok(())
}

/// Valgrind is needed to count unless `counter` is perf (hardware counters count here) and
/// every target's engine names the server tasks serving its sessions
/// ([`crate::engine::EngineKind::server_tasks`]): then perf counts them all, and a host
/// without valgrind may still count.
fn counting_tools<T>(
    plan: &RunPlan,
    counter: &crate::counter::Counter,
    callgrind: impl FnOnce() -> Result<T, String>,
) -> Result<(), InputError> {
    let perf_alone = matches!(counter, crate::counter::Counter::Perf { .. })
        && plan.targets.iter().all(|t| t.engine.server_tasks());
    if perf_alone {
        return Ok(());
    }
    callgrind().map(drop).map_err(|why| {
        InputError::new(format!(
            "--instructions (or the lab's instructions = true) counts under valgrind: {why}"
        ))
    })
}

/// Every server this host starts can run: its program found (in `bin`, a fetched or built
/// directory, or the distribution's install) and answering `--version`. A target whose
/// version is not fetched yet, or whose build failed, is left to `prepare`; one on a running
/// server (`connect`) or another host (`host`) starts nothing here.
pub fn servers(plan: &RunPlan) -> Result<(), InputError> {
    let local = (plan.targets.iter())
        .filter(|t| t.connect.is_none() && t.remote.is_none() && t.broken.is_none())
        .filter(|t| t.bin.is_some() || (t.version.is_none() && t.build.is_none()));
    for t in local {
        crate::engine::check_server(t.engine, t.bin.as_deref(), &t.env)
            .map_err(|e| InputError::new(format!("target {}: {e:#}", t.name)))?;
    }
    Ok(())
}

/// Refuse a run whose work directory's filesystem cannot hold the estimate: bad input naming
/// both numbers and the fixes.
pub fn check(plan: &RunPlan) -> Result<DiskNeed, InputError> {
    workdir_is_a_directory(&plan.workdir)?;
    let need = disk_need(plan);
    let Ok((dir, free)) = free_bytes(&plan.workdir) else {
        return Ok(need);
    };
    if need.bytes > free {
        return Err(InputError::new(format!(
            "--workdir {}: the run needs about {} ({}) but {} has {} free; free some space, \
             point --workdir at a larger filesystem, or lower the lab's rows",
            plan.workdir.display(),
            human(need.bytes),
            need.largest.as_deref().unwrap_or("data directories"),
            dir.display(),
            human(free)
        )));
    }
    Ok(need)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpus::Machine;
    use crate::plan::{RunOptions, plan_on};

    fn plan(targets: &str, keep: bool) -> RunPlan {
        let text = format!(
            "[lab]\nname = \"disk\"\nclients = [1, 4]\nrepeats = 2\n{targets}\n\
             [suite.sysbench]\ntables = 2\nrows = 1_000_000\n"
        );
        let lab = crate::plan::lab::parse(&text, "lab.toml", Path::new(".")).unwrap();
        let opts = RunOptions {
            keep,
            ..RunOptions::default()
        };
        plan_on(lab, &opts, Machine::simple(2)).unwrap()
    }

    #[test]
    fn perf_alone_counts_without_valgrind_where_every_engine_names_its_server_tasks() {
        use crate::counter::Counter;
        let perf = Counter::Perf {
            event: "instructions:u".into(),
        };
        let no_valgrind = || Err::<(), _>("valgrind cannot run: install it".to_string());
        let lite_pg = plan(
            "[[target]]\nname = \"pg\"\nengine = \"postgres\"\n\
             [[target]]\nname = \"lite\"\nengine = \"sqlite\"\n",
            false,
        );
        assert!(counting_tools(&lite_pg, &perf, no_valgrind).is_ok());
        let e = counting_tools(&lite_pg, &Counter::Callgrind, no_valgrind).unwrap_err();
        assert!(e.to_string().contains("counts under valgrind"), "{e}");
        let mysql = plan(
            "[[target]]\nname = \"my\"\nengine = \"mysql\"\n\
             [[target]]\nname = \"lite\"\nengine = \"sqlite\"\n",
            false,
        );
        let e = counting_tools(&mysql, &perf, no_valgrind).unwrap_err();
        assert!(e.to_string().contains("install it"), "{e}");
        assert!(counting_tools(&mysql, &perf, || Ok::<(), String>(())).is_ok());
    }

    #[test]
    fn one_data_directory_at_a_time_unless_kept() {
        let targets = "[[target]]\nname = \"pg\"\nengine = \"postgres\"\n\
                       [[target]]\nname = \"lite\"\nengine = \"sqlite\"\n";
        let need = disk_need(&plan(targets, false));
        // PostgreSQL: 2 × 1M rows × 280 B + 48 MiB of fixed files.
        assert_eq!(need.bytes, 2_000_000 * 280 + (48 << 20));
        assert_eq!(need.largest.as_deref(), Some("pg sysbench"));
        // Kept: every cell's directory stays (2 client counts × 2 repeats per target).
        let kept = disk_need(&plan(targets, true));
        let sqlite = 2_000_000 * 280 * 90 / 100;
        assert_eq!(kept.bytes, 4 * need.bytes + 4 * sqlite);
    }

    #[test]
    fn a_work_directory_that_is_a_file_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("afile");
        std::fs::write(&file, "").unwrap();
        for workdir in [file.clone(), file.join("below")] {
            let e = workdir_is_a_directory(&workdir).unwrap_err().0;
            assert!(e.contains("is a file, not a directory"), "{e}");
        }
        workdir_is_a_directory(&dir.path().join("new/dir")).unwrap();
    }

    #[test]
    fn the_largest_scale_saturates_instead_of_overflowing() {
        let text = "[lab]\nname = \"big\"\n[[target]]\nname = \"m\"\nengine = \"mysql\"\n\
                    [suite.sysbench]\ntables = 1000\nrows = 1_000_000_000_000\n";
        let lab = crate::plan::lab::parse(text, "lab.toml", Path::new(".")).unwrap();
        let opts = RunOptions {
            keep: true,
            ..RunOptions::default()
        };
        let plan = plan_on(lab, &opts, Machine::simple(2)).unwrap();
        // More than any filesystem has (about 1.8e17 bytes), and no overflow panic.
        assert!(disk_need(&plan).bytes >= u64::MAX / 100);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(12_000), "12 kB");
        assert_eq!(human(340_000_000), "340 MB");
        assert_eq!(human(1_234_000_000), "1.2 GB");
    }

    #[test]
    fn free_space_is_read_from_the_nearest_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (at, free) = free_bytes(&dir.path().join("not/yet")).unwrap();
        assert_eq!(at, dir.path());
        assert!(free > 0);
    }
}
