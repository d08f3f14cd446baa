//! How `dbdelta serve` writes a run id, a lab or a step into a link: percent-encoded, as a
//! path segment or a query value. Must not: build whole links or pages (`pages`, `chart` do).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What [`enc`] escapes: all but RFC 3986's unreserved characters.
const ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A path segment or query value, percent-encoded.
pub fn enc(s: &str) -> String {
    utf8_percent_encode(s, ESCAPED).to_string()
}
