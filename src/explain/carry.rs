//! Which of a target's setting differences from its base a twin can take: the base's value of
//! a setting the target also has, that is a setting at all (not where the server keeps its
//! files, which port it listens on, an id or a secret) and not the build's own identity.
//!
//! Owns that sorting and the reasons given for what is left out. Must not: read the store or
//! start anything.

use crate::report::model::Difference;

/// A setting a twin gets the base's value of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    pub key: String,
    pub base: String,
    pub target: String,
}

/// Where a server keeps its files and how it is reached, beyond the report's own list
/// ([`crate::report::is_place`]): any two servers differ there, and a twin must keep its own
/// (normalised: lower case, `-` as `_`).
const PLACES: &[&str] = &[
    "mysqlx_port",
    "mysqlx_socket",
    "admin_port",
    "external_pid_file",
    "character_sets_dir",
    "listen_addresses",
    "bind_address",
    "log_directory",
    "hostname",
    "library",
];

/// Fragments of names that are identities or secrets, never settings to carry: versions, ids,
/// how the build was compiled and passwords.
const IDENTITIES: &[&str] = &[
    "version",
    "uuid",
    "server_id",
    "compile",
    "source_id",
    "password",
    "secret",
    "ssl_",
];

/// How the names of paths and keys end (a fragment would also catch `innodb_log_file_size`).
const PATH_ENDINGS: &[&str] = &["_key", "_file", "_dir", "_path"];

/// A setting's name as servers compare them: lower case, `_` for `-`.
pub fn normal(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// Why `d` cannot be carried over to a twin; `None`: it can.
pub fn left_out(d: &Difference) -> Option<&'static str> {
    let k = normal(&d.key);
    if PLACES.contains(&k.as_str()) || crate::report::is_place(&k) {
        return Some("a path, port or address");
    }
    if IDENTITIES.iter().any(|f| k.contains(f)) || PATH_ENDINGS.iter().any(|e| k.ends_with(e)) {
        return Some("an id, version, path or secret");
    }
    match (&d.base, &d.target) {
        (_, None) => Some("the target has no such setting"),
        (None, _) => Some("the base has no such setting"),
        _ => None,
    }
}

/// `diffs` (in the report's order: the lab's, then the performance-shaping ones first) split
/// into what a twin takes and what is left out, each of those as `key (why)`.
pub fn split(diffs: &[Difference]) -> (Vec<Carried>, Vec<String>) {
    let mut carried = Vec::new();
    let mut out = Vec::new();
    for d in diffs {
        match (left_out(d), &d.base, &d.target) {
            (None, Some(base), Some(target)) => carried.push(Carried {
                key: d.key.clone(),
                base: base.clone(),
                target: target.clone(),
            }),
            (why, _, _) => out.push(format!("{} ({})", d.key, why.unwrap_or("no value"))),
        }
    }
    (carried, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(key: &str, base: Option<&str>, target: Option<&str>) -> Difference {
        Difference {
            key: key.into(),
            base: base.map(String::from),
            target: target.map(String::from),
        }
    }

    #[test]
    fn settings_carry_and_places_ids_secrets_and_missing_ones_do_not() {
        let diffs = [
            d("innodb_adaptive_hash_index", Some("ON"), Some("OFF")),
            d("cache_size", Some("-2000"), Some("10")),
            d("port", Some("5432"), Some("5433")),
            d("data_directory", Some("/a"), Some("/b")),
            d("server_uuid", Some("x"), Some("y")),
            d("innodb_version", Some("8.0.31"), Some("9.7.4")),
            d("ssl_key", Some("a.pem"), Some("b.pem")),
            d("query_cache_type", Some("ON"), None),
            d("innodb_redo_log_capacity", None, Some("104857600")),
            d("compile_options", Some("A"), Some("B")),
            d("innodb_log_file_size", Some("50331648"), Some("100663296")),
            d("relay_log_info_file", Some("a"), Some("b")),
        ];
        let (carried, out) = split(&diffs);
        let keys: Vec<&str> = carried.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "innodb_adaptive_hash_index",
                "cache_size",
                "innodb_log_file_size"
            ]
        );
        assert_eq!(carried[1].base, "-2000");
        assert_eq!(out.len(), 9, "{out:?}");
        assert!(out.contains(&"query_cache_type (the target has no such setting)".to_string()));
        assert!(out.contains(&"port (a path, port or address)".to_string()));
    }
}
