//! The report's warnings: failed and erroring steps, settling servers, run-wide problems,
//! stalls and cross-CPU wake-ups, each said once with where it was taken.
//!
//! Must not: change a number, write method notes (that is `notes`), or do any I/O.

use std::collections::BTreeSet;

use crate::report::fmt::plural;
use crate::report::model::*;
use crate::results::{Measurement, Metric, RunData, Settling};

/// A target's error as one warning line: without a repeated `target NAME: ` prefix, and when
/// it carries a server log's tail, its first line and the tail's last two lines (the whole
/// error stays in the target's `error`).
pub(super) fn condensed(name: &str, error: &str) -> String {
    // In a compare the target is `NAME@A`; its error names NAME (names never contain `@`).
    let plain = name.split('@').next().unwrap_or(name);
    let error = error
        .strip_prefix(&format!("target {plain}: "))
        .unwrap_or(error);
    let lines: Vec<&str> = error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // A build's error quotes its log's end, where the compiler's own message (the first
    // `error:` line) is what says what went wrong.
    let compiler = lines.iter().skip(1).find(|l| l.contains("error:"));
    match (lines.as_slice(), compiler) {
        ([], _) => "no error recorded".into(),
        ([one], _) => one.to_string(),
        ([first, last], _) => format!("{first} {last}"),
        ([first, .., before, last], Some(e)) if e != before && e != last => {
            format!("{first} … {e} … {last}")
        }
        ([first, .., before, last], _) => format!("{first} … {before} {last}"),
    }
}

/// A second below this fraction of the step's median second is reported as a stall.
const STALL_FRACTION: f64 = 0.5;

/// The engine's codes of a step's errors over its operation types, most frequent first, as
/// `; SQLSTATE 40P01 ×12, …` (empty when none carried a code).
pub(super) fn error_codes(m: &Measurement) -> String {
    let mut codes: Vec<(&str, u64)> = Vec::new();
    for c in m.operations.iter().flat_map(|o| &o.error_codes) {
        match codes.iter_mut().find(|(code, _)| *code == c.code) {
            Some((_, n)) => *n += c.count,
            None => codes.push((&c.code, c.count)),
        }
    }
    codes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
    match list.is_empty() {
        true => String::new(),
        false => format!("; {}", list.join(", ")),
    }
}

/// Every warning of the model, in this order: the run and its targets, failed and erroring
/// steps, stalls, then client- and wake-up-bound steps. Each kind is said once, with the list
/// of the steps it applies to (a step alone keeps the one-line form).
pub(super) fn warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = run_warnings(model, data);
    let ok = || data.measurements.iter().filter(|m| !m.failed);
    // Failures with the same error are one warning; different errors stay apart.
    let mut failed: Vec<(String, Vec<String>)> = Vec::new();
    for m in data.measurements.iter().filter(|m| m.failed) {
        let error = m
            .error
            .as_deref()
            .unwrap_or("no error recorded")
            .to_string();
        match failed.iter_mut().find(|(e, _)| *e == error) {
            Some((_, places)) => places.push(place(model, m)),
            None => failed.push((error, vec![place(model, m)])),
        }
    }
    for (error, places) in failed {
        out.push(match places.as_slice() {
            [one] => format!("failed: {one}: {error}; left out of the numbers"),
            _ => format!(
                "failed ({}): {error}; left out of the numbers: {}",
                plural(places.len(), "step"),
                places.join("; ")
            ),
        });
    }
    let errors: Vec<(String, String)> = (data.measurements.iter())
        .filter(|m| m.errors.total() > 0)
        .map(|m| (place(model, m), error_counts(m)))
        .collect();
    let what = "statements failed (retried, reconnected, or fatal to their client)";
    out.extend(said_once("errors", what, errors));
    for r in &model.relative {
        if let Some(why) = &r.unmeasurable {
            out.push(format!(
                "unmeasurable: {} vs {}, {} at {}: {why}; no QPS or CPU/op ratio or verdict (longer \
                 steps: --time, or see the errors)",
                r.target,
                r.base,
                r.step,
                plural(r.clients as usize, "client")
            ));
        }
    }
    out.extend(stall_warnings(model));
    let client_bound: Vec<(String, String)> = (ok())
        .filter(|m| m.client_bound)
        .map(|m| (place(model, m), String::new()))
        .collect();
    out.extend(said_once(
        "client-bound",
        "the client may have been the bottleneck: dbdelta is measured as much as the engine",
        client_bound,
    ));
    let unresolved: Vec<String> = (ok())
        .filter(|m| !m.below_resolution.is_empty())
        .map(|m| format!("{}: {}", place(model, m), m.below_resolution.join(", ")))
        .collect();
    if !unresolved.is_empty() {
        out.push(format!(
            "below resolution ({}): the step's CPU sample could not cover its operations (see the notes), so \
             these costs are stored as no number and get no ratio or verdict: {}",
            plural(unresolved.len(), "step"),
            unresolved.join("; ")
        ));
    }
    let wakeup: Vec<&Measurement> = ok().filter(|m| m.wakeup_bound).collect();
    match wakeup.as_slice() {
        [] => {}
        [m] => out.push(wakeup_warning(&place(model, m), m)),
        several => out.push(wakeup_warnings(model, several)),
    }
    out.extend(settling_warnings(model, data));
    out
}

/// `3 errors (retryable 3, reconnect 0, fatal 0)` and the error codes seen.
fn error_counts(m: &Measurement) -> String {
    let e = m.errors;
    format!(
        "{} (retryable {}, reconnect {}, fatal {}){}",
        plural(e.total() as usize, "error"),
        e.retryable,
        e.reconnect,
        e.fatal,
        error_codes(m)
    )
}

/// One warning of a kind for all the places it applies to: `kind: place: detail` for one place,
/// else `kind (N steps): what; place: detail; …`.
fn said_once(kind: &str, what: &str, entries: Vec<(String, String)>) -> Option<String> {
    let each = |(place, detail): &(String, String)| match detail.is_empty() {
        true => place.clone(),
        false => format!("{place}: {detail}"),
    };
    match entries.as_slice() {
        [] => None,
        [one] if one.1.is_empty() => Some(format!("{kind}: {}: {what}", one.0)),
        [one] => Some(format!("{kind}: {}", each(one))),
        all => Some(format!(
            "{kind} ({}): {what}: {}",
            plural(all.len(), "step"),
            all.iter().map(each).collect::<Vec<_>>().join("; ")
        )),
    }
}

/// The settling guard found the server of this measurement still settling.
pub(super) fn settling(m: &Measurement) -> bool {
    m.settling.as_ref().is_some_and(|s| s.settling)
}

/// A warning per cell (target × clients × repeat) whose server was still settling before its
/// steps, with the evidence and how long to wait.
fn settling_warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for m in data
        .measurements
        .iter()
        .filter(|m| settling(m) && !m.failed)
    {
        if !seen.insert((&m.target, m.clients, m.repeat)) {
            continue;
        }
        let s = m.settling.as_ref().expect("settling(m)");
        let mut place = format!("{} at {}", m.target, plural(m.clients as usize, "client"));
        if model.max_repeats > 1 || m.repeat > 1 {
            place.push_str(&format!(", repeat {}", m.repeat));
        }
        out.push(format!("settling: {place}: {}", settling_note(s)));
    }
    out
}

/// What the idle server did and how long to wait: "mysqld wrote 73.0 MB/s and had 1,012 dirty
/// pages draining at 200/s while idle ...: its dirty pages alone needed ≈ 6 s more: wait at
/// least that much longer (postwrite_secs = 5)" (a lower bound: its other writes may last
/// longer). Without a drain rate there is no estimate, and it says so.
fn settling_note(s: &Settling) -> String {
    let postwrite = format!("postwrite_secs = {}", s.postwrite_secs);
    let wait = match s.wait_secs {
        Some(w) => format!(
            "its dirty pages alone needed ≈ {:.0} s more: wait at least that much longer \
             ({postwrite})",
            w.ceil()
        ),
        None => format!(
            "still busy after {postwrite}: no estimate of how long it needs; \
             try a longer postwrite_secs"
        ),
    };
    format!(
        "{} {} while idle for {:.0} s before the steps, so its steps were measured while it \
         settled: {wait}",
        s.process,
        and_list(&s.reasons),
        s.probe_secs
    )
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Where a measurement was taken, as [`where_taken`] says it.
pub(super) fn place(model: &ReportModel, m: &Measurement) -> String {
    where_taken(model, &m.target, &m.step, m.clients, m.repeat)
}

/// `target step at N clients`, with the repeat when the run has repeats (or it is not the
/// first).
fn where_taken(model: &ReportModel, target: &str, step: &str, clients: u32, repeat: u32) -> String {
    let mut s = format!("{target} {step} at {}", plural(clients as usize, "client"));
    if model.max_repeats > 1 || repeat > 1 {
        s.push_str(&format!(", repeat {repeat}"));
    }
    s
}

/// Warnings about the run as a whole: incomplete, failed targets (with their logs) and
/// measurements of targets the run does not list.
fn run_warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    for t in &model.targets {
        if let Some(why) = &t.unobserved {
            out.push(format!(
                "{}: server CPU, context switches, process IO and memory are n/a: its processes \
                 were not found on this host: {why}",
                t.name
            ));
        }
    }
    if !data.run.complete {
        let finished: BTreeSet<&str> = data
            .measurements
            .iter()
            .filter(|m| !m.failed)
            .map(|m| m.step.as_str())
            .collect();
        out.push(format!(
            "run is incomplete (interrupted?): showing the {} that finished",
            plural(finished.len(), "step")
        ));
    }
    for t in &data.targets {
        if t.failed {
            let mut w = format!(
                "target {} failed: {}",
                t.name,
                t.error
                    .as_deref()
                    .map_or("no error recorded".into(), |e| condensed(&t.name, e))
            );
            if let Some(log) = &t.log_path {
                let which = match log.ends_with("build.log") {
                    true => "build log",
                    false => "server log",
                };
                w.push_str(&format!(" ({which}: {log})"));
            }
            if t.name == model.base && model.compare.is_none() {
                w.push_str(
                    "; it is the base, so relative numbers are n/a (pick another with --base)",
                );
            }
            out.push(w);
        }
    }
    out.extend(clients_beyond_cpus(data));
    let known: BTreeSet<&str> = data.targets.iter().map(|t| t.name.as_str()).collect();
    let unknown: BTreeSet<&str> = data
        .measurements
        .iter()
        .map(|m| m.target.as_str())
        .filter(|t| !known.contains(t))
        .collect();
    for t in unknown {
        out.push(format!(
            "measurements name target {t}, which the run does not list: they appear only in the JSON measurements"
        ));
    }
    out
}

/// More clients than the CPUs dbdelta was allowed to run on (its affinity mask at the start of
/// the run, `HostInfo::usable_cpus`): the client threads and the server queue for CPU, so such
/// steps measure the sharing of CPUs as much as the engine. `None` when the run recorded no
/// CPU list (an older store) or every client count fits.
fn clients_beyond_cpus(data: &RunData) -> Option<String> {
    let usable = crate::cpus::CpuSet::parse(&data.run.host.usable_cpus).ok()?;
    let over: BTreeSet<u32> = (data.measurements.iter())
        .map(|m| m.clients)
        .filter(|&c| c as usize > usable.len())
        .collect();
    let counts: Vec<String> = over.iter().map(u32::to_string).collect();
    let most = *over.last()?;
    Some(format!(
        "clients beyond the CPUs: {} on the {} dbdelta may use ({}): clients and server wait          for a CPU, so {} measure CPU sharing as much as the engine (fewer --clients, or a          host with more CPUs)",
        match counts.as_slice() {
            [_] => plural(most as usize, "client"),
            _ => format!("{} clients", and_list(&counts)),
        },
        plural(usable.len(), "CPU"),
        data.run.host.usable_cpus,
        match counts.as_slice() {
            [_] => "its steps",
            _ => "their steps",
        }
    ))
}

/// One warning for the recorded series whose worst second fell below [`STALL_FRACTION`] of
/// their median second.
fn stall_warnings(model: &ReportModel) -> Option<String> {
    let mut stalls = Vec::new();
    for s in &model.series {
        if s.ops_per_sec_median > 0.0 && s.ops_per_sec_min < STALL_FRACTION * s.ops_per_sec_median {
            let place = where_taken(model, &s.target, &s.step, s.clients, s.repeat);
            let detail = format!(
                "worst second {:.0} ops/s, {:.0}% of the median second ({:.0} ops/s)",
                s.ops_per_sec_min,
                100.0 * s.ops_per_sec_min / s.ops_per_sec_median,
                s.ops_per_sec_median
            );
            stalls.push((place, detail));
        }
    }
    let what = format!(
        "throughput fell below {:.0}% of the step's median second",
        100.0 * STALL_FRACTION
    );
    said_once("stall", &what, stalls)
}

/// Why a step is wake-up-bound and what to do, said once for all of them.
const WAKEUP_WHY: &str = ", so the result measures cross-CPU wake-ups \
    (on a VM, the hypervisor's) and where the scheduler put the two more than the engine; to measure the engine, \
    run both on one CPU with placement = \"shared\" (or set server_cpus and client_cpus)";

/// The numbers behind a wake-up-bound flag: the client's and server's busy shares, their CPU
/// per query, the QPS and the CPUs each was seen on.
fn wakeup_numbers(m: &Measurement) -> [String; 7] {
    let busy = |cpu| crate::cpus::busy_share(cpu, m.qps, m.clients);
    let pct = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.0}%", v * 100.0));
    let us = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.1} µs"));
    let seen = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    let (client, server) = (
        m.values.get(Metric::ClientCpu),
        m.values.get(Metric::ServerCpu),
    );
    [
        pct(busy(client)),
        pct(busy(server)),
        us(client),
        us(server),
        m.qps.map_or("n/a".into(), |q| format!("{q:.0}")),
        seen(&m.server_cpus_seen),
        seen(&m.client_cpus_seen),
    ]
}

/// One wake-up-bound warning for several measurements, on one line: how many (and of how
/// many steps), one of them, and the fix; the csv and json reports flag each.
fn wakeup_warnings(model: &ReportModel, all: &[&Measurement]) -> String {
    let steps: BTreeSet<&str> = all.iter().map(|m| m.step.as_str()).collect();
    format!(
        "wake-up-bound ({} of {}, e.g. {}): each query is a short round trip between threads on \
         different CPUs, so these measure cross-CPU wake-ups more than the engine; fix: placement = \"shared\" \
         (or set server_cpus and client_cpus); wakeup_bound in --format csv or json flags each",
        plural(all.len(), "measurement"),
        plural(steps.len(), "step"),
        place(model, all[0])
    )
}

/// The wake-up-bound warning of one measurement, with the numbers behind it.
fn wakeup_warning(place: &str, m: &Measurement) -> String {
    let [c, s, cu, su, qps, scpus, ccpus] = wakeup_numbers(m);
    format!(
        "wake-up-bound: {place}: each query is a short round trip (the client was on CPU {c} and the \
         server {s} of its wall time: client {cu} + server {su} CPU per query at {qps} QPS) between threads not confined \
         to one CPU (server seen on CPUs {scpus}, client on {ccpus}){WAKEUP_WHY}"
    )
}
