//! The concurrency crossover: with a client sweep, each target's QPS per group and client count
//! (the geometric mean of the group's steps' QPS), and for each compared target and group
//! whether, and from which client count, it overtakes or falls behind its base, judged against
//! noise by verdicts on the per-repeat ratios of group QPS.
//!
//! Owns the group QPS summary, the crossover rule, its noise judgement, its tl;dr sentences and
//! its note. The arithmetic is `stats`'; tables and charts are `layout`'s and `charts`'. It must
//! not format tables or do any I/O.

use std::collections::BTreeMap;

use super::super::fmt::{plural, two};
use super::super::model::{
    Crossover, CrossoverPoint, GroupQps, MetricTest, ReportModel, StepGroup,
};
use super::super::verdicts::metric_test;
use crate::results::Measurement;
use crate::stats::{self, Change};

/// Fills `group_qps` and `crossovers` and puts the crossover sentences first in the tl;dr and
/// the method in the notes. Does nothing with fewer than 2 client counts.
pub(in crate::report) fn apply(model: &mut ReportModel, ms: &[Measurement]) {
    if model.clients.len() < 2 {
        return;
    }
    model.group_qps = group_qps(model);
    model.crossovers = crossovers(model, ms);
    let sentences: Vec<String> = model
        .crossovers
        .iter()
        .map(|c| c.sentence.clone())
        .collect();
    model.tldr.splice(0..0, sentences);
    model.notes.push(NOTE.to_string());
}

const NOTE: &str = "Concurrency: a group's QPS at a client count is the geometric mean of the QPS \
    (means over repeats) of the group's steps measured at that count, so every step weighs the \
    same however fast it is; it is n/a when one of those steps has no QPS for that target (failed \
    or not run). QPS ratio = group QPS(target) / group QPS(base). A target overtakes its base from \
    N clients when its ratio is above 1 at N and at every larger count with a ratio, after being \
    below 1 at a smaller count (falls behind: the reverse); counts without a ratio are skipped. \
    Noise: with repeats, each count's per-repeat ratios of group QPS (repeats paired by number, \
    only repeats in which both sides measured every step of the group) get the verdict test \
    above, with the target × group over its client counts as the family. A crossover is \
    confirmed when the counts on either side of it are beyond noise in opposite directions, \
    confirmed between a and b when only counts further apart are, within noise when both have a \
    verdict but not those, and unconfirmed with fewer than 2 paired repeats. Faster (slower) at \
    every count is confirmed when every count is beyond noise.";

/// The group's steps measured at `clients` by any shown target, in step order.
fn steps_at<'a>(model: &ReportModel, group: &'a StepGroup, clients: u32) -> Vec<&'a str> {
    let shown = model.shown_targets();
    group
        .steps
        .iter()
        .filter(|s| {
            shown
                .iter()
                .any(|t| model.aggregate(t, s, clients).is_some())
        })
        .map(String::as_str)
        .collect()
}

/// Per shown target × group × clients with any step measured at that count.
fn group_qps(model: &ReportModel) -> Vec<GroupQps> {
    let mut out = Vec::new();
    for target in model.shown_targets() {
        for group in &model.step_groups {
            for &clients in &model.clients {
                let steps = steps_at(model, group, clients);
                if steps.is_empty() {
                    continue;
                }
                let qps: Vec<Option<f64>> = steps
                    .iter()
                    .map(|s| model.aggregate(target, s, clients).and_then(|a| a.qps))
                    .collect();
                let missing: Vec<String> = steps
                    .iter()
                    .zip(&qps)
                    .filter(|(_, q)| q.is_none())
                    .map(|(s, _)| s.to_string())
                    .collect();
                let known: Vec<f64> = qps.iter().flatten().copied().collect();
                out.push(GroupQps {
                    target: target.to_string(),
                    group: group.id.clone(),
                    clients,
                    qps: if missing.is_empty() {
                        stats::geo_mean(&known)
                    } else {
                        None
                    },
                    steps: known.len() as u32,
                    missing_steps: missing,
                });
            }
        }
    }
    out
}

/// Group QPS per repeat of `target` at `clients`: only repeats with a QPS for every one of
/// `steps` (non-failed).
fn per_repeat(
    ms: &[Measurement],
    target: &str,
    steps: &[&str],
    clients: u32,
) -> BTreeMap<u32, f64> {
    let mut by_repeat: BTreeMap<u32, BTreeMap<&str, f64>> = BTreeMap::new();
    for m in ms.iter().filter(|m| {
        m.target == target && m.clients == clients && !m.failed && steps.contains(&m.step.as_str())
    }) {
        if let Some(q) = m.qps {
            by_repeat.entry(m.repeat).or_default().insert(&m.step, q);
        }
    }
    by_repeat
        .into_iter()
        .filter(|(_, qs)| qs.len() == steps.len())
        .filter_map(|(r, qs)| {
            let qs: Vec<f64> = qs.into_values().collect();
            stats::geo_mean(&qs).map(|g| (r, g))
        })
        .collect()
}

/// Per compared target × group that either side measured at some client count.
fn crossovers(model: &ReportModel, ms: &[Measurement]) -> Vec<Crossover> {
    let mut out = Vec::new();
    for target in &model.compared {
        let base = model.base_of(target);
        for group in &model.step_groups {
            let qps = |t: &str, c: u32| model.group_qps_of(t, &group.id, c).and_then(|g| g.qps);
            if !model.clients.iter().any(|&c| {
                model.group_qps_of(target, &group.id, c).is_some()
                    || model.group_qps_of(base, &group.id, c).is_some()
            }) {
                continue;
            }
            let mut points = Vec::new();
            let mut sets = Vec::new();
            for &clients in &model.clients {
                let (t, b) = (qps(target, clients), qps(base, clients));
                let ratio = stats::ratio(t, b);
                let steps = steps_at(model, group, clients);
                let base_repeats = per_repeat(ms, base, &steps, clients);
                let ratios: Vec<f64> = if ratio.is_some() {
                    per_repeat(ms, target, &steps, clients)
                        .into_iter()
                        .filter_map(|(r, q)| stats::ratio(Some(q), base_repeats.get(&r).copied()))
                        .collect()
                } else {
                    Vec::new()
                };
                points.push(CrossoverPoint {
                    clients,
                    target_qps: t,
                    base_qps: b,
                    ratio,
                    paired_repeats: ratios.len() as u32,
                    qps_test: None,
                });
                sets.push(ratios);
            }
            let rule = model.method.rule(true);
            for ((p, set), v) in points.iter_mut().zip(&sets).zip(stats::family_verdicts(
                &sets,
                &vec!["group"; sets.len()],
                rule,
            )) {
                p.qps_test = v.map(|v| metric_test("qps", true, set.len(), &v));
            }
            out.push(crossover(target, base, group, points));
        }
    }
    out
}

fn crossover(
    target: &str,
    base: &str,
    group: &StepGroup,
    points: Vec<CrossoverPoint>,
) -> Crossover {
    let obs: Vec<Obs> = points.iter().map(Obs::of).collect();
    let j = judge(&obs);
    let title = group.title.clone();
    let sentence = sentence(target, base, &title, &j, &obs);
    Crossover {
        target: target.to_string(),
        base: base.to_string(),
        group: group.id.clone(),
        title,
        kind: j.kind.as_str().to_string(),
        clients: j.clients,
        noise: j.noise.map(|n| n.as_str().to_string()),
        confirmed_between: j.between,
        points,
        sentence,
    }
}

/// Where a target stands against its base at one client count, by its QPS ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ahead,
    Behind,
    Level,
}

impl Side {
    fn of(ratio: f64) -> Side {
        if ratio > 1.0 {
            Side::Ahead
        } else if ratio < 1.0 {
            Side::Behind
        } else {
            Side::Level
        }
    }

    /// The verdict that confirms this side beyond noise.
    fn verdict(self) -> Option<Change> {
        match self {
            Side::Ahead => Some(Change::Improvement),
            Side::Behind => Some(Change::Regression),
            Side::Level => None,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Side::Ahead => "ahead",
            Side::Behind => "behind",
            Side::Level => "level",
        }
    }
}

/// What the ratios say, before noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Overtakes,
    FallsBehind,
    FasterThroughout,
    SlowerThroughout,
    NoLastingLead,
    TooFewCounts,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Overtakes => "overtakes",
            Kind::FallsBehind => "falls_behind",
            Kind::FasterThroughout => "faster_throughout",
            Kind::SlowerThroughout => "slower_throughout",
            Kind::NoLastingLead => "no_lasting_lead",
            Kind::TooFewCounts => "too_few_counts",
        }
    }
}

/// How the verdicts judge a crossover (or a lead at every count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    Confirmed,
    Bracketed,
    WithinNoise,
    Unconfirmed,
}

impl Evidence {
    fn as_str(self) -> &'static str {
        match self {
            Evidence::Confirmed => "confirmed",
            Evidence::Bracketed => "bracketed",
            Evidence::WithinNoise => "within_noise",
            Evidence::Unconfirmed => "unconfirmed",
        }
    }
}

/// One client count as the rule sees it: the ratio and its verdict (`None`: no test).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Obs {
    clients: u32,
    ratio: Option<f64>,
    verdict: Option<Change>,
    paired_repeats: u32,
}

impl Obs {
    fn of(p: &CrossoverPoint) -> Obs {
        Obs {
            clients: p.clients,
            ratio: p.ratio,
            verdict: p.qps_test.as_ref().map(verdict_of),
            paired_repeats: p.paired_repeats,
        }
    }
}

fn verdict_of(t: &MetricTest) -> Change {
    match t.verdict.as_str() {
        "improvement" => Change::Improvement,
        "regression" => Change::Regression,
        _ => Change::WithinNoise,
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Judgement {
    kind: Kind,
    /// The crossover's client count.
    clients: Option<u32>,
    noise: Option<Evidence>,
    between: Option<[u32; 2]>,
    /// The counts with a ratio, and where the target stands at each.
    known: Vec<(Obs, Side)>,
    /// Index into `known` of the crossover's client count.
    at: Option<usize>,
}

/// The crossover rule over the client counts (ascending), then its noise.
fn judge(obs: &[Obs]) -> Judgement {
    let known: Vec<(Obs, Side)> = obs
        .iter()
        .filter_map(|o| o.ratio.map(|r| (*o, Side::of(r))))
        .collect();
    let mut j = Judgement {
        kind: Kind::TooFewCounts,
        clients: None,
        noise: None,
        between: None,
        known,
        at: None,
    };
    if j.known.len() < 2 {
        return j;
    }
    let sides: Vec<Side> = j.known.iter().map(|k| k.1).collect();
    for (side, kind) in [
        (Side::Ahead, Kind::FasterThroughout),
        (Side::Behind, Kind::SlowerThroughout),
    ] {
        if sides.iter().all(|s| *s == side) {
            j.kind = kind;
            j.noise = Some(throughout_noise(&j.known, side));
            return j;
        }
    }
    let new = *sides.last().expect("at least 2 counts");
    let (kind, old) = match new {
        Side::Ahead => (Kind::Overtakes, Side::Behind),
        Side::Behind => (Kind::FallsBehind, Side::Ahead),
        Side::Level => {
            j.kind = Kind::NoLastingLead;
            return j;
        }
    };
    let at = sides
        .iter()
        .rposition(|s| *s != new)
        .expect("not all on the new side")
        + 1;
    if !sides[..at].contains(&old) {
        j.kind = Kind::NoLastingLead;
        return j;
    }
    let (noise, between) = crossing_noise(&j.known, at, old, new);
    j.kind = kind;
    j.clients = Some(j.known[at].0.clients);
    j.noise = Some(noise);
    j.between = between;
    j.at = Some(at);
    j
}

/// A crossover at `known[at]`: confirmed when the count before it is beyond noise on the old
/// side and it on the new; bracketed by the nearest such counts further apart; else within
/// noise when both have a verdict, unconfirmed when not.
fn crossing_noise(
    known: &[(Obs, Side)],
    at: usize,
    old: Side,
    new: Side,
) -> (Evidence, Option<[u32; 2]>) {
    let v = |i: usize| known[i].0.verdict;
    let c = |i: usize| known[i].0.clients;
    let a = (0..at).rev().find(|&i| v(i) == old.verdict());
    let b = (at..known.len()).find(|&i| v(i) == new.verdict());
    match (a, b) {
        (Some(a), Some(b)) if a == at - 1 && b == at => (Evidence::Confirmed, Some([c(a), c(b)])),
        (Some(a), Some(b)) => (Evidence::Bracketed, Some([c(a), c(b)])),
        _ if v(at - 1).is_some() && v(at).is_some() => (Evidence::WithinNoise, None),
        _ => (Evidence::Unconfirmed, None),
    }
}

/// A lead at every count: confirmed when every count is beyond noise on that side.
fn throughout_noise(known: &[(Obs, Side)], side: Side) -> Evidence {
    if known.iter().any(|k| k.0.verdict.is_none()) {
        Evidence::Unconfirmed
    } else if known.iter().all(|k| k.0.verdict == side.verdict()) {
        Evidence::Confirmed
    } else {
        Evidence::WithinNoise
    }
}

/// `1`, `1 and 2`, `1, 2 and 4`.
fn counts(cs: &[u32]) -> String {
    let s: Vec<String> = cs.iter().map(u32::to_string).collect();
    match s.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `QPS ratio 0.80 at 1, n/a at 2, 1.15 at 4 clients`.
fn ratios_text(obs: &[Obs]) -> String {
    let parts: Vec<String> = obs
        .iter()
        .map(|o| {
            let r = o.ratio.map_or_else(|| "n/a".to_string(), two);
            format!("{r} at {}", o.clients)
        })
        .collect();
    let last = obs.last().map_or(0, |o| o.clients);
    let unit = if last == 1 { "client" } else { "clients" };
    format!("QPS ratio {} {unit}", parts.join(", "))
}

/// `at 1 client`, `at 2 and 4 clients`.
fn at_counts(cs: &[u32]) -> String {
    let unit = if cs == [1] { "client" } else { "clients" };
    format!("at {} {unit}", counts(cs))
}

/// Why there is no verdict at the `relevant` counts: one repeat (no count of `known` has 2
/// paired repeats), or too few paired repeats at some of them.
fn unconfirmed_text(known: &[(Obs, Side)], relevant: &[&Obs]) -> String {
    if known.iter().all(|k| k.0.paired_repeats <= 1) {
        return "unconfirmed: one repeat, so noise cannot be judged".to_string();
    }
    let few: Vec<u32> = relevant
        .iter()
        .filter(|o| o.verdict.is_none())
        .map(|o| o.clients)
        .collect();
    format!(
        "unconfirmed: fewer than 2 paired repeats {}",
        at_counts(&few)
    )
}

/// The noise clause of a sentence.
fn noise_text(j: &Judgement) -> Option<String> {
    let noise = j.noise?;
    let verdict_at = |want: Option<Change>, yes: bool| -> Vec<u32> {
        j.known
            .iter()
            .filter(|k| (k.0.verdict == want) == yes)
            .map(|k| k.0.clients)
            .collect()
    };
    Some(match (j.at, noise) {
        (Some(at), Evidence::Unconfirmed) => {
            unconfirmed_text(&j.known, &[&j.known[at - 1].0, &j.known[at].0])
        }
        (None, Evidence::Unconfirmed) => {
            unconfirmed_text(&j.known, &j.known.iter().map(|k| &k.0).collect::<Vec<_>>())
        }
        (Some(at), Evidence::Confirmed | Evidence::Bracketed) => {
            let [a, b] = j.between.expect("a confirmed crossover has its counts");
            let new = j.known[at].1;
            let old = if new == Side::Ahead {
                Side::Behind
            } else {
                Side::Ahead
            };
            let mut s = format!(
                "beyond noise {} at {a} and {} at {b} clients",
                old.word(),
                new.word()
            );
            if noise == Evidence::Bracketed {
                s = format!("confirmed between {a} and {b} clients: {s}, not in between");
            } else {
                s = format!("confirmed: {s}");
            }
            s
        }
        (Some(at), Evidence::WithinNoise) => {
            let off: Vec<u32> = [at - 1, at]
                .into_iter()
                .filter(|&i| j.known[i].0.verdict != j.known[i].1.verdict())
                .map(|i| j.known[i].0.clients)
                .collect();
            format!("within noise {}, so not confirmed", at_counts(&off))
        }
        (None, Evidence::Confirmed) => "confirmed: beyond noise at every count".to_string(),
        (None, _) => {
            let want = j.known[0].1.verdict();
            let (beyond, within) = (verdict_at(want, true), verdict_at(want, false));
            if beyond.is_empty() {
                "within noise at every count".to_string()
            } else {
                format!(
                    "beyond noise at {}, within noise {}",
                    counts(&beyond),
                    at_counts(&within)
                )
            }
        }
    })
}

/// How often the lead changes hands between consecutive counts with a ratio (level counts
/// skipped).
fn lead_changes(known: &[(Obs, Side)]) -> usize {
    let sides: Vec<Side> = known
        .iter()
        .map(|k| k.1)
        .filter(|s| *s != Side::Level)
        .collect();
    sides.windows(2).filter(|w| w[0] != w[1]).count()
}

/// The tl;dr sentence of a crossover.
fn sentence(target: &str, base: &str, title: &str, j: &Judgement, obs: &[Obs]) -> String {
    let mut detail = ratios_text(obs);
    if let Some(n) = noise_text(j) {
        detail.push_str(&format!("; {n}"));
    }
    let changes = lead_changes(&j.known);
    if changes > 1 {
        detail.push_str(&format!("; the lead changes {changes} times"));
    }
    let span = || {
        let (first, last) = (j.known[0].0.clients, j.known[j.known.len() - 1].0.clients);
        format!("{first}–{last}")
    };
    match j.kind {
        Kind::Overtakes | Kind::FallsBehind => {
            let verb = if j.kind == Kind::Overtakes {
                "overtakes"
            } else {
                "falls behind"
            };
            let from = j.clients.expect("a crossover has a client count") as usize;
            format!(
                "{target} {verb} {base} on {title} from {} ({detail})",
                plural(from, "client")
            )
        }
        Kind::FasterThroughout => format!(
            "{target} is faster than {base} on {title} at every client count, {} ({detail})",
            span()
        ),
        Kind::SlowerThroughout => format!(
            "{target} is slower than {base} on {title} at every client count, {} ({detail})",
            span()
        ),
        Kind::NoLastingLead => {
            format!("{target} has no lasting lead over {base} on {title} ({detail})")
        }
        Kind::TooFewCounts => format!(
            "{target} vs {base} on {title}: no crossover can be named, the QPS ratio is known at {} only ({detail})",
            plural(j.known.len(), "client count")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use Change::{Improvement as Up, Regression as Down, WithinNoise as Noisy};

    /// Client counts 1, 2, 4, 8 with these ratios and verdicts; 3 paired repeats where a
    /// verdict is given, else one.
    fn obs(ratios: [Option<f64>; 4], verdicts: [Option<Change>; 4]) -> Vec<Obs> {
        [1, 2, 4, 8]
            .into_iter()
            .zip(ratios)
            .zip(verdicts)
            .map(|((clients, ratio), verdict)| Obs {
                clients,
                ratio,
                verdict,
                paired_repeats: if verdict.is_some() { 3 } else { 1 },
            })
            .collect()
    }

    const NONE: [Option<Change>; 4] = [None; 4];

    fn say(o: &[Obs]) -> (Judgement, String) {
        let j = judge(o);
        let s = sentence("mysql80", "mysql56", "point queries", &j, o);
        (j, s)
    }

    #[test]
    fn a_crossover_is_the_smallest_count_from_which_the_lead_holds() {
        let o = obs(
            [Some(0.80), Some(0.90), Some(1.15), Some(1.40)],
            [Some(Down), Some(Down), Some(Up), Some(Up)],
        );
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::Overtakes, Some(4)));
        assert_eq!(
            (j.noise, j.between),
            (Some(Evidence::Confirmed), Some([2, 4]))
        );
        assert_eq!(
            s,
            "mysql80 overtakes mysql56 on point queries from 4 clients (QPS ratio 0.80 at 1, \
             0.90 at 2, 1.15 at 4, 1.40 at 8 clients; confirmed: beyond noise behind at 2 and \
             ahead at 4 clients)"
        );
        // The reverse.
        let o = obs([Some(1.3), Some(0.7), Some(0.6), Some(0.5)], NONE);
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::FallsBehind, Some(2)));
        assert_eq!(j.noise, Some(Evidence::Unconfirmed));
        assert!(
            s.starts_with(
                "mysql80 falls behind mysql56 on point queries from 2 clients (QPS ratio 1.30 at 1"
            ),
            "{s}"
        );
        assert!(
            s.ends_with("; unconfirmed: one repeat, so noise cannot be judged)"),
            "{s}"
        );
    }

    #[test]
    fn no_crossover_when_one_side_leads_at_every_count() {
        let o = obs([Some(0.5), Some(0.6), Some(0.7), Some(0.9)], NONE);
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::SlowerThroughout, None));
        assert_eq!(
            s,
            "mysql80 is slower than mysql56 on point queries at every client count, 1–8 (QPS \
             ratio 0.50 at 1, 0.60 at 2, 0.70 at 4, 0.90 at 8 clients; unconfirmed: one repeat, \
             so noise cannot be judged)"
        );
        let o = obs(
            [Some(1.1), Some(1.2), Some(1.03), Some(1.3)],
            [Some(Up), Some(Up), Some(Noisy), Some(Up)],
        );
        let (j, s) = say(&o);
        assert_eq!(
            (j.kind, j.noise),
            (Kind::FasterThroughout, Some(Evidence::WithinNoise))
        );
        assert!(
            s.ends_with("; beyond noise at 1, 2 and 8, within noise at 4 clients)"),
            "{s}"
        );
        let o = obs([Some(1.1), Some(1.2), Some(1.1), Some(1.3)], [Some(Up); 4]);
        let (j, s) = say(&o);
        assert_eq!(j.noise, Some(Evidence::Confirmed));
        assert!(
            s.ends_with("; confirmed: beyond noise at every count)"),
            "{s}"
        );
    }

    #[test]
    fn flip_flops_take_the_last_lasting_lead_and_say_the_lead_changed() {
        let o = obs(
            [Some(0.95), Some(1.05), Some(0.97), Some(1.04)],
            [Some(Noisy); 4],
        );
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::Overtakes, Some(8)));
        assert_eq!((j.noise, j.between), (Some(Evidence::WithinNoise), None));
        assert!(
            s.ends_with(
                "; within noise at 4 and 8 clients, so not confirmed; the lead changes 3 times)"
            ),
            "{s}"
        );
        // Beyond noise only further out: bracketed.
        let o = obs(
            [Some(0.80), Some(0.98), Some(1.01), Some(1.30)],
            [Some(Down), Some(Noisy), Some(Noisy), Some(Up)],
        );
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::Overtakes, Some(4)));
        assert_eq!(
            (j.noise, j.between),
            (Some(Evidence::Bracketed), Some([1, 8]))
        );
        assert!(
            s.contains(
                "; confirmed between 1 and 8 clients: beyond noise behind at 1 and ahead at 8 \
                 clients, not in between)"
            ),
            "{s}"
        );
    }

    #[test]
    fn missing_and_failed_counts_are_skipped_and_shown_as_na() {
        // 2 clients missing (say a step failed there): the crossover is the count after it.
        let o = obs(
            [Some(0.9), None, Some(1.2), Some(1.3)],
            [Some(Down), None, Some(Up), Some(Up)],
        );
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.clients), (Kind::Overtakes, Some(4)));
        assert_eq!(
            (j.noise, j.between),
            (Some(Evidence::Confirmed), Some([1, 4]))
        );
        assert!(
            s.contains("QPS ratio 0.90 at 1, n/a at 2, 1.20 at 4"),
            "{s}"
        );
        // Only one count left: nothing can be named.
        let o = obs([None, Some(1.2), None, None], NONE);
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.noise), (Kind::TooFewCounts, None));
        assert_eq!(
            s,
            "mysql80 vs mysql56 on point queries: no crossover can be named, the QPS ratio is \
             known at 1 client count only (QPS ratio n/a at 1, 1.20 at 2, n/a at 4, n/a at 8 \
             clients)"
        );
        // A verdict missing beside the crossover (a repeat failed there): unconfirmed, named.
        let o = obs(
            [Some(0.9), Some(0.95), Some(1.2), Some(1.3)],
            [Some(Down), None, Some(Up), Some(Up)],
        );
        let (j, s) = say(&o);
        assert_eq!(
            j.noise,
            Some(Evidence::Bracketed),
            "1 and 4 still bracket it"
        );
        assert_eq!(j.between, Some([1, 4]));
        let o = obs(
            [Some(0.9), Some(0.95), Some(1.2), Some(1.3)],
            [Some(Noisy), None, Some(Up), Some(Up)],
        );
        let (j, s2) = say(&o);
        assert_eq!(j.noise, Some(Evidence::Unconfirmed));
        assert!(
            s2.contains("; unconfirmed: fewer than 2 paired repeats at 2 clients)"),
            "{s2}"
        );
        assert_ne!(s, s2);
    }

    #[test]
    fn level_at_the_end_or_before_the_lead_is_no_lasting_lead() {
        let o = obs([Some(0.9), Some(1.1), Some(1.2), Some(1.0)], NONE);
        assert_eq!(judge(&o).kind, Kind::NoLastingLead);
        let o = obs([Some(1.0), Some(1.1), Some(1.2), Some(1.3)], NONE);
        let (j, s) = say(&o);
        assert_eq!((j.kind, j.noise), (Kind::NoLastingLead, None));
        assert!(
            s.starts_with(
                "mysql80 has no lasting lead over mysql56 on point queries (QPS ratio 1.00 at 1"
            ),
            "{s}"
        );
    }

    #[test]
    fn count_lists_read_as_english() {
        assert_eq!(counts(&[4]), "4");
        assert_eq!(counts(&[2, 4]), "2 and 4");
        assert_eq!(counts(&[1, 2, 4]), "1, 2 and 4");
    }
}
