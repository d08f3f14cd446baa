//! `--only`/`--skip`: which steps of the lab's suites run.
//!
//! Owns compiling the flags' globs against the selectable steps of every suite of the lab (a
//! pattern must match one) and answering, per step, whether it was chosen. Warm steps are never
//! selectable; `.pre` steps only when a suite runs them. Must not: know any suite's steps (each
//! suite lists them as [`Selectable`]s) or decide what a step depends on (the suite does).

use crate::error::InputError;
use crate::workload::StepKind;

/// `--only`/`--skip` values: each may hold a comma-separated list of globs
/// (`--only 'point-*,hot-points'`); repeated flags add up.
fn split_globs(flag: &str, values: &[String]) -> Result<Vec<String>, InputError> {
    let mut out = Vec::new();
    for v in values {
        for part in v.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(InputError::new(format!(
                    "--{flag} {v}: an empty step pattern; separate globs with single commas, e.g. --{flag} 'point-*,insert'"
                )));
            }
            out.push(part.to_string());
        }
    }
    Ok(out)
}

/// `--only`/`--skip`, compiled against the steps of every suite of the lab.
pub struct Selection {
    only: Vec<glob::Pattern>,
    skip: Vec<glob::Pattern>,
}

/// A catalog step as `--only`/`--skip` see it.
pub struct Selectable {
    pub label: String,
    pub kind: StepKind,
}

impl Selection {
    /// Compile the flags; a pattern must match some selectable step of `catalog` (reported
    /// labels; the `.pre` ones only with `pre = true`).
    pub fn new(
        only: &[String],
        skip: &[String],
        catalog: &[Selectable],
        pre: bool,
    ) -> Result<Selection, InputError> {
        let compile = |flag: &str, pats: &[String]| -> Result<Vec<glob::Pattern>, InputError> {
            pats.iter()
                .map(|p| {
                    let pat = glob::Pattern::new(p).map_err(|e| {
                        InputError::new(format!("--{flag} {p}: not a valid glob ({e})"))
                    })?;
                    let matches = |s: &&Selectable| pat.matches(&s.label);
                    if !catalog
                        .iter()
                        .filter(|s| selectable(s.kind, pre))
                        .any(|s| matches(&s))
                    {
                        let hint = if catalog.iter().any(|s| matches(&s)) {
                            if pre {
                                " but warm steps, which are not selectable"
                            } else {
                                " of this lab (.pre steps run only with pre = true; warm steps are not selectable)"
                            }
                        } else {
                            ""
                        };
                        let near = crate::suggest::did_you_mean(
                            p,
                            (catalog.iter().filter(|s| selectable(s.kind, pre)))
                                .map(|s| s.label.as_str()),
                        );
                        return Err(InputError::new(format!(
                            "--{flag} {p}: matches no step{hint}{near}; `dbdelta list steps` shows the catalog"
                        )));
                    }
                    Ok(pat)
                })
                .collect()
        };
        Ok(Selection {
            only: compile("only", &split_globs("only", only)?)?,
            skip: compile("skip", &split_globs("skip", skip)?)?,
        })
    }

    /// Warm steps are not selectable: they run whenever `--only` is absent and never with it
    /// (`--only` runs exactly the steps it names, in catalog order).
    pub fn chosen(&self, label: &str, kind: StepKind, pre: bool) -> bool {
        if kind == StepKind::Warm {
            return self.only.is_empty();
        }
        selectable(kind, pre)
            && (self.only.is_empty() || self.only.iter().any(|p| p.matches(label)))
            && !self.skip.iter().any(|p| p.matches(label))
    }
}

fn selectable(kind: StepKind, pre: bool) -> bool {
    match kind {
        StepKind::Main => true,
        StepKind::Pre => pre,
        StepKind::Warm => false,
    }
}
