//! The keys of `[lab]` that shape a run: placement, profiling, instruction counting, order,
//! clients, repeats, the minimum effect, and each `[suite.NAME]` handed to its suite. Must not:
//! look at the machine (the CPUs named are checked by `plan`) or know any suite's keys.

use std::collections::BTreeMap;

use toml::Spanned;

use super::raw::{RawLabSection, RawRepeats};
use super::{AutoRepeats, Order};
use crate::counter::Counting;
use crate::cpus::{CpuSet, PlacementSpec, Shorthand};
use crate::error::InputError;
use crate::profiler::{CallGraph, ProfileSettings};
use crate::range;
use crate::suites::{LabText as Source, Section, SuiteConfig};

/// The placement keys of one section, checked for syntax (the CPUs themselves are checked
/// against the machine by `plan`).
pub(super) fn placement(
    src: &Source<'_>,
    placement: Option<Spanned<String>>,
    server: Option<Spanned<String>>,
    client: Option<Spanned<String>>,
) -> Result<PlacementSpec, InputError> {
    let shorthand = match placement {
        None => None,
        Some(p) => match Shorthand::parse(p.get_ref()) {
            Some(s) => Some((s, src.locate(p.span()))),
            None => {
                return Err(src.error_at(
                    p.span(),
                    format!(
                        "placement must be one of {}, not \"{}\"",
                        Shorthand::NAMES
                            .iter()
                            .map(|n| format!("\"{n}\""))
                            .collect::<Vec<_>>()
                            .join(", "),
                        p.get_ref()
                    ),
                ));
            }
        },
    };
    let list = |v: Option<Spanned<String>>| -> Result<Option<(CpuSet, String)>, InputError> {
        let Some(v) = v else { return Ok(None) };
        let set = CpuSet::parse(v.get_ref()).map_err(|e| src.error_at(v.span(), e))?;
        Ok(Some((set, src.locate(v.span()))))
    };
    Ok(PlacementSpec {
        shorthand,
        server: list(server)?,
        client: list(client)?,
    })
}

/// The `[suite.NAME]` tables, each parsed by the suite the registry names so; a lab with none
/// runs the default suites. A name no suite has is bad input.
pub(super) fn suite_sections(src: &Source<'_>) -> Result<Vec<Box<dyn SuiteConfig>>, InputError> {
    let doc = toml::de::DeTable::parse(src.text()).map_err(|e| src.error(e.message().trim()))?;
    let mut tables = BTreeMap::new();
    for (key, value) in doc.into_inner() {
        if key.get_ref().as_ref() != "suite" {
            continue;
        }
        let span = value.span();
        let toml::de::DeValue::Table(t) = value.into_inner() else {
            return Err(src.error_at(span, "suite must hold [suite.NAME] tables"));
        };
        for (name, table) in t {
            tables.insert(name.get_ref().to_string(), (name.span(), table));
        }
    }
    let kinds = crate::suites::registry();
    if let Some((name, (span, _))) =
        (tables.iter()).find(|(n, _)| kinds.iter().all(|k| k.name() != *n))
    {
        let names: Vec<String> = kinds.iter().map(|k| format!("`{}`", k.name())).collect();
        return Err(src.error_at(
            span.clone(),
            format!(
                "unknown field `{name}`, expected one of {}",
                names.join(", ")
            ),
        ));
    }
    let none = tables.is_empty();
    let mut out = Vec::new();
    for kind in kinds {
        let value = tables.remove(kind.name()).map(|(_, v)| v);
        if value.is_some() || (none && kind.by_default()) {
            out.push(kind.parse(&Section { value, lab: src })?);
        }
    }
    Ok(out)
}

/// `profile = true`, `profile_hz` (1..=10000, default 99), `profile_call_graph` (`dwarf` or
/// `fp`, default `dwarf`); the last two only with the first.
pub(super) fn profile(
    src: &Source<'_>,
    lab: &RawLabSection,
) -> Result<Option<ProfileSettings>, InputError> {
    let on = lab.profile.as_ref().is_some_and(|p| *p.get_ref());
    let mut settings = ProfileSettings::default();
    if let Some(hz) = &lab.profile_hz {
        if !on {
            return Err(src.error_at(hz.span(), "profile_hz needs profile = true"));
        }
        let v = *hz.get_ref();
        settings.hz = u32::try_from(v).ok().filter(|h| (1..=10_000).contains(h)).ok_or_else(|| {
            src.error_at(
                hz.span(),
                format!("profile_hz must be a sampling rate from 1 to 10000 per second, e.g. 99, not {v}"),
            )
        })?;
    }
    if let Some(cg) = &lab.profile_call_graph {
        if !on {
            return Err(src.error_at(cg.span(), "profile_call_graph needs profile = true"));
        }
        settings.call_graph = match cg.get_ref().as_str() {
            "dwarf" => CallGraph::Dwarf,
            "fp" => CallGraph::Fp,
            other => {
                return Err(src.error_at(
                    cg.span(),
                    format!("profile_call_graph must be \"dwarf\" or \"fp\", not \"{other}\""),
                ));
            }
        };
    }
    Ok(on.then_some(settings))
}

/// The counting keys of a lab that does not count by itself, with where they stand.
pub(super) type CountingKeys = (Counting, String);

/// `instructions = true`, `instruction_passes` (1..=20 pairs of counting passes per step,
/// default 3), `instruction_starts` (1..=5 server starts they are spread over, default 2) and
/// `count_jobs` (1..=64): the counting when the lab asks for it; otherwise the
/// last two, with where they stand, for `--instructions` to use (the plan refuses them when
/// nothing counts).
pub(super) fn instructions(
    src: &Source<'_>,
    lab: &RawLabSection,
) -> Result<(Option<Counting>, Option<CountingKeys>), InputError> {
    let on = lab.instructions.as_ref().is_some_and(|p| *p.get_ref());
    let mut counting = Counting::default();
    let mut at = None;
    let keys = [
        (
            &lab.instruction_passes,
            20,
            "instruction_passes must be a number of pass pairs from 1 to 20 (3 gives a spread)",
        ),
        (
            &lab.instruction_starts,
            5,
            "instruction_starts must be a number of server starts from 1 to 5 (2 puts what differs between starts in the range)",
        ),
        (
            &lab.count_jobs,
            64,
            "count_jobs must be a number of counting cells at once from 1 to 64 (default: the CPUs dbdelta may use)",
        ),
    ];
    let mut got = [None; 3];
    for (i, (key, most, what)) in keys.into_iter().enumerate() {
        let Some(k) = key else { continue };
        at.get_or_insert_with(|| src.locate(k.span()));
        let v = *k.get_ref();
        let n = u32::try_from(v).ok().filter(|n| (1..=most).contains(n));
        got[i] = Some(n.ok_or_else(|| src.error_at(k.span(), format!("{what}, not {v}")))?);
    }
    let [passes, starts, jobs] = got;
    counting.passes = passes.unwrap_or(counting.passes);
    counting.starts = starts.unwrap_or(counting.starts);
    counting.jobs = jobs.unwrap_or(counting.jobs);
    Ok(match on {
        true => (Some(counting), None),
        false => (None, at.map(|at| (counting, at))),
    })
}

/// `order = "interleaved" | "sequential"`.
pub(super) fn order(src: &Source<'_>, o: Option<&Spanned<String>>) -> Result<Order, InputError> {
    let Some(o) = o else {
        return Ok(Order::Interleaved);
    };
    match o.get_ref().as_str() {
        "interleaved" => Ok(Order::Interleaved),
        "sequential" => Ok(Order::Sequential),
        other => Err(src.error_at(
            o.span(),
            format!("order must be \"interleaved\" or \"sequential\", not \"{other}\""),
        )),
    }
}

/// `clients = [1, 4]` (default `[1]`).
pub(super) fn clients(
    src: &Source<'_>,
    c: Option<&Spanned<Vec<i64>>>,
) -> Result<Vec<u32>, InputError> {
    let Some(c) = c else { return Ok(vec![1]) };
    let list = c.get_ref();
    if list.is_empty() || list.iter().any(|n| !range::CLIENTS.contains(*n)) {
        return Err(src.error_at(
            c.span(),
            format!(
                "clients must be a non-empty list of client counts {}, e.g. [1, 4]",
                range::CLIENTS.words()
            ),
        ));
    }
    Ok(list.iter().map(|n| *n as u32).collect())
}

/// `secret_env = ["MY_CRED"]`: environment variable names (letters, digits, `_`; not starting
/// with a digit) whose values are secrets, as those named like `PGPASSWORD` are.
pub(super) fn secret_env(
    src: &Source<'_>,
    names: Option<&Spanned<Vec<String>>>,
) -> Result<Vec<String>, InputError> {
    let Some(names) = names else {
        return Ok(Vec::new());
    };
    let bad = (names.get_ref().iter()).find(|n| {
        n.is_empty()
            || n.starts_with(|c: char| c.is_ascii_digit())
            || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if let Some(bad) = bad {
        return Err(src.error_at(
            names.span(),
            format!(
                "secret_env: {bad:?} is not an environment variable name (letters, digits and _, \
                 not starting with a digit); e.g. secret_env = [\"MY_CRED\"]"
            ),
        ));
    }
    Ok(names.get_ref().clone())
}

/// `min_effect`, a fraction (default [`crate::stats::MIN_EFFECT`]).
/// `repeats` (a whole number ≥ 1, or `"auto"` with `min_repeats` and `max_repeats`).
pub(super) fn repeats(
    src: &Source<'_>,
    lab: &RawLabSection,
) -> Result<(u32, Option<AutoRepeats>), InputError> {
    let bad = format!(
        "repeats must be a whole number {}, or \"auto\" (repeat undecided steps)",
        range::REPEATS.words()
    );
    let word = match lab.repeats.get_ref() {
        RawRepeats::Count(n) => {
            let n =
                (range::REPEATS.get(*n)).ok_or_else(|| src.error_at(lab.repeats.span(), &bad))?;
            if let Some(key) = lab.min_repeats.as_ref().or(lab.max_repeats.as_ref()) {
                return Err(src.error_at(
                    key.span(),
                    "min_repeats and max_repeats go with repeats = \"auto\"; remove them or set it",
                ));
            }
            return Ok((n, None));
        }
        RawRepeats::Word(w) => w,
    };
    if word != "auto" {
        return Err(src.error_at(lab.repeats.span(), &bad));
    }
    let bound = |key: &Option<Spanned<i64>>, default: u32, least: u32| match key {
        None => Ok(default),
        Some(k) => {
            let within = range::Count {
                min: least.into(),
                max: range::AUTO_REPEATS_MAX,
            };
            (within.get(*k.get_ref())).ok_or_else(|| {
                src.error_at(k.span(), format!("give a whole number {}", within.words()))
            })
        }
    };
    let first = bound(&lab.min_repeats, AutoRepeats::DEFAULT.first, 2)?;
    let max = bound(&lab.max_repeats, AutoRepeats::DEFAULT.max.max(first), first)?;
    Ok((first, Some(AutoRepeats { first, max })))
}

pub(super) fn min_effect(src: &Source<'_>, m: Option<&Spanned<f64>>) -> Result<f64, InputError> {
    let Some(m) = m else {
        return Ok(crate::stats::MIN_EFFECT);
    };
    let v = *m.get_ref();
    if !(0.0..1.0).contains(&v) {
        return Err(src.error_at(
            m.span(),
            format!("min_effect must be a fraction from 0 up to 1, e.g. 0.02 for 2%, not {v}"),
        ));
    }
    Ok(v)
}
