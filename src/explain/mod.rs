//! `dbdelta explain RUN --target T [--step S | --group G]`: how much of a counted change of
//! target T against its base is configuration and how much code, and which settings explain
//! the configuration part. T's settings that differ from the base's (the report's "Differences
//! from the base", in its order) and can be carried over ([`carry`]) are given their base
//! values in twins of T: real targets built from T's spec (its build, its other settings), each
//! counted by instructions only in a run of their own (`runner::Cells::CountedOnly`: the
//! counting pass as every run counts). T's spec is the run's: its stored lab planned again,
//! with the settings lines the run stored for T, not its `config =` file as it reads now
//! ([`stored`]). T itself is counted again first, beside its twins (the same dbdelta build,
//! the same host at the same time), and every twin is judged against that count, not the
//! run's. The twin with all of them removes the configuration part: T / base =
//! code (T / base ÷ config) × config (T again / twin). When the config part reaches the run's
//! `min_effect` on a step and stands out of its noise (the two counts' half ranges), [`search`]
//! halves the set, a twin per half, down to the settings that explain it. The answer is
//! stored with the run (table `explanations`), which the report's "Why" section shows, and
//! printed per step. The twins' run is stored as kind `explain`, linked to the run it explains
//! (`RunLabel::explains`: never `latest`, nor in a lab's run list), and each twin with T's
//! build as the explained run recorded it (`Store::copy_target_build`).
//!
//! Owns the command (its flags and handler: the CLI only dispatches), the twins' plan and the
//! arithmetic of the split; counting the twins is [`twins`]'. Must not: time anything, change how a counting cell runs
//! (`runner::count` does that), or render the report (`report::why` does).

mod carry;
mod search;
mod stored;
mod twins;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::console::{errln, outln};
use crate::error::InputError;
use crate::plan::{RunPlan, TargetPlan};
use crate::progress::{Mode, Progress};
use crate::results::{Metric, RunData, SettingEffect, StepExplanation};
use crate::store::{CellKey, Store};
use carry::Carried;
use stored::use_stored;
use twins::{Counts, PerOp, count_twins};

/// `dbdelta explain`'s flags.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The stored run (an id, a name, `latest`) whose target's change is explained; it must
    /// have counted instructions (`--instructions`).
    pub run: String,
    /// The target whose change against its base is explained.
    #[arg(long, value_name = "TARGET")]
    pub target: String,
    /// The step explained (default: every step whose instructions/op changed).
    #[arg(long, value_name = "STEP", conflicts_with = "group")]
    pub step: Option<String>,
    /// The report group whose steps are explained, instead of --step.
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Results store: an SQLite file or a postgres:// URL (default dbdelta.db).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Where the twins' data directories are created (default: the run's).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Keep the twins' data directories.
    #[arg(long)]
    pub keep: bool,
    /// Print no progress.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print more detail while counting.
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
}

/// What was asked, checked against the stored run.
struct Asked {
    run_id: String,
    target: String,
    base: String,
    /// The steps explained: (suite, label, clients, base and target instructions/op).
    steps: Vec<Counted>,
    carried: Vec<Carried>,
    left_out: Vec<String>,
    /// `ln(1 + min_effect)`.
    threshold: f64,
}

#[derive(Debug, Clone)]
struct Counted {
    suite: String,
    step: String,
    clients: u32,
    base: f64,
    target: f64,
}

/// Run `dbdelta explain` (`store`, `quiet`, `verbose`: the flags given before the command).
pub fn command(
    args: ExplainArgs,
    store: Option<&Path>,
    (quiet, verbose): (bool, bool),
) -> Result<ExitCode> {
    let progress = Progress {
        mode: Mode::detect(args.quiet || quiet),
        verbose: args.verbose || verbose,
        interval: None,
    };
    let path = (args.store.clone().or_else(|| store.map(Path::to_path_buf)))
        .unwrap_or_else(|| PathBuf::from("dbdelta.db"));
    let mut store = Store::open_existing_to_write(&path)?;
    let run_id = store.resolve_run(Some(&args.run))?;
    if let Some(explained) = store.run_explained(&run_id)? {
        return crate::error::input(format!(
            "run {run_id} is explain's twins' run of run {explained} (their counts, not a lab's \
             run): explain run {explained} instead (`dbdelta explain {explained} --target …`)"
        ));
    }
    let data = store.load_run(&run_id)?;
    let mut asked = asked(&data, &args)?;
    let (plan, options) = twin_plan(&store, &data, &asked, &args)?;
    let target = prepared(&plan, &asked, &progress)?;
    accepted_only(&mut asked, &target, &progress);
    let interrupt = crate::signals::install_saying(
        "stopping the explanation (start it again); send it again to stop at once",
        |signal| {
            crate::engine::common::process::kill_started();
            std::process::exit(128 + signal);
        },
    )
    .context("installing the handlers of SIGINT, SIGTERM, SIGHUP and SIGQUIT")?;
    let started = Instant::now();
    let twins = (&plan, options.as_str(), target);
    let (answers, again) = match explain(twins, &mut store, &asked, &progress, &interrupt) {
        Ok(answered) => answered,
        // Signalled: the twins' run is stored incomplete; exit as a shell reports the signal.
        Err(e) if let Some(signal) = crate::signals::first() => {
            errln!("interrupted: {e:#}; nothing was stored with run {run_id}: start it again");
            return Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(130)));
        }
        Err(e) => return Err(e),
    };
    let model = crate::report::build(&store.load_run(&run_id)?, Some(&asked.base))?;
    print_answers(&asked, &answers, &again, &model, started.elapsed());
    Ok(ExitCode::SUCCESS)
}

/// The answer, first: the twins counted, each step's split, then where T's count beside its
/// twins left the run's, then what was left out (a few names per reason: all of them are in
/// the report's JSON).
fn print_answers(
    asked: &Asked,
    answers: &[StepExplanation],
    again: &[PerOp],
    model: &crate::report::ReportModel,
    took: std::time::Duration,
) {
    let (twins, twin_run) = answers.first().map_or((0, ""), |a| (a.twins, &a.twin_run));
    outln!(
        "{} vs {} in run {}: {twins} twin(s) counted in {:.0} s{}",
        asked.target,
        asked.base,
        asked.run_id,
        took.as_secs_f64(),
        match twin_run {
            "" => String::new(),
            r => format!(" (their counts: run {r})"),
        }
    );
    for (c, a) in asked.steps.iter().zip(answers) {
        outln!("{}: {}", c.step, line(a, &top_functions(model, asked, c)));
    }
    for (c, PerOp { value: v, .. }) in asked.steps.iter().zip(again) {
        if (v / c.target).ln().abs() >= asked.threshold {
            outln!(
                "note: {}: {} counted {v:.0}/op beside its twins, {:.0}/op in the run ({:.3}×); \
                 its configuration part is judged against the count beside them",
                c.step,
                asked.target,
                c.target,
                v / c.target
            );
        }
    }
    for (why, keys) in answers
        .first()
        .map(|a| a.left_out_by_reason())
        .unwrap_or_default()
    {
        let shown: Vec<&str> = keys
            .iter()
            .take(SHOWN_LEFT_OUT)
            .map(String::as_str)
            .collect();
        let more = match keys.len().saturating_sub(SHOWN_LEFT_OUT) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        outln!(
            "left out ({}), {why}: {}{more}",
            keys.len(),
            shown.join(", ")
        );
    }
}

/// The left-out settings named per reason on the terminal.
const SHOWN_LEFT_OUT: usize = 8;

/// The run's target, base and steps as asked; bad input naming the flag and the fix.
fn asked(data: &RunData, args: &ExplainArgs) -> Result<Asked> {
    let run_id = data.run.id.clone();
    not_counted(data)?;
    let names: Vec<&str> = data.targets.iter().map(|t| t.name.as_str()).collect();
    if !names.contains(&args.target.as_str()) {
        return crate::error::input(format!(
            "--target {}: run {run_id} has no such target (its targets: {})",
            args.target,
            names.join(", ")
        ));
    }
    let model = crate::report::build(data, None)?;
    let relative: Vec<_> = (model.relative.iter())
        .filter(|r| r.target == args.target)
        .collect();
    let Some(base) = relative.first().map(|r| r.base.clone()) else {
        return crate::error::input(format!(
            "--target {}: it is run {run_id}'s base; explain a target compared with it (one of: {})",
            args.target,
            names[1..].join(", ")
        ));
    };
    let steps = chosen_steps(data, args, &base, &relative)?;
    let summary = (model.targets.iter()).find(|t| t.name == args.target);
    let diffs = summary.map_or(&[][..], |t| &t.settings_diff[..]);
    let (carried, left_out) = carry::split(diffs);
    let min_effect = data.run.min_effect.unwrap_or(0.02);
    Ok(Asked {
        run_id,
        target: args.target.clone(),
        base,
        steps,
        carried,
        left_out,
        threshold: (1.0 + min_effect).ln(),
    })
}

/// Bad input when no step of the run was counted: what the run lacks and how to count it.
fn not_counted(data: &RunData) -> Result<()> {
    let counted = (data.measurements.iter()).any(|m| m.values.get(Metric::ServerInstr).is_some());
    if counted {
        return Ok(());
    }
    crate::error::input(format!(
        "run {} was not counted: it ran without --instructions, and explain splits a change in \
         instructions/op; run the lab again with `dbdelta run LAB --instructions` (or \
         instructions = true in its [lab]) and explain that run",
        data.run.id
    ))
}

/// The counted steps `--step`/`--group` name (default: those whose instructions/op verdict is
/// a change), each with both sides' instructions/op.
fn chosen_steps(
    data: &RunData,
    args: &ExplainArgs,
    base: &str,
    relative: &[&crate::report::model::Relative],
) -> Result<Vec<Counted>> {
    let run_id = &data.run.id;
    let labels: Vec<&str> = relative.iter().map(|r| r.step.as_str()).collect();
    let chosen: Vec<&&crate::report::model::Relative> = match (&args.step, &args.group) {
        (Some(step), _) => relative.iter().filter(|r| &r.step == step).collect(),
        (None, Some(group)) => relative.iter().filter(|r| &r.group == group).collect(),
        (None, None) => (relative.iter())
            .filter(|r| {
                (r.tests.spread(Metric::ServerInstr))
                    .is_some_and(|t| t.verdict == "regression" || t.verdict == "improvement")
            })
            .collect(),
    };
    if chosen.is_empty() {
        let what = match (&args.step, &args.group) {
            (Some(s), _) => format!("--step {s}: run {run_id} has no such step"),
            (None, Some(g)) => format!("--group {g}: run {run_id} has no step of that group"),
            (None, None) => format!(
                "run {run_id}: no step of {} changed in instructions/op; name one with --step",
                args.target
            ),
        };
        return crate::error::input(format!("{what} (its steps: {})", labels.join(", ")));
    }
    let value = |target: &str, r: &crate::report::model::Relative| {
        (data.measurements.iter())
            .filter(|m| m.target == target && m.step == r.step && m.clients == r.clients)
            .find_map(|m| Some((m.suite.clone(), m.values.get(Metric::ServerInstr)?)))
    };
    let mut out = Vec::new();
    for r in chosen {
        let (Some((suite, b)), Some((_, t))) = (value(base, r), value(&args.target, r)) else {
            return crate::error::input(format!(
                "run {run_id}: step {} has no instructions/op of {} and {base}; explain needs a \
                 run with --instructions (or the lab's instructions = true)",
                r.step, args.target
            ));
        };
        out.push(Counted {
            suite,
            step: r.step.clone(),
            clients: r.clients,
            base: b,
            target: t,
        });
    }
    Ok(out)
}

/// The run's plan again (its stored lab and options, T with the settings lines the run stored:
/// [`stored`]), with only the explained steps, counting instructions, and the options that
/// give it (stored with the twins' run).
fn twin_plan(
    store: &Store,
    data: &RunData,
    asked: &Asked,
    args: &ExplainArgs,
) -> Result<(RunPlan, String)> {
    let run_id = &asked.run_id;
    let json = store.run_options(run_id)?.ok_or_else(|| {
        InputError::new(format!(
            "run {run_id} was stored by a dbdelta without stored options; run it again to explain it"
        ))
    })?;
    let mut stored: crate::plan::resume::StoredOptions =
        serde_json::from_str(&json).context("the run's stored options")?;
    stored.options.only = asked.steps.iter().map(|s| s.step.clone()).collect();
    stored.options.skip.clear();
    stored.options.cell = None;
    stored.options.instructions = true;
    if let Some(dir) = &args.workdir {
        stored.options.workdir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
    }
    let mut plan = crate::plan::resume::rebuild_plan(
        run_id,
        &data.run.lab_text,
        &stored,
        None,
        (args.keep, crate::plan::lab::GoneConfig::Empty),
    )?;
    let info = (data.targets.iter()).find(|t| t.name == asked.target);
    let planned = (plan.targets.iter_mut()).find(|t| t.name == asked.target);
    if let (Some(info), Some(t)) = (info, planned) {
        let lab = stored.lab_path.as_deref();
        use_stored(t, &info.config_text, run_id, lab)?;
    }
    crate::plan::preflight::tools(&plan)?;
    Ok((plan, stored.to_json()))
}

/// Count the twins (in a run of their own, stored with `options`) and store each step's
/// explanation with the run; with T's count beside its twins (none when no twin was counted).
fn explain(
    (plan, options, target): (&RunPlan, &str, TargetPlan),
    store: &mut Store,
    asked: &Asked,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
) -> Result<(Vec<StepExplanation>, Vec<PerOp>)> {
    let counts = match asked.carried.is_empty() {
        true => {
            progress.line("explain: no differing setting can be carried over: no twin to count");
            Counts {
                whole: search::Effect::exact(vec![0.0; asked.steps.len()]),
                ..Counts::default()
            }
        }
        false => count_twins((plan, options, target), store, asked, progress, interrupt)?,
    };
    let mut out = Vec::new();
    for (i, c) in asked.steps.iter().enumerate() {
        let found = (&counts.whole, &counts.found[..]);
        let mut e = answer(asked, c, i, found, (counts.twins, &counts.twin_run));
        e.left_out.extend(counts.refused.iter().cloned());
        let key = CellKey {
            target: asked.target.clone(),
            suite: c.suite.clone(),
            clients: c.clients,
            repeat: 0,
        };
        store.set_explanation(&key, &asked.run_id, &c.step, &e)?;
        out.push(e);
    }
    Ok((out, counts.again))
}

/// T's spec with its build prepared (fetched or made), as its twins start from it.
fn prepared(plan: &RunPlan, asked: &Asked, progress: &Progress) -> Result<TargetPlan> {
    let mut one = plan.clone();
    one.targets.retain(|t| t.name == asked.target);
    if one.targets.is_empty() {
        return crate::error::input(format!(
            "--target {}: the run's lab no longer plans it; explain needs the lab the run ran",
            asked.target
        ));
    }
    let prepared = crate::plan::prepare(one, progress)?;
    Ok(prepared.targets[0].clone())
}

/// Leave out the carried settings T's server program does not take at its start: the
/// report's differences hold every variable the server shows, read-only ones too (MySQL's
/// `build_id`, PostgreSQL's `block_size`), which a twin's settings cannot set. A program that
/// cannot say is named, and every difference is carried.
fn accepted_only(asked: &mut Asked, target: &TargetPlan, progress: &Progress) {
    let accepted = match target.engine.startup_settings(&target.spec(false)) {
        Ok(Some(accepted)) => accepted,
        Ok(None) => return,
        Err(e) => {
            progress.line(&format!(
                "explain: cannot ask {}'s server which settings it takes at its start ({e:#}); \
                 every difference is carried",
                asked.target
            ));
            return;
        }
    };
    let carried = std::mem::take(&mut asked.carried);
    let (kept, out): (Vec<Carried>, Vec<Carried>) =
        (carried.into_iter()).partition(|c| accepted.contains(&carry::normal(&c.key)));
    asked.carried = kept;
    (asked.left_out).extend(out.iter().map(|c| {
        format!(
            "{} (not a setting {} takes at its start)",
            c.key, asked.target
        )
    }));
}

/// Step `i`'s explanation: its ratio split by the whole twin, and the settings found that
/// explain at least the threshold on it, largest first.
fn answer(
    asked: &Asked,
    c: &Counted,
    i: usize,
    (whole, found): (&search::Effect, &[search::Found]),
    (twins, twin_run): (u32, &str),
) -> StepExplanation {
    let ratio = c.target / c.base;
    let config = whole.log[i].exp();
    let mut settings: Vec<SettingEffect> = (found.iter())
        .filter(|f| f.effect.explains_step(i, asked.threshold))
        .flat_map(|f| {
            (f.settings.iter()).map(|&s| {
                let k = &asked.carried[s];
                SettingEffect {
                    key: k.key.clone(),
                    base: Some(k.base.clone()),
                    target: Some(k.target.clone()),
                    explains: f.effect.log[i].exp(),
                }
            })
        })
        .collect();
    settings.sort_by(|a, b| b.explains.ln().abs().total_cmp(&a.explains.ln().abs()));
    StepExplanation {
        base: asked.base.clone(),
        ratio,
        code: ratio / config,
        config,
        settings,
        twins,
        twin_run: twin_run.to_string(),
        left_out: asked.left_out.clone(),
    }
}

/// The top functions of `c`'s change (the report's function diff), as `name +N`.
fn top_functions(model: &crate::report::ReportModel, asked: &Asked, c: &Counted) -> Vec<String> {
    let Some(diffs) = &model.functions else {
        return Vec::new();
    };
    (diffs.steps.iter())
        .find(|s| s.target == asked.target && s.step == c.step && s.clients == c.clients)
        .map(|s| {
            (s.functions.iter().take(3))
                .map(|f| format!("{} {:+.0}", f.name, f.change))
                .collect()
        })
        .unwrap_or_default()
}

/// The report's line for `e` ("1.62× = code 1.02× × config 1.59×: key OFF (base ON) explains
/// 1.58×"), then "; top functions: …".
pub fn line(e: &StepExplanation, functions: &[String]) -> String {
    let mut out = crate::report::explanation_line(e);
    if !functions.is_empty() {
        out.push_str(&format!("; top functions: {}", functions.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::twins::named_in;
    use super::*;

    #[test]
    fn a_refused_setting_is_found_by_its_whole_name_as_the_server_wrote_it() {
        let c = |key: &str| Carried {
            key: key.into(),
            base: String::new(),
            target: "x".into(),
        };
        let carried = [
            c("innodb_flush_method"),
            c("innodb_flush_method_extra"),
            c("flush"),
            c("Sort_Buffer_Size"),
        ];
        let message = "counting instructions: [ERROR] [MY-000074] [Server] mysqld: Empty value \
                       for 'innodb-flush-method' specified.; [ERROR] sort_buffer_size=x\n\
                       [Warning] 'flush' is deprecated";
        assert_eq!(named_in(message, &carried, &[0, 1, 2, 3]), [0, 3]);
        assert_eq!(named_in(message, &carried, &[1, 2]), Vec::<usize>::new());
    }

    /// A run that ran without --instructions: explain says so first, and how to count it
    /// (not that no step changed in instructions/op).
    #[test]
    fn a_run_not_counted_is_named_with_how_to_count_it() {
        let mut data = RunData::default();
        data.run.id = "r1".into();
        for (name, qps) in [("base", 100.0), ("small", 90.0)] {
            data.targets.push(crate::results::TargetInfo {
                name: name.into(),
                engine: "sqlite".into(),
                ..Default::default()
            });
            let m = crate::results::Measurement {
                target: name.into(),
                suite: "sysbench".into(),
                step: "point-query".into(),
                clients: 1,
                qps: Some(qps),
                ..Default::default()
            };

            data.measurements.push(m);
        }
        let args = ExplainArgs {
            run: "r1".into(),
            target: "small".into(),
            step: None,
            group: None,
            store: None,
            workdir: None,
            keep: false,
            quiet: true,
            verbose: false,
        };
        let e = asked(&data, &args).err().expect("refused");
        let said = format!("{e:#}");
        assert!(said.starts_with("run r1 was not counted"), "{said}");
        assert!(said.contains("--instructions"), "{said}");
    }

    #[test]
    fn the_line_splits_the_ratio_and_names_the_settings() {
        let e = StepExplanation {
            base: "my80".into(),
            ratio: 1.62,
            code: 1.02,
            config: 1.59,
            settings: vec![SettingEffect {
                key: "innodb_adaptive_hash_index".into(),
                base: Some("ON".into()),
                target: Some("OFF".into()),
                explains: 1.58,
            }],
            twins: 4,
            twin_run: "r".into(),
            left_out: Vec::new(),
        };
        assert_eq!(
            line(&e, &["btr_search_guess_on_hash +812".into()]),
            "1.62× = code 1.02× × config 1.59×: innodb_adaptive_hash_index OFF (base ON) \
             explains 1.58×; top functions: btr_search_guess_on_hash +812"
        );
    }
}
