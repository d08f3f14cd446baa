//! The "postwrite" cleanup after a load or a write-heavy step: InnoDB (`ANALYZE TABLE`, a forced
//! dirty-page flush, settings restored) and MyRocks (memtable flush, compactions waited out).
//! Must not: run outside the budget `Server::postwrite` is given, or leave a setting changed.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::engine::common::mywire::MyConn;

/// How often postwrite polls the number of dirty pages.
pub(super) const FLUSH_POLL: Duration = Duration::from_millis(100);

/// The InnoDB settings postwrite forces (docs/workloads.md, The postwrite cleanup), in the order
/// they are set; they are restored in reverse order. A server without one skips it.
pub(super) const FLUSH_SETTINGS: &[(&str, &str)] = &[
    ("innodb_max_dirty_pages_pct_lwm", "1"),
    ("innodb_max_dirty_pages_pct", "1"),
    ("innodb_idle_flush_pct", "100"),
];

/// MyRocks' postwrite (docs/workloads.md, The postwrite cleanup): how often to look for running
/// compactions, how long to let the memtable flush settle, how to see compactions (Facebook's MySQL
/// lists the running ones; MariaDB only says per column family whether one is pending), and how to
/// compact L0 (Facebook's variable, then MariaDB's).
const ROCKSDB_COMPACTION_POLL: Duration = Duration::from_secs(10);

const ROCKSDB_FLUSH_WAIT: Duration = Duration::from_secs(20);

const ROCKSDB_COMPACTIONS: &[&str] = &[
    "SELECT COUNT(*) FROM information_schema.rocksdb_active_compaction_stats",
    "SELECT CAST(COALESCE(SUM(VALUE), 0) AS UNSIGNED) FROM information_schema.ROCKSDB_CFSTATS \
     WHERE STAT_TYPE = 'COMPACTION_PENDING'",
];

const ROCKSDB_LZERO: &[&str] = &[
    "rocksdb_compact_lzero_now",
    "rocksdb_force_flush_memtable_and_lzero_now",
];

/// Server error codes the engine treats specially (retryable and reconnect codes: `mywire`).
pub(super) const ER_UNKNOWN_SYSTEM_VARIABLE: u16 = 1193;

const ER_UNKNOWN_TABLE: u16 = 1109;

/// InnoDB's postwrite (docs/workloads.md, The postwrite cleanup): force the dirty pages out until
/// none is left or the deadline passes, then restore the settings.
pub(super) fn innodb_postwrite(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
    let mut saved = Vec::new();
    for (name, _) in FLUSH_SETTINGS {
        match conn.first(&format!("SELECT @@GLOBAL.{name}")) {
            Ok(Some(v)) => saved.push((*name, v)),
            Ok(None) => {}
            Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
            Err(e) => return Err(e).with_context(|| format!("reading {name}")),
        }
    }
    let flushed = flush_dirty(conn, deadline).context("flushing dirty pages");
    let mut restored = Ok(());
    for (name, value) in saved.iter().rev() {
        if let Err(e) = conn.query(&format!("SET GLOBAL {name} = {value}")) {
            restored = Err(e).with_context(|| format!("restoring {name} = {value}"));
        }
    }
    flushed.and(restored)
}

/// MyRocks' postwrite (docs/workloads.md, The postwrite cleanup): wait (polling every 10 s) until
/// no compaction runs, flush the memtable, wait 20 s, compact L0, then wait out the deadline. Every
/// wait ends at the deadline, or at once on a terminating signal (the run is ending).
pub(super) fn rocksdb_postwrite(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
    let sleep_until = |until: Instant| {
        crate::signals::sleep(
            until
                .min(deadline)
                .saturating_duration_since(Instant::now()),
        )
    };
    loop {
        if rocksdb_compactions(conn)? == 0 || Instant::now() >= deadline {
            break;
        }
        if !sleep_until(Instant::now() + ROCKSDB_COMPACTION_POLL) {
            return Ok(());
        }
    }
    conn.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        .context("SET GLOBAL rocksdb_force_flush_memtable_now = 1")?;
    if !sleep_until(Instant::now() + ROCKSDB_FLUSH_WAIT) {
        return Ok(());
    }
    let mut compacted = false;
    for name in ROCKSDB_LZERO {
        match conn.query(&format!("SET GLOBAL {name} = 1")) {
            Ok(_) => {
                compacted = true;
                break;
            }
            Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
            Err(e) => return Err(e).with_context(|| format!("SET GLOBAL {name} = 1")),
        }
    }
    if !compacted {
        bail!(
            "MyRocks postwrite: the server has none of {} to compact L0",
            ROCKSDB_LZERO.join(", ")
        );
    }
    sleep_until(deadline);
    Ok(())
}

/// Compactions running (Facebook's MySQL) or pending (MariaDB, which has no list of running
/// ones): the first query the server knows.
fn rocksdb_compactions(conn: &mut MyConn) -> anyhow::Result<u64> {
    for sql in ROCKSDB_COMPACTIONS {
        match conn.first(sql) {
            Ok(v) => return Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0)),
            Err(e) if e.code() == Some(ER_UNKNOWN_TABLE) => {}
            Err(e) => return Err(e).with_context(|| sql.to_string()),
        }
    }
    bail!("MyRocks postwrite: the server has no table of RocksDB compactions")
}

/// Force the dirty pages out and wait until none is left or the deadline passes.
fn flush_dirty(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
    for (name, value) in FLUSH_SETTINGS {
        match conn.query(&format!("SET GLOBAL {name} = {value}")) {
            Ok(_) => {}
            Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
            Err(e) => return Err(e).with_context(|| format!("SET GLOBAL {name}")),
        }
    }
    loop {
        let dirty = conn.rows("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")?;
        let dirty: Option<u64> = dirty
            .first()
            .and_then(|r| r.get(1)?.as_deref()?.parse().ok());
        if dirty.is_none_or(|n| n == 0) || Instant::now() >= deadline {
            return Ok(());
        }
        if !crate::signals::sleep(
            FLUSH_POLL.min(deadline.saturating_duration_since(Instant::now())),
        ) {
            return Ok(());
        }
    }
}
