//! What the store never keeps: a password or another secret. Every text value a statement
//! writes passes through [`redact_secrets`] (a URL's password, libpq's `password=`, a secret
//! environment value: `env = { PGPASSWORD = "…" }`), a JSON text string by string and member
//! by member, so whatever reaches a store — a lab's text, a target's environment, a server's
//! recorded settings and configuration, an error, the options of a run, a run pushed from an
//! older store — is kept without one.
//!
//! Owns [`Redacting`], the [`Db`] every [`super::Store`] writes through. Must not: change
//! what a query reads or matches (only written values are redacted), or know a table.

use std::borrow::Cow;

use anyhow::Result;

use super::sql::{Db, Lock, Row, Value};
use crate::engine::common::secret_env;
use crate::engine::connect::{REDACTED, redact_secrets};

/// A store's database, every text value it writes redacted.
pub struct Redacting(pub Box<dyn Db>);

impl Db for Redacting {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let kept: Vec<Option<String>> = params
            .iter()
            .map(|v| match v {
                Value::Text(t) => match kept(t) {
                    Cow::Owned(k) => Some(k),
                    Cow::Borrowed(_) => None,
                },
                _ => None,
            })
            .collect();
        if kept.iter().all(Option::is_none) {
            return self.0.execute(sql, params);
        }
        let params: Vec<Value> = (params.iter().zip(kept))
            .map(|(v, k)| k.map_or_else(|| v.clone(), Value::Text))
            .collect();
        self.0.execute(sql, &params)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        self.0.query(sql, params)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.0.batch(sql)
    }

    fn begin(&mut self, lock: Lock) -> Result<()> {
        self.0.begin(lock)
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.0.schema_version()
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.0.set_schema_version(version)
    }

    fn dialect(&self, migration: &str) -> String {
        self.0.dialect(migration)
    }

    fn try_hold(&mut self, key: i32) -> Result<bool> {
        self.0.try_hold(key)
    }

    fn commit(&mut self) -> Result<()> {
        self.0.commit()
    }

    fn rollback(&mut self) -> Result<()> {
        self.0.rollback()
    }
}

/// `text` as the store keeps it: JSON (an object or array) string by string, so that its
/// escapes cannot hide a password's end; other text as it is.
fn kept(text: &str) -> Cow<'_, str> {
    let plain = redact_secrets(text);
    if let Cow::Borrowed(_) = plain {
        return plain;
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(mut json) if json.is_object() || json.is_array() => {
            redact_strings(&mut json, false);
            Cow::Owned(json.to_string())
        }
        _ => plain,
    }
}

/// Every string of `json` (keys too) redacted, and the value of each member that names a
/// secret environment variable (`in_env`: `json` is an environment, the value of `"env"`).
fn redact_strings(json: &mut serde_json::Value, in_env: bool) {
    use serde_json::Value as J;
    match json {
        J::String(s) => {
            if let Cow::Owned(r) = redact_secrets(s) {
                *s = r;
            }
        }
        J::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, false)),
        J::Object(map) => {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, mut v)| {
                    match &mut v {
                        J::String(s) if secret_env::is_secret_where(&k, in_env, &[]) => {
                            *s = REDACTED.to_string();
                        }
                        _ => redact_strings(&mut v, k == "env"),
                    }
                    (redact_secrets(&k).into_owned(), v)
                })
                .collect();
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_redacted_string_by_string_and_other_text_as_it_is() {
        let settings = serde_json::json!({
            "primary_conninfo": "password = \"x y\" host=h",
            "password_encryption": "scram-sha-256",
            "n": [1.5, "postgres://u:pw@h/db"],
        });
        let text = settings.to_string();
        let kept = kept(&text);
        let back: serde_json::Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(back["primary_conninfo"], "password = \"***\" host=h");
        assert_eq!(back["password_encryption"], "scram-sha-256");
        assert_eq!(back["n"], serde_json::json!([1.5, "postgres://u:***@h/db"]));
        assert!(matches!(super::kept("{\"a\": \"b\"}"), Cow::Borrowed(_)));
        assert_eq!(
            super::kept("[x] postgres://u:pw@h"),
            "[x] postgres://u:***@h"
        );
        // A target's environment: its secret values, whatever escapes they hold.
        let env = serde_json::json!({"PGPASSWORD": "a\"b", "PATH": "/bin"}).to_string();
        assert_eq!(super::kept(&env), r#"{"PATH":"/bin","PGPASSWORD":"***"}"#);
    }
}
