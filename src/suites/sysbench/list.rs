//! sysbench's `dbdelta list steps` listing: its catalog with groups, statements per event and
//! durations, or every statement as an engine receives it (`--sql`).
//!
//! Owns the listing's text for sysbench. Must not: plan or run anything.

use super::catalog::{DurationRule, StepDef, Threads};
use super::sql;
use super::steps as sysbench;
use crate::engine::EngineKind;
use crate::workload::StepKind;

/// When a step runs and what follows it, for `list steps`.
fn step_notes(s: &StepDef) -> String {
    let mut notes = Vec::new();
    match s.kind {
        StepKind::Warm => notes.push("not reported"),
        StepKind::Pre => notes.push("only with pre = true"),
        StepKind::Main => {}
    }
    if s.threads == Threads::Tables {
        notes.push("one thread per table");
    }
    if s.postwrite_after {
        notes.push("then postwrite cleanup");
    }
    notes.join("; ")
}

fn duration_name(rule: DurationRule) -> &'static str {
    match rule {
        DurationRule::Read => "read_secs",
        DurationRule::Write => "write_secs",
        DurationRule::ScanWarm => "min(60,read)",
    }
}

/// The catalog, one line per step, and what `pre = true` changes.
pub(super) fn steps() -> String {
    let mut out = format!(
        "{:<30} {:<11} {:>9}  {:<12}  {}\n",
        "step", "group", "stmts/evt", "duration", "statements per event"
    );
    for s in sysbench::CATALOG {
        let notes = step_notes(s);
        out.push_str(&format!(
            "{:<30} {:<11} {:>9}  {:<12}  {}{}\n",
            s.label,
            s.group.id(),
            s.statements_per_event(),
            duration_name(s.duration),
            s.shape(),
            if notes.is_empty() {
                String::new()
            } else {
                format!("  ({notes})")
            }
        ));
    }
    out.push_str(
        "\nWith pre = true the .pre steps run and the groups after the writes become point-2 \
         (point) and range-2 (range-noagg, range-agg).\n",
    );
    out
}

/// Every statement of the catalog in run order, as `engine` receives it.
pub(super) fn sql(engine: EngineKind) -> String {
    let dialect = engine.dialect();
    let mut out = format!(
        "-- The sysbench catalog in run order, as {} receives it (table sbtest1; events pick a \
         table uniformly).\n",
        engine.name()
    );
    for s in sysbench::CATALOG {
        let notes = step_notes(s);
        out.push_str(&format!(
            "\n-- {} (group {}; {} statement{} per event; {}{})\n",
            s.label,
            s.group.id(),
            s.statements_per_event(),
            if s.statements_per_event() == 1 {
                ""
            } else {
                "s"
            },
            duration_name(s.duration),
            if notes.is_empty() {
                String::new()
            } else {
                format!("; {notes}")
            }
        ));
        for (n, stmt) in s.event {
            let text = sql::text(*stmt, dialect, 1);
            if *n > 1 {
                out.push_str(&format!("{text};  -- ×{n}\n"));
            } else {
                out.push_str(&format!("{text};\n"));
            }
        }
    }
    out
}
