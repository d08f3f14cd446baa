//! The keys a lab table may hold, and every key it holds that is not one of them.
//!
//! Owns reading a serde struct's field names from its derive ([`of`]) and the one message for
//! unknown keys: all of a lab's at once, each with its line and the near names
//! ([`crate::suggest`]). Must not: know any section's keys (callers pass their types) or check
//! values (serde does, after this).

use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::LabText;
use crate::error::InputError;

/// The field names `T`'s `Deserialize` accepts (a struct's, `rename`s applied), read by asking it
/// to deserialize from a source that only records what it is asked for.
pub fn of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

struct Probe<'a>(&'a mut &'static [&'static str]);

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's field names are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("only a struct's field names are read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// One key a table holds that its type does not know.
pub struct Unknown {
    pub key: String,
    pub span: Range<usize>,
    /// The names the table knows, for the suggestion.
    pub known: &'static [&'static str],
}

/// The keys of `table` not in `known`; none when `known` is empty (a type whose fields
/// cannot be read this way, a map or a flattened struct, leaves its keys to serde).
pub fn unknown_in(table: &DeTable<'_>, known: &'static [&'static str]) -> Vec<Unknown> {
    if known.is_empty() {
        return Vec::new();
    }
    (table.iter())
        .filter(|(k, _)| !known.contains(&k.get_ref().as_ref()))
        .map(|(k, _)| Unknown {
            key: k.get_ref().to_string(),
            span: k.span(),
            known,
        })
        .collect()
}

/// The table a value holds, if it is one.
pub fn table<'a, 'i>(value: &'a Spanned<DeValue<'i>>) -> Option<&'a DeTable<'i>> {
    match value.get_ref() {
        DeValue::Table(t) => Some(t),
        _ => None,
    }
}

/// Every unknown key as one line, each at its place with the names near it; `None` when there
/// is none. One key keeps serde's words (`unknown field `x`, expected one of …`).
pub fn error(src: &LabText<'_>, mut found: Vec<Unknown>) -> Option<InputError> {
    found.sort_by_key(|u| u.span.start);
    let hint = |u: &Unknown| match crate::suggest::near(&u.key, u.known.iter().copied()).as_slice()
    {
        [] => String::new(),
        n => format!(" (did you mean {}?)", quoted(n).join(" or ")),
    };
    match found.as_slice() {
        [] => None,
        [u] => {
            let all = quoted(u.known).join(", ");
            let msg = format!(
                "unknown field `{}`{}, expected one of {all}",
                u.key,
                hint(u)
            );
            Some(src.error_at(u.span.clone(), msg))
        }
        many => {
            let each: Vec<String> = (many.iter())
                .map(|u| {
                    let line = src.line_of(u.span.start);
                    let section = src.section_at(line).unwrap_or("top level");
                    format!("line {line} {section} `{}`{}", u.key, hint(u))
                })
                .collect();
            Some(src.error(format!(
                "{} unknown fields: {}; docs/lab.md lists every key",
                many.len(),
                each.join(", ")
            )))
        }
    }
}

fn quoted<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    names.iter().map(|n| format!("`{}`", n.as_ref())).collect()
}
