//! Which environment values are secrets: a target's `env` entry whose name holds `PASSWORD`,
//! `PWD`, `SECRET`, `TOKEN` or `KEY` (in any case), or that the lab names in
//! `[lab] secret_env = [...]`. Part of the crate's one redaction,
//! [`super::connect::redact_secrets`]: [`spans`] finds such values in free text (a lab's TOML,
//! a JSON text), [`redact_env`] replaces them in an environment map.
//!
//! In free text a name counts where it is an environment's: inside `env = { … }`, under an
//! `[….env]` table, after `env.`, in a JSON `"env": { … }` object; written as environment
//! variables are (no lower-case letter: `PGPASSWORD`), anywhere; and a name the text's own
//! `secret_env = [...]` lists, anywhere. So a server setting (`password_encryption`,
//! `key_buffer_size`) is never taken for one. Must not: decide what a URL's or libpq's
//! password is (`connect` does).

use std::collections::BTreeMap;
use std::ops::Range;

use super::connect::{REDACTED, assigned_value};

/// What an environment name holds, in upper case, for its value to be a secret.
pub const SECRET_PARTS: [&str; 5] = ["PASSWORD", "PWD", "SECRET", "TOKEN", "KEY"];

/// The lab key that names more secret environment names.
pub const LAB_KEY: &str = "secret_env";

/// Whether the value of the environment variable `name` is a secret: its name holds one of
/// [`SECRET_PARTS`] (in any case) or is one of `declared` (a lab's `secret_env`).
pub fn is_secret(name: &str, declared: &[String]) -> bool {
    let holds = |part: &str| {
        (name.as_bytes().windows(part.len())).any(|w| w.eq_ignore_ascii_case(part.as_bytes()))
    };
    SECRET_PARTS.iter().any(|p| holds(p)) || declared.iter().any(|d| d.eq_ignore_ascii_case(name))
}

/// Whether `name`, met in a text or a JSON object, names a secret value there: `in_env` says
/// it is known to be an environment's name; otherwise only a name written as environment
/// variables are (no lower-case letter) or one of `declared` counts.
pub fn is_secret_where(name: &str, in_env: bool, declared: &[String]) -> bool {
    let env_like = in_env || !name.chars().any(|c| c.is_ascii_lowercase());
    (env_like && is_secret(name, &[])) || declared.iter().any(|d| d.eq_ignore_ascii_case(name))
}

/// `env` as it may be shown or stored: each secret value (see [`is_secret`]) replaced by
/// [`REDACTED`].
pub fn redact_env(env: &BTreeMap<String, String>, declared: &[String]) -> BTreeMap<String, String> {
    (env.iter())
        .map(|(k, v)| {
            let shown = if is_secret(k, declared) && !v.is_empty() {
                REDACTED.to_string()
            } else {
                v.clone()
            };
            (k.clone(), shown)
        })
        .collect()
}

/// Where the secret environment values of `text` are: each `NAME = "value"` (`'value'`, a
/// bare value; `:` for JSON, a quoted `"NAME"`) whose name counts there.
pub fn spans(text: &str) -> Vec<Range<usize>> {
    let declared = declared(text);
    let bytes = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') || (i > 0 && ident(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && ident(bytes[i]) {
            i += 1;
        }
        let name = &text[start..i];
        if !is_secret(name, &declared) {
            continue;
        }
        if let Some(span) = value_of(text, start, i)
            && is_secret_where(name, in_env(text, start), &declared)
        {
            i = span.end;
            out.push(span);
        }
    }
    out
}

/// The value assigned to the name at `start..end`: after its closing quote (when it opened
/// with one), blanks and `=` or `:`.
fn value_of(text: &str, start: usize, end: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let mut at = end;
    if start > 0
        && matches!(bytes[start - 1], b'"' | b'\'')
        && bytes.get(at) == Some(&bytes[start - 1])
    {
        at += 1;
    }
    let rest = text[at..].trim_start_matches([' ', '\t']);
    let after = rest.strip_prefix(['=', ':'])?;
    // `a == b` and `::` are no assignments.
    if after.starts_with(['=', ':']) {
        return None;
    }
    assigned_value(text, text.len() - after.len())
}

/// Whether the name at `at` is an environment's: after `env.`, inside `env = {` (or JSON's
/// `"env": {`) not yet closed, or under a `[….env]` table header.
fn in_env(text: &str, at: usize) -> bool {
    let before = &text[..at];
    let before_name = before.trim_end_matches(['"', '\'']);
    if before_name.ends_with("env.") {
        return true;
    }
    let opened = before.rfind('{');
    if let Some(open) = opened.filter(|&o| !before[o..].contains('}')) {
        let key = before[..open].trim_end();
        let key = key.strip_suffix(['=', ':']).unwrap_or(key).trim_end();
        if names_env(key.trim_end_matches(['"', '\''])) {
            return true;
        }
    }
    // The lines before the name's own.
    let above = &before[..before.rfind('\n').map_or(0, |n| n + 1)];
    let header = above
        .lines()
        .rev()
        .map(str::trim_start)
        .find(|l| l.starts_with('['));
    header.is_some_and(|h| {
        let h = h.trim_end();
        let inner = h.trim_start_matches('[').trim_end_matches(']');
        names_env(inner.trim().trim_end_matches(['"', '\'']))
    })
}

/// Whether a key path ends in the key `env` (`env`, `target.env`).
fn names_env(key: &str) -> bool {
    key.strip_suffix("env").is_some_and(|rest| {
        rest.is_empty() || rest.ends_with(['.', ' ', '\t', '"', '\'', '{', ',', '\n'])
    })
}

/// The names `text`'s own `secret_env = ["A", "B"]` lists (a lab's `[lab]` key), if any.
fn declared(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(LAB_KEY) {
        let rest = text[i + LAB_KEY.len()..].trim_start_matches(['"', '\'', ' ', '\t']);
        let Some(list) = rest.strip_prefix(['=', ':']).map(str::trim_start) else {
            continue;
        };
        let Some(list) = list.strip_prefix('[') else {
            continue;
        };
        let list = &list[..list.find(']').unwrap_or(list.len())];
        out.extend(
            (list.split(','))
                .map(|n| n.trim().trim_matches(['"', '\'', '\\']).trim())
                .filter(|n| !n.is_empty())
                .map(str::to_string),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::connect::{holds_redacted, redact_secrets};

    #[test]
    fn env_secrets_in_a_lab_are_redacted_and_settings_are_not() {
        let lab = "[lab]\nname = \"x\"\nsecret_env = [\"MY_CRED\", 'db_cred']\n\n\
                   [[target]]\nname = \"a\"\nenv = { PGPASSWORD = \"s1\", MYSQL_PWD = 's2', LD_PRELOAD = \"/l.so\", pgpassword = \"s3\" }\n\
                   settings = [\"password_encryption = 'scram-sha-256'\", \"key_buffer_size = 8M\", \"ssl_key_file = 'k.pem'\"]\n\n\
                   [[target]]\nname = \"b\"\n[target.env]\nMY_CRED = \"s4\"\napi_token = \"s5\"\nHOME = \"/h\"\n\n\
                   [[target]]\nname = \"c\"\nenv.db_cred = \"s6\"\n";
        let r = redact_secrets(lab);
        for s in ["s1", "s2", "s3", "s4", "s5", "s6"] {
            assert!(
                !r.contains(&format!("\"{s}\"")) && !r.contains(&format!("'{s}'")),
                "{s}: {r}"
            );
        }
        for kept in [
            "LD_PRELOAD = \"/l.so\"",
            "password_encryption = 'scram-sha-256'",
            "key_buffer_size = 8M",
            "ssl_key_file = 'k.pem'",
            "HOME = \"/h\"",
            "PGPASSWORD = \"***\"",
            "MY_CRED = \"***\"",
        ] {
            assert!(r.contains(kept), "{kept}: {r}");
        }
        assert!(holds_redacted(&r) && !holds_redacted(lab));
        assert_eq!(redact_secrets(&r), r, "redacting twice changes nothing");
    }

    #[test]
    fn env_secrets_in_json_and_maps() {
        let json = r#"{"name":"a","env":{"pgpassword":"s1","PATH":"/bin"},"x":{"AWS_SECRET_ACCESS_KEY":"s\"2"}}"#;
        let r = redact_secrets(json);
        assert_eq!(
            r,
            r#"{"name":"a","env":{"pgpassword":"***","PATH":"/bin"},"x":{"AWS_SECRET_ACCESS_KEY":"***"}}"#
        );
        let settings = r#"{"password_encryption":"scram-sha-256","key_buffer_size":"8388608"}"#;
        assert!(matches!(
            redact_secrets(settings),
            std::borrow::Cow::Borrowed(_)
        ));
        let env: BTreeMap<String, String> = [("MY_CRED", "c"), ("PGPASSWORD", "p"), ("PATH", "/b")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let shown = redact_env(&env, &["my_cred".to_string()]);
        assert_eq!(
            (
                shown["MY_CRED"].as_str(),
                shown["PGPASSWORD"].as_str(),
                shown["PATH"].as_str()
            ),
            ("***", "***", "/b")
        );
        // TOML's multi-line strings.
        let r = redact_secrets("env = { PGPASSWORD = \"\"\"a\nb\"\"\", X_TOKEN = '''c''' }");
        assert_eq!(
            r,
            "env = { PGPASSWORD = \"\"\"***\"\"\", X_TOKEN = '''***''' }"
        );
        // Shell-like text, as in an error message.
        assert_eq!(redact_secrets("PGPASSWORD=abc psql"), "PGPASSWORD=*** psql");
    }
}
