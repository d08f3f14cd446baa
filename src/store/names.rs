//! Run names and tags (`run --name`, `--tag`): written when a run begins, looked up by
//! `report`, `compare` and `list runs`.
//!
//! Owns what a name or tag may be, the `runs.name` column (unique in a store) and the
//! `run_tags` table. Must not: decide when a run starts (the CLI refuses a taken name before
//! it does, the unique index catches a race).

use anyhow::Result;

use super::Store;

/// What `run --name NAME --tag TAG…` gives a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunLabel {
    pub name: Option<String>,
    pub tags: Vec<String>,
    /// The run whose change this run's targets explain: a run of kind [`EXPLAIN`], which
    /// `latest`, `previous`, a lab's run list and its history leave out.
    pub explains: Option<String>,
    /// A run that measures the floors of a build (`dbdelta calibrate`): kind [`CALIBRATE`],
    /// left out as explain's are.
    pub calibrates: bool,
}

/// The kind of the run that holds `dbdelta explain`'s twins (`runs.kind`; NULL: a lab's run).
pub const EXPLAIN: &str = "explain";
/// The kind of the run that holds `dbdelta calibrate`'s A/A counts.
pub const CALIBRATE: &str = "calibrate";

/// A name or tag: starts with a letter (run ids start with a digit, so neither can be taken
/// for the other), then letters, digits, '.', '_' and '-', at most 64 characters; not
/// `latest` or `previous`. The error names `flag`.
pub fn check_label(flag: &str, text: &str) -> Result<(), String> {
    let ok_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let starts = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !ok_chars || !starts || text.len() > 64 {
        return Err(format!(
            "{flag} {text:?}: start with a letter, then letters, digits, '.', '_' or '-' (at most 64), e.g. {flag} pg17-baseline"
        ));
    }
    if text == "latest" || text == "previous" {
        return Err(format!(
            "{flag} {text}: `{text}` already means a run; pick another word"
        ));
    }
    Ok(())
}

impl Store {
    /// Give run `run_id` its name and tags (right after it begins).
    pub fn set_run_label(&mut self, run_id: &str, label: &RunLabel) -> Result<()> {
        let db = &mut **self.db.get_mut();
        let mut tx = super::Tx::begin(db, super::Lock::Shared)?;
        if let Some(name) = &label.name {
            tx.execute(
                "UPDATE runs SET name = ?2 WHERE id = ?1",
                &[run_id.into(), name.into()],
            )?;
        }
        if let Some(explained) = &label.explains {
            tx.execute(
                "UPDATE runs SET kind = ?2, explains = ?3 WHERE id = ?1",
                &[run_id.into(), EXPLAIN.into(), explained.into()],
            )?;
        }
        if label.calibrates {
            tx.execute(
                "UPDATE runs SET kind = ?2 WHERE id = ?1",
                &[run_id.into(), CALIBRATE.into()],
            )?;
        }
        for tag in &label.tags {
            tx.execute(
                "INSERT INTO run_tags (run_id, tag) VALUES (?1, ?2)",
                &[run_id.into(), tag.into()],
            )?;
        }
        tx.commit()
    }

    /// The id of the run called `name`.
    pub fn run_named(&self, name: &str) -> Result<Option<String>> {
        let rows = self
            .db()
            .query("SELECT id FROM runs WHERE name = ?1", &[name.into()])?;
        rows.first().map(|r| r.get(0)).transpose()
    }

    /// The run that run `run_id` holds `dbdelta explain`'s twins of; `None` for a lab's run.
    pub fn run_explained(&self, run_id: &str) -> Result<Option<String>> {
        let rows = self.db().query(
            "SELECT explains FROM runs WHERE id = ?1 AND kind = ?2",
            &[run_id.into(), EXPLAIN.into()],
        )?;
        Ok(rows.first().map(|r| r.get(0)).transpose()?.flatten())
    }

    /// The newest run tagged `tag`; bad input naming the tag when none is.
    pub fn latest_tagged(&self, tag: &str) -> Result<String> {
        let rows = self.db().query(
            "SELECT r.id FROM runs r JOIN run_tags t ON t.run_id = r.id WHERE t.tag = ?1
             ORDER BY r.started DESC, r.rowid DESC LIMIT 1",
            &[tag.into()],
        )?;
        match rows.first() {
            Some(r) => r.get(0),
            None => crate::error::input(format!(
                "--tag {tag}: no run in {} has that tag; `dbdelta list runs` shows the tags",
                self.path.display()
            )),
        }
    }

    /// Refuse `run --name NAME` when a run of the store has it: before the run starts.
    pub fn refuse_taken_name(&self, name: &str) -> Result<()> {
        match self.run_named(name)? {
            None => Ok(()),
            Some(id) => crate::error::input(format!(
                "--name {name}: run {id} in {} has that name; pick another name (a tag, --tag {name}, may be on many runs)",
                self.path.display()
            )),
        }
    }

    /// Before `store push`: refuse when the run's name belongs to another run at `to`.
    pub fn refuse_name_taken_at(&self, run_id: &str, to: &Store) -> Result<()> {
        let rows = self
            .db()
            .query("SELECT name FROM runs WHERE id = ?1", &[run_id.into()])?;
        let name: Option<String> = rows.first().map(|r| r.get(0)).transpose()?.flatten();
        let Some(name) = name else { return Ok(()) };
        match to.run_named(&name)? {
            Some(other) if other != run_id => crate::error::input(format!(
                "run {run_id} is named {name}, and run {other} in {} has that name; nothing was copied",
                to.path.display()
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_label;

    #[test]
    fn names_and_tags_cannot_pass_for_ids_or_keywords() {
        for ok in ["baseline", "pg17-before.fix_2", "a"] {
            assert_eq!(check_label("--name", ok), Ok(()));
        }
        for bad in [
            "20261123-162221-67b4",
            "latest",
            "previous",
            "",
            "a b",
            "é",
            "-x",
        ] {
            let e = check_label("--tag", bad).unwrap_err();
            assert!(e.starts_with("--tag "), "{e}");
        }
        assert!(check_label("--name", &"a".repeat(65)).is_err());
    }
}
