//! Where a lab file says what: its text located for messages ([`LabText`]) and one
//! `[suite.NAME]` table handed to the suite that owns it ([`Section`]).
//!
//! Owns turning a span of the lab file into `origin:line: [section] key: message`, and
//! deserializing a suite's table with its spans kept (so a suite's own checks name the line).
//! Must not: know any suite's keys or any other section's.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeValue, ValueDeserializer};

use super::known_keys;

use crate::error::InputError;

/// A lab file's text, to say where a value was written: `origin:line: [section] key`.
pub struct LabText<'a> {
    text: &'a str,
    origin: &'a str,
}

impl<'a> LabText<'a> {
    pub fn new(text: &'a str, origin: &'a str) -> Self {
        LabText { text, origin }
    }

    /// The whole file.
    pub fn text(&self) -> &'a str {
        self.text
    }

    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    /// The `[section]` header in force at `line`, e.g. `[suite.sysbench]` or `[[target]]`.
    pub fn section_at(&self, line: usize) -> Option<&str> {
        self.text
            .lines()
            .take(line)
            .map(str::trim)
            .filter(|l| l.starts_with('['))
            .last()
            .map(|l| l.split('#').next().unwrap_or(l).trim())
    }

    fn key_at(&self, line: usize) -> Option<&str> {
        let l = self.text.lines().nth(line.checked_sub(1)?)?.trim();
        if l.starts_with('[') {
            return None;
        }
        let (key, _) = l.split_once('=')?;
        Some(key.trim())
    }

    /// `origin:line: [section] key`: where a value was written, for messages given later.
    pub fn locate(&self, span: Range<usize>) -> String {
        let line = self.line_of(span.start);
        let mut out = format!("{}:{line}:", self.origin);
        if let Some(section) = self.section_at(line) {
            out.push(' ');
            out.push_str(section);
        }
        if let Some(key) = self.key_at(line) {
            out.push(' ');
            out.push_str(key);
        }
        out
    }

    /// `origin:line: [section] key: message`.
    pub fn error_at(&self, span: Range<usize>, message: impl AsRef<str>) -> InputError {
        let line = self.line_of(span.start);
        let mut out = format!("{}:{line}: ", self.origin);
        if let Some(section) = self.section_at(line) {
            out.push_str(section);
            out.push(' ');
        }
        let message = message.as_ref();
        if let Some(key) = self.key_at(line)
            && !message.contains(&format!("`{key}`"))
        {
            out.push_str(key);
            out.push_str(": ");
        }
        out.push_str(message);
        InputError(out)
    }

    pub fn error(&self, message: impl AsRef<str>) -> InputError {
        InputError(format!("{}: {}", self.origin, message.as_ref()))
    }
}

/// One `[suite.NAME]` table of a lab (or none, for a suite that runs when the lab names no
/// suite), with the file it is in.
pub struct Section<'a> {
    pub(crate) value: Option<Spanned<DeValue<'a>>>,
    pub(crate) lab: &'a LabText<'a>,
}

impl<'a> Section<'a> {
    /// The table as `T` with its span; `None` when the lab has no such table. A key `T` does
    /// not know, or a value of the wrong type, is bad input naming its line.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<Option<Spanned<T>>, InputError> {
        let Some(value) = self.value.clone() else {
            return Ok(None);
        };
        let span = value.span();
        if let Some(table) = known_keys::table(&value) {
            let found = known_keys::unknown_in(table, known_keys::of::<T>());
            if let Some(e) = known_keys::error(self.lab, found) {
                return Err(e);
            }
        }
        let parsed = T::deserialize(ValueDeserializer::from(value)).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            self.lab
                .error_at(e.span().unwrap_or(span.clone()), msg.trim())
        })?;
        Ok(Some(Spanned::new(span, parsed)))
    }

    /// `origin:line: [section] key: message` for a value at `span`.
    pub fn error_at(&self, span: Range<usize>, message: impl AsRef<str>) -> InputError {
        self.lab.error_at(span, message)
    }

    /// `origin:line: [section] key: message` at the line of `key`'s value; at the section's
    /// when the lab leaves the key out (its default can be wrong only next to another key).
    pub fn key_error(&self, key: &str, message: impl AsRef<str>) -> InputError {
        let span = self
            .value
            .as_ref()
            .map(|table| match table.get_ref().get(key) {
                Some(value) => value.span(),
                None => table.span(),
            });
        self.lab.error_at(span.unwrap_or(0..0), message)
    }

    /// Each `(key, value, range)` of seconds the lab gave (`None`: left out) within its range;
    /// else the first that is not, at its key's line, with the range.
    pub fn check_secs(
        &self,
        keys: &[(&str, Option<f64>, crate::range::Secs)],
    ) -> Result<(), InputError> {
        for &(key, v, range) in keys {
            if let Some(v) = v {
                range.check(key, v).map_err(|e| self.key_error(key, e))?;
            }
        }
        Ok(())
    }

    /// `origin:line: [section] key`: where a value was written.
    pub fn locate(&self, span: Range<usize>) -> String {
        self.lab.locate(span)
    }
}
