//! What a MySQL/MariaDB server tells about itself: the error log's lines since a start, the
//! version label, effective settings, InnoDB's background work and the data directory's size.
//! Must not: change any setting or write to the server.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::Background;
use crate::engine::common::mywire::MyConn;

/// Total bytes of the files under `dir` (MyRocks' size: the reference's `du -bs .rocksdb`).
pub(super) fn dir_bytes(dir: &Path) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let meta = entry.path().symlink_metadata().ok()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Some(total)
}

/// The log text appended since byte `start`.
pub(super) fn read_from(log: &Path, start: u64) -> String {
    let bytes = std::fs::read(log).unwrap_or_default();
    let start = usize::try_from(start).unwrap_or(0).min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The server's `[ERROR]` lines of a log, without their timestamps.
pub(super) fn error_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.find("[ERROR]").map(|i| l[i..].trim().to_string()))
        .collect()
}

/// The cause of a failed initialisation in its output: the server's `[ERROR]` lines, else the
/// tool's first two lines (install-db's own complaints come first, its advice after).
pub(super) fn cause_lines(output: &str) -> Vec<String> {
    let errors = error_lines(output);
    if !errors.is_empty() {
        return errors;
    }
    (output.lines().map(str::trim))
        .filter(|l| !l.is_empty())
        .take(2)
        .map(str::to_string)
        .collect()
}

/// `VERSION()` as recorded: MariaDB's says so itself; Oracle MySQL's gets a `MySQL ` prefix.
pub(in crate::engine) fn version_label(version: String) -> String {
    if version.contains("MariaDB") {
        version
    } else {
        format!("MySQL {version}")
    }
}

/// `SHOW GLOBAL VARIABLES` as recorded settings: the per-cell paths are written relative to
/// the data directory (`<data_dir>`, `<socket>`) and the random port is left out, so two
/// targets differ only where their configuration does.
pub(super) fn effective_settings(
    vars: Vec<(String, Option<String>)>,
    data_dir: &Path,
    socket: &Path,
    basedir: Option<&Path>,
) -> BTreeMap<String, String> {
    let dir = data_dir.to_string_lossy();
    let sock = socket.to_string_lossy();
    let base = basedir.map(|b| b.to_string_lossy().trim_end_matches('/').to_string());
    vars.into_iter()
        .filter(|(name, _)| name != "port")
        .map(|(name, value)| {
            let value = value.unwrap_or_default();
            let value = value.replace(sock.as_ref(), "<socket>");
            let value = value.replace(dir.as_ref(), "<data_dir>");
            let value = match &base {
                Some(b) if !b.is_empty() => value.replace(b.as_str(), "<basedir>"),
                _ => value,
            };
            (name, value)
        })
        .collect()
}

/// InnoDB's account of its background work: dirty pages and the purge backlog (the history
/// list length from `INNODB_METRICS`, enabled by default since 5.6). A read that fails is `None`.
pub(super) fn innodb_background(conn: &mut MyConn) -> Background {
    let number = |v: Option<String>| v.and_then(|v| v.trim().parse().ok());
    let dirty = conn
        .rows("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        .ok()
        .and_then(|rows| rows.into_iter().next()?.into_iter().nth(1).flatten());
    let history = conn
        .first(
            "SELECT count FROM information_schema.INNODB_METRICS \
             WHERE name = 'trx_rseg_history_len'",
        )
        .ok()
        .flatten();
    Background {
        dirty_pages: number(dirty),
        history_length: number(history),
        ..Default::default()
    }
}
