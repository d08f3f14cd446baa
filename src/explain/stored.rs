//! T's settings as the explained run used them. The run stores its lab's text, which names a
//! target's `config =` file, and each target's settings lines (`TargetInfo::config_text`: the
//! file's lines, then the lab's `settings` list; a family that writes a config file of its own,
//! MySQL/MariaDB, stores that file, with the target's lines under its `# target settings` line
//! up to its `[dbdelta]` section). Planning the run again from the stored text reads the
//! `config =` file from disk as it is now; when its lines differ from the stored ones, T (and
//! so every twin, which starts from T's spec) takes the stored ones, and one line on standard
//! error names the file.
//!
//! Owns that comparison. Must not: read the store or a lab file (the caller hands it the run's
//! record and the plan), or start anything.

use std::path::Path;

use crate::console::errln;
use crate::engine::connect::{holds_redacted, redact_secrets};
use crate::error::InputError;
use crate::plan::TargetPlan;

/// How a config file dbdelta writes for a server starts, and the line its target's settings
/// follow, up to the last [`OWN_SECTION`] line.
const WRITTEN: &str = "# Written by dbdelta for ";
const TARGET_LINES: &str = "# target settings";
const OWN_SECTION: &str = "[dbdelta]";

/// Give `target` (planned again from run `run_id`'s stored lab) the settings lines the run
/// stored for it (`config_text`) when its lines now differ, saying so on standard error;
/// `lab` is the lab file, whose folder a relative `config =` path starts at. Bad input when
/// they differ and the stored lines hold a password the store does not keep.
pub fn use_stored(
    target: &mut TargetPlan,
    config_text: &str,
    run_id: &str,
    lab: Option<&Path>,
) -> Result<(), InputError> {
    let stored = stored_lines(config_text);
    let now_text = target.settings.join("\n");
    let now_redacted = redact_secrets(&now_text);
    let now: Vec<&str> = now_redacted.lines().collect();
    let Some(line) = first_difference(&stored, &now) else {
        return Ok(());
    };
    let what = match &target.config_name {
        Some(name) => format!("config file {}", shown(name, lab)),
        None => "the lab's settings".to_string(),
    };
    let differs = format!(
        "{what} of target {} differs from what run {run_id} used (line {}: {}, now {})",
        target.name,
        line + 1,
        quoted(stored.get(line)),
        quoted(now.get(line)),
    );
    if holds_redacted(config_text) {
        return Err(InputError::new(format!(
            "{differs}, and the run's stored lines hold a password the store does not keep: \
             restore the file to explain run {run_id}"
        )));
    }
    errln!(
        "explain: {differs}: {} is counted with the run's lines",
        target.name
    );
    target.settings = stored.iter().map(|l| l.to_string()).collect();
    Ok(())
}

/// The settings lines of a stored `config_text`: its lines, or in a config file dbdelta wrote
/// for a server, those under its target settings line.
fn stored_lines(config_text: &str) -> Vec<&str> {
    let lines: Vec<&str> = config_text.lines().collect();
    if !config_text.starts_with(WRITTEN) {
        return lines;
    }
    let Some(start) = lines.iter().position(|l| *l == TARGET_LINES) else {
        return lines;
    };
    let end = (lines.iter().rposition(|l| *l == OWN_SECTION))
        .filter(|&end| end > start)
        .unwrap_or(lines.len());
    lines[start + 1..end].to_vec()
}

/// The first line where `stored` and `now` differ (each trimmed, as a server's config file
/// writes them; blank lines at their ends ignored); `None`: they are the same.
fn first_difference(stored: &[&str], now: &[&str]) -> Option<usize> {
    let kept = |lines: &[&str]| -> Vec<String> {
        let mut out: Vec<String> = lines.iter().map(|l| l.trim().to_string()).collect();
        while out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        out
    };
    let (a, b) = (kept(stored), kept(now));
    let same = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    (a.len() != b.len() || same < a.len()).then_some(same)
}

/// A line in backticks, or `(none)`.
fn quoted(line: Option<&&str>) -> String {
    line.map_or_else(|| "(none)".to_string(), |l| format!("`{}`", l.trim()))
}

/// A `config =` path as written, with where it is when relative (the lab file's folder).
fn shown(name: &str, lab: Option<&Path>) -> String {
    let path = Path::new(name);
    match lab.and_then(Path::parent) {
        Some(dir) if path.is_relative() => format!("{name} ({})", dir.join(path).display()),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_written_config_gives_its_target_lines_and_any_other_text_its_lines() {
        let written = "# Written by dbdelta for MySQL 8.0.31 (mysql80): …\n[mysqld]\n\
                       # dbdelta's defaults\nmax_connections = 500\n# target settings\n\
                       [mysqld]\ninnodb_adaptive_hash_index = OFF\n\n[dbdelta]\ninit = x\n";
        assert_eq!(
            stored_lines(written),
            ["[mysqld]", "innodb_adaptive_hash_index = OFF", ""]
        );
        let plain = "cache_size = 10\n# target settings\nbusy_timeout = 5";
        assert_eq!(stored_lines(plain).len(), 3);
    }

    #[test]
    fn lines_differ_by_content_not_by_blank_ends_or_indentation() {
        assert_eq!(first_difference(&["a = 1", ""], &["  a = 1"]), None);
        assert_eq!(
            first_difference(&["a = 1", "b = 2"], &["a = 1", "b = 3"]),
            Some(1)
        );
        assert_eq!(first_difference(&["a = 1"], &["a = 1", "b = 2"]), Some(1));
        assert_eq!(first_difference(&[], &[]), None);
    }
}
