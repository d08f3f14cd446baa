//! A target's settings lines as a run stored them, against the lines its plan holds now. A run
//! stores each target's settings lines (`TargetInfo::config_text`: the `config =` file's lines,
//! then the lab's `settings` list; a family that writes a config file of its own,
//! MySQL/MariaDB, stores that file, with the target's lines under its `# target settings` line
//! up to its `[dbdelta]` section). Planning a run again from its stored lab text reads the
//! `config =` file from disk as it is now, so `run --resume` (which refuses a difference) and
//! `explain` (which counts with the stored lines) ask here whether the two differ.
//!
//! Owns that comparison and its wording. Must not: read the store (the caller hands it the
//! stored text), or start anything.

use std::path::Path;

use crate::engine::connect::redact_secrets;
use crate::plan::TargetPlan;

/// How a config file dbdelta writes for a server starts, and the line its target's settings
/// follow, up to the last [`OWN_SECTION`] line.
const WRITTEN: &str = "# Written by dbdelta for ";
const TARGET_LINES: &str = "# target settings";
const OWN_SECTION: &str = "[dbdelta]";

/// The first line where a target's settings now differ from those its run stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// `config file NAME (PATH)`, `config file NAME, which is gone (PATH)`, or `the lab's
    /// settings`.
    pub what: String,
    /// The 1-based line of the target's settings lines.
    pub line: usize,
    /// The stored line and the line now, each in backticks, or `(none)`.
    pub stored: String,
    pub now: String,
}

impl Difference {
    /// `WHAT of target T differs from what run R used (line N: `a`, now `b`)`.
    pub fn sentence(&self, target: &str, run_id: &str) -> String {
        format!(
            "{} of target {target} differs from what run {run_id} used (line {}: {}, now {})",
            self.what, self.line, self.stored, self.now
        )
    }
}

/// How `target`'s settings lines differ from `config_text`, the text its run stored for it
/// (secrets redacted on both sides, as the store keeps them); `None`: they are the same. `lab` is
/// the lab file, whose folder a relative `config =` path starts at.
pub fn difference(
    target: &TargetPlan,
    config_text: &str,
    lab: Option<&Path>,
) -> Option<Difference> {
    let stored = stored_lines(config_text);
    let joined = target.settings.join("\n");
    let now_text = redact_secrets(&joined);
    let now: Vec<&str> = now_text.lines().collect();
    let line = first_difference(&stored, &now)?;
    let what = match &target.config_name {
        Some(name) => config_file(name, lab),
        None => "the lab's settings".to_string(),
    };
    Some(Difference {
        what,
        line: line + 1,
        stored: quoted(stored.get(line)),
        now: quoted(now.get(line)),
    })
}

/// The settings lines of a stored `config_text`: its lines, or in a config file dbdelta wrote
/// for a server, those under its target settings line.
pub fn stored_lines(config_text: &str) -> Vec<&str> {
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

/// `config file NAME`, with where it is when relative (the lab file's folder), and whether it
/// is gone.
fn config_file(name: &str, lab: Option<&Path>) -> String {
    let path = Path::new(name);
    let full = match lab.and_then(Path::parent) {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    let gone = match full.exists() {
        true => "",
        false => ", which is gone",
    };
    match full.as_path() == path {
        true => format!("config file {name}{gone}"),
        false => format!("config file {name}{gone} ({})", full.display()),
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

    #[test]
    fn a_config_file_is_named_where_it_is_and_said_to_be_gone() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().join("lab.toml");
        std::fs::write(dir.path().join("a.conf"), "x = 1\n").unwrap();
        let here = config_file("a.conf", Some(&lab));
        assert_eq!(
            here,
            format!(
                "config file a.conf ({})",
                dir.path().join("a.conf").display()
            )
        );
        assert!(
            config_file("b.conf", Some(&lab)).starts_with("config file b.conf, which is gone (")
        );
    }
}
