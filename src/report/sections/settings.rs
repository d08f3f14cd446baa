//! Which of a target's setting differences from its base a reader needs first.
//!
//! Owns the order of `TargetSummary::settings_diff`: first the settings the lab set (a key in
//! either side's config or settings lines), then those that shape performance (buffer pool and
//! caches, redo/WAL, binlog, durability, IO, planner costs, parallelism, performance schema),
//! then the rest by name, then administrative ones named like a performance family (WAL
//! summaries, `allow_alter_system`), and last where the server keeps its files (paths, ports). Two
//! servers of different versions differ in hundreds of defaults (MySQL 8.0 vs 5.6: 332), and an
//! alphabetical list put `admin_ssl_*` first and cut the InnoDB and binlog ones. It must not
//! read the store or format anything.

use std::collections::BTreeSet;

use super::super::model::Difference;

/// Setting name fragments that shape performance, most telling first (after normalising `-` to
/// `_` and lower case): memory, WAL/redo and durability, IO, planner costs, parallelism,
/// instrumentation. A key's rank is the position of the first fragment it contains.
const PERFORMANCE: &[&str] = &[
    // memory for data: buffer pools and caches
    "buffer_pool_size",
    "shared_buffers",
    "effective_cache_size",
    "key_buffer_size",
    "block_cache",
    "query_cache_size",
    "table_open_cache",
    "work_mem",
    "temp_buffers",
    "huge_pages",
    "_buffers",
    "buffer_usage_limit",
    // redo and WAL
    "redo_log_capacity",
    "log_file_size",
    "log_files_in_group",
    "log_buffer_size",
    "max_wal_size",
    "min_wal_size",
    "wal_buffers",
    "wal_level",
    "wal_compression",
    "wal_",
    "checkpoint",
    "commit_delay",
    "commit_siblings",
    "journal_mode",
    // binlog
    "log_bin",
    "binlog",
    "sync_binlog",
    // durability
    "flush_log_at_trx_commit",
    "synchronous_commit",
    "synchronous",
    "fsync",
    "full_page_writes",
    "doublewrite",
    "flush_method",
    // IO and background work
    "io_capacity",
    "read_io_threads",
    "write_io_threads",
    "io_concurrency",
    "io_combine_limit",
    "io_method",
    "io_workers",
    "_flush_after",
    "bgwriter",
    "purge_threads",
    "page_cleaners",
    "autovacuum",
    "change_buffer",
    "adaptive_hash_index",
    // planner costs
    "random_page_cost",
    "seq_page_cost",
    "_cost",
    "enable_",
    "default_statistics_target",
    "collapse_limit",
    "geqo",
    "jit",
    // parallelism
    "parallel",
    "max_worker_processes",
    "thread_concurrency",
    "thread_pool",
    // instrumentation
    "performance_schema",
    "track_io_timing",
];

/// Fragments of settings that look like a performance family by name but only administer the
/// server (WAL summaries kept for incremental backups, who may `ALTER SYSTEM`, tracing) or
/// report a state (`huge_pages_status`): they rank after every other setting but the places.
const ADMINISTRATIVE: &[&str] = &[
    "huge_pages_status",
    "wal_summary",
    "summarize_wal",
    "allow_alter_system",
    "trace_",
    "debug_",
];

/// Settings a reader of a performance report needs whole: SQLite's pragmas that shape its
/// cache, pages and locking (too short to match as fragments).
const EXACT: &[&str] = &[
    "cache_size",
    "page_size",
    "mmap_size",
    "temp_store",
    "locking_mode",
];

/// Where a server keeps its files, its identity and what dbdelta records around it (paths,
/// ports, random ids, how it was initialised): they differ between any two servers and say
/// nothing about performance, so they come last, even when a config line names them.
const PLACES: &[&str] = &[
    "basedir",
    "datadir",
    "data_directory",
    "socket",
    "port",
    "report_port",
    "server_uid",
    "server_uuid",
    "pid_file",
    "lc_messages_dir",
    "plugin_dir",
    "tmpdir",
    "log_error",
    "general_log_file",
    "slow_query_log_file",
    "hba_file",
    "ident_file",
    "config_file",
    "unix_socket_directories",
    "init",
    "auth",
    "env",
    "table_options",
];

/// Whether `key` names where a server keeps its files, its identity or what dbdelta records
/// around it (the [`PLACES`] list), which no other server can take.
pub fn is_place(key: &str) -> bool {
    PLACES.contains(&normal(key).as_str())
}

/// The keys named in config or settings lines (`key = value`, `key=value`, `--key=value`,
/// `PRAGMA key = value`), normalised.
pub(in crate::report) fn keys_set(config_text: &str) -> BTreeSet<String> {
    config_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| {
            let l = l.strip_prefix("PRAGMA ").unwrap_or(l);
            let key = l.split(['=', ' ']).next()?.trim_start_matches('-');
            (!key.is_empty()).then(|| normal(key))
        })
        .collect()
}

fn normal(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// The rank of `key`: 0 for a key the lab set, 1 + the fragment's position for a performance
/// setting, then everything else, then the administrative ones, then the places.
fn rank(key: &str, set: &BTreeSet<String>) -> usize {
    let k = normal(key);
    let rest = 1 + PERFORMANCE.len();
    if PLACES.contains(&k.as_str()) {
        return rest + 2;
    }
    if set.contains(&k) {
        return 0;
    }
    if EXACT.contains(&k.as_str()) {
        return 1;
    }
    if ADMINISTRATIVE.iter().any(|f| k.contains(f)) {
        return rest + 1;
    }
    match PERFORMANCE.iter().position(|f| k.contains(f)) {
        Some(i) => 1 + i,
        None => rest,
    }
}

/// Sorts `diffs` as the module doc says: set by the lab, then performance, then by name.
pub(in crate::report) fn order(diffs: &mut [Difference], set: &BTreeSet<String>) {
    diffs.sort_by(|a, b| (rank(&a.key, set), &a.key).cmp(&(rank(&b.key, set), &b.key)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(key: &str) -> Difference {
        Difference {
            key: key.into(),
            base: Some("1".into()),
            target: Some("2".into()),
        }
    }

    #[test]
    fn lab_keys_then_performance_then_the_rest() {
        let set = keys_set(
            "# mine\n[mysqld]\ninnodb-io-capacity = 2000\nsort_buffer_size=1M\nbasedir = /opt/x\n",
        );
        assert!(set.contains("innodb_io_capacity") && set.contains("sort_buffer_size"));
        let mut diffs: Vec<Difference> = [
            "admin_ssl_ca",
            "basedir",
            "metadata_locks_cache_size",
            "admin_port",
            "binlog_format",
            "innodb_buffer_pool_size",
            "innodb_io_capacity",
            "performance_schema",
            "innodb_redo_log_capacity",
            "sort_buffer_size",
            "innodb_flush_log_at_trx_commit",
        ]
        .map(d)
        .to_vec();
        order(&mut diffs, &set);
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "innodb_io_capacity",
                "sort_buffer_size",
                "innodb_buffer_pool_size",
                "innodb_redo_log_capacity",
                "binlog_format",
                "innodb_flush_log_at_trx_commit",
                "performance_schema",
                "admin_port",
                "admin_ssl_ca",
                "metadata_locks_cache_size",
                "basedir",
            ]
        );
    }

    /// PostgreSQL 17 vs 16 at their defaults differ mostly in settings 17 added: the memory,
    /// IO and planner ones come first, the WAL summaries (backups) and who may `ALTER SYSTEM`
    /// after the rest, though their names start like WAL's.
    #[test]
    fn postgres_17_vs_16_starts_with_memory_io_and_planner() {
        let mut diffs: Vec<Difference> = [
            "allow_alter_system",
            "wal_summary_keep_time",
            "summarize_wal",
            "data_directory",
            "transaction_timeout",
            "enable_group_by_reordering",
            "io_combine_limit",
            "commit_timestamp_buffers",
            "db_user_namespace",
            "max_parallel_workers",
            "server_version_num",
            "trace_connection_negotiation",
            "huge_pages_status",
            "vacuum_buffer_usage_limit",
        ]
        .map(d)
        .to_vec();
        order(&mut diffs, &BTreeSet::new());
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "commit_timestamp_buffers",
                "vacuum_buffer_usage_limit",
                "io_combine_limit",
                "enable_group_by_reordering",
                "max_parallel_workers",
                "db_user_namespace",
                "server_version_num",
                "transaction_timeout",
                "allow_alter_system",
                "huge_pages_status",
                "summarize_wal",
                "trace_connection_negotiation",
                "wal_summary_keep_time",
                "data_directory",
            ]
        );
    }

    #[test]
    fn sqlite_pragmas_and_postgres_settings_are_keys() {
        let set = keys_set("PRAGMA synchronous = NORMAL\nshared_buffers = '1GB'\n");
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            ["shared_buffers", "synchronous"]
        );
    }
}
