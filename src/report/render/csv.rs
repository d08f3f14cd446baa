//! The CSV report: the model in long form, one row per target × clients × step (means over the
//! repeats, as every other format shows them), for pandas, SQLite or a spreadsheet.
//!
//! Owns the column set and how values are written: a header of snake_case names that carry
//! their unit, numbers in plain decimal (no separators, signs or colour), an empty cell for a
//! value that was not measured or cannot be computed, booleans as `true`/`false`, quoting by
//! the `csv` crate (RFC 4180). It must not compute numbers (that is `build`'s job) or do I/O.

use super::super::model::{
    Aggregate, MeasurementRow, MetricTest, Relative, ReportModel, TargetSummary,
};
use crate::results::metrics::{METRICS, Part};

/// What a fixed column holds: text, `true`/`false`, or a number (or empty). The metric columns
/// are numbers but for each verdict's `<short>_verdict` (text) and `<short>_unstable`
/// (`true`/`false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Bool,
    Num,
}
use Kind::{Bool, Num, Text};

/// The fixed columns of one kind, in column order.
fn fixed(kind: Kind) -> impl Iterator<Item = &'static str> {
    (HEAD.iter().chain(BETWEEN).chain(TAIL))
        .filter(move |(_, k)| *k == kind)
        .map(|(name, _)| *name)
}

/// The header, in column order. Units: `_us` µs, `_bytes` bytes, `_kb` KB, `qps` per second;
/// `relative_*` = target / its base (the `base` column).
/// The columns before the metrics: the run, target and step, QPS and its verdict, latency.
const HEAD: &[(&str, Kind)] = &[
    ("run_id", Text),
    ("lab", Text),
    ("host_online_cpus", Text),
    ("host_cpu_topology", Text),
    ("target", Text),
    ("engine", Text),
    ("server_version", Text),
    ("placement", Text),
    ("server_cpus", Text),
    ("client_cpus", Text),
    ("is_base", Bool),
    ("base", Text),
    ("suite", Text),
    ("group", Text),
    ("step", Text),
    ("step_index", Num),
    ("clients", Num),
    ("tables", Num),
    ("rows_per_table", Num),
    ("repeats", Num),
    ("seconds", Num),
    ("duration_rule", Text),
    ("precision_target", Num),
    ("ran_to_max", Num),
    ("qps", Num),
    ("relative_qps", Num),
    ("relative_qps_ci95_low", Num),
    ("relative_qps_ci95_high", Num),
    ("verdict", Text),
    ("unstable", Bool),
    ("relative_qps_p", Num),
    ("relative_qps_q", Num),
    ("relative_qps_ci_low", Num),
    ("relative_qps_ci_high", Num),
    ("relative_qps_ci_level", Num),
    ("relative_qps_df", Num),
    ("relative_qps_detectable", Num),
    ("tps", Num),
    ("latency_p50_us", Num),
    ("latency_p90_us", Num),
    ("latency_p95_us", Num),
    ("latency_p99_us", Num),
    ("latency_p999_us", Num),
    ("latency_max_us", Num),
    ("latency_mean_us", Num),
];

/// Between the costs per op (with the engine's own IO) and the step's own values: whether the
/// device IO is the engine's, and which ratios are too coarse.
const BETWEEN: &[(&str, Kind)] = &[
    ("device_reads_confirmed", Bool),
    ("device_writes_confirmed", Bool),
    ("below_resolution", Text),
];

/// The columns after the metrics: within-step noise, flags, failures, the client sweep, the
/// Insert Benchmark, profiles and invocations.
const TAIL: &[(&str, Kind)] = &[
    ("step_seconds", Num),
    ("qps_cv", Num),
    ("qps_precision", Num),
    ("too_short", Bool),
    ("too_noisy", Bool),
    ("client_bound", Bool),
    ("wakeup_bound", Bool),
    ("settling", Bool),
    ("server_cpus_seen", Text),
    ("client_cpus_seen", Text),
    ("errors", Num),
    ("failed", Bool),
    ("target_failed", Bool),
    ("error", Text),
    ("log_path", Text),
    ("group_qps", Num),
    ("relative_group_qps", Num),
    ("group_qps_verdict", Text),
    ("crossover", Text),
    ("crossover_clients", Num),
    ("crossover_noise", Text),
    ("insert_rate", Num),
    ("insert_quartile", Text),
    ("background_rows_per_sec", Num),
    ("background_target_rows_per_sec", Num),
    ("background_worst_share", Num),
    ("sla", Text),
    ("profile_top_functions", Text),
    ("profile_note", Text),
    ("invocations", Text),
];

/// A verdict's columns after its metric's ratio, from its short name `s`: `s_verdict`,
/// `s_unstable`, then `relative_s_` + each of these.
const VERDICT_STATS: [&str; 9] = [
    "p",
    "q",
    "ci_low",
    "ci_high",
    "ci_level",
    "ci95_low",
    "ci95_high",
    "df",
    "detectable",
];

/// The columns of the metrics of `parts` that the table aggregates, in table order: the value,
/// its ratio (`relative_<id>`) and its verdict's columns.
fn metric_columns(parts: &[Part]) -> Vec<String> {
    let mut out = Vec::new();
    for d in METRICS
        .iter()
        .filter(|d| d.over_repeats.is_some() && parts.contains(&d.part))
    {
        out.push(d.id.to_string());
        if d.relative {
            out.push(format!("relative_{}", d.id));
        }
        if let Some(s) = d.verdict {
            out.extend([format!("{s}_verdict"), format!("{s}_unstable")]);
            out.extend(VERDICT_STATS.iter().map(|x| format!("relative_{s}_{x}")));
        }
    }
    out
}

/// The header, in column order. Units: `_us` µs, `_bytes` bytes, `_kb` KB, `qps` per second;
/// `relative_*` = target / its base (the `base` column).
pub fn columns() -> Vec<String> {
    let names = |c: &[(&str, Kind)]| c.iter().map(|(c, _)| c.to_string()).collect::<Vec<_>>();
    let mut out = names(HEAD);
    out.extend(metric_columns(&[Part::Cost, Part::OwnIo]));
    out.extend(names(BETWEEN));
    out.extend(metric_columns(&[Part::Step]));
    out.extend(names(TAIL));
    out
}

/// The verdict columns `<short>_<suffix>` of the table's metrics with a verdict.
fn verdict_columns(suffix: &str) -> impl Iterator<Item = String> + '_ {
    METRICS
        .iter()
        .filter_map(move |d| d.verdict.map(|s| format!("{s}_{suffix}")))
}

/// Whether `column` holds text (any other is a number, empty, or `true`/`false`).
pub fn is_text(column: &str) -> bool {
    fixed(Kind::Text).any(|c| c == column) || verdict_columns("verdict").any(|c| c == column)
}

/// Whether `column` holds `true`/`false`.
pub fn is_boolean(column: &str) -> bool {
    fixed(Kind::Bool).any(|c| c == column) || verdict_columns("unstable").any(|c| c == column)
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => v.to_string(),
        _ => String::new(),
    }
}

fn int(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn text(v: Option<&str>) -> String {
    v.unwrap_or_default().to_string()
}

fn flag(v: bool) -> String {
    v.to_string()
}

/// The host's topology in one cell: `cpu:package:core` per online CPU, space-separated (SMT
/// siblings share package and core).
fn topology(h: &crate::results::HostInfo) -> String {
    h.cpu_topology
        .iter()
        .map(|c| format!("{}:{}:{}", c.cpu, c.package, c.core))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What one row's cells are read from.
struct Row<'a> {
    m: &'a ReportModel,
    name: &'a str,
    /// `None` for a target the model has no summary of.
    t: Option<&'a TargetSummary>,
    clients: u32,
    step: &'a str,
    /// `None` for a step a failed target never measured.
    a: Option<&'a Aggregate>,
    /// This target's own row of the step (tables, rows, precision target).
    own: Option<&'a MeasurementRow>,
    /// Any target's row of the step (suite, step index).
    any: Option<&'a MeasurementRow>,
    group: Option<&'a str>,
    rel: Option<&'a Relative>,
}

impl Row<'_> {
    /// A relative value.
    fn r(&self, get: fn(&Relative) -> Option<f64>) -> String {
        num(self.rel.and_then(get))
    }

    /// An aggregate value.
    fn v(&self, get: fn(&Aggregate) -> Option<f64>) -> String {
        num(self.a.and_then(get))
    }

    /// A latency percentile.
    fn lat(&self, get: fn(&crate::results::Latency) -> f64) -> String {
        num(self.a.and_then(|a| a.latency_us.as_ref()).map(get))
    }
}

/// One row: `a` is `None` for a step a failed target never measured.
fn row(
    m: &ReportModel,
    name: &str,
    t: Option<&TargetSummary>,
    clients: u32,
    step: &str,
    a: Option<&Aggregate>,
) -> Vec<String> {
    // Step facts from this target's own rows; the step's index, suite and group from any.
    let own = m
        .measurements
        .iter()
        .find(|r| r.target == name && r.step == step && r.clients == clients);
    let r = Row {
        m,
        name,
        t,
        clients,
        step,
        a,
        own,
        any: own.or_else(|| m.measurements.iter().find(|r| r.step == step)),
        group: m
            .step_groups
            .iter()
            .find(|g| g.steps.iter().any(|s| s == step))
            .map(|g| g.id.as_str()),
        rel: m.relative_of(name, step, clients),
    };
    let mut out = Vec::with_capacity(HEAD.len() + TAIL.len() + METRICS.len() * 3);
    out.extend(identity(&r));
    out.extend(step_facts(&r));
    out.extend(throughput(&r));
    out.extend(latency(&r));
    out.extend(metric_cells(&r, &[Part::Cost, Part::OwnIo]));
    out.extend(between(&r));
    out.extend(metric_cells(&r, &[Part::Step]));
    out.extend(outcome(&r));
    out.extend(concurrency(m, name, r.group, clients));
    out.extend(insert(m, name, step, clients));
    out.extend(profile(m, name, step, clients));
    out.push(invocations(m, name, step, clients));
    out
}

/// Which invocations of `dbdelta run` measured this target × step × clients (`1`; `1 2` when a
/// `--resume` ran some of its repeats); empty when not known.
fn invocations(m: &ReportModel, name: &str, step: &str, clients: u32) -> String {
    let mut seen: Vec<u32> = (m.measurements.iter())
        .filter(|r| r.target == name && r.step == step && r.clients == clients)
        .map(|r| r.invocation)
        .filter(|&i| i > 0)
        .collect();
    seen.sort_unstable();
    seen.dedup();
    (seen.iter().map(u32::to_string))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A profiled run's cells: the target's top functions on this step (`function=self µs/op`,
/// `; `-separated, most first) and why it has no profile (perf unavailable, a failed
/// recording); both empty in a run that was not profiled.
fn profile(m: &ReportModel, name: &str, step: &str, clients: u32) -> [String; 2] {
    let Some(p) = &m.profiles else {
        return [String::new(), String::new()];
    };
    if let Some(why) = &p.unavailable {
        return [String::new(), format!("no CPU profiles: {why}")];
    }
    let t = (p.steps.iter())
        .filter(|s| s.step == step && s.clients == clients)
        .flat_map(|s| s.targets.iter())
        .find(|t| t.target == name);
    let Some(t) = t else {
        return [String::new(), String::new()];
    };
    let top = (t.top.iter())
        .map(|f| format!("{}={}", f.function, f.self_us_per_op))
        .collect::<Vec<_>>()
        .join("; ");
    [top, t.errors.join("; ")]
}

/// `run_id` to `base`: the run, host and target, and what the target is relative to.
fn identity(r: &Row) -> [String; 12] {
    let (m, t) = (r.m, r.t);
    [
        t.map_or_else(|| m.run.id.clone(), |t| t.run_id.clone()),
        m.run.lab.clone(),
        m.run.host.online_cpus.clone(),
        topology(&m.run.host),
        r.name.to_string(),
        text(t.map(|t| t.engine.as_str())),
        text(t.and_then(|t| t.server_version.as_deref())),
        text(t.map(|t| t.placement.as_str())),
        text(t.and_then(|t| t.server_cpus.as_deref())),
        text(t.and_then(|t| t.client_cpus.as_deref())),
        flag(m.is_base(r.name)),
        text(
            t.and_then(|t| t.relative_to.as_deref())
                .or(r.rel.map(|r| r.base.as_str())),
        ),
    ]
}

/// `suite` to `ran_to_max`: the step, its scale and how long it ran.
fn step_facts(r: &Row) -> [String; 12] {
    let (own, any, a) = (r.own, r.any, r.a);
    [
        text(any.map(|r| r.suite.as_str())),
        text(r.group),
        r.step.to_string(),
        int(any.map(|r| u64::from(r.step_index))),
        r.clients.to_string(),
        int(own.map(|r| u64::from(r.tables))),
        int(own.map(|r| r.rows_per_table)),
        int(Some(a.map_or(0, |a| u64::from(a.repeats)))),
        r.v(|a| a.seconds),
        text(a.map(|a| a.duration_rule.as_str())),
        num(own.and_then(|r| r.precision_target)),
        int(a.map(|a| u64::from(a.ran_to_max))),
    ]
}

/// `qps` to `relative_qps_detectable`: QPS, its ratio to the base and the ratio's verdict.
fn throughput(r: &Row) -> [String; 13] {
    let rel = r.rel;
    let qt = rel.and_then(|r| r.qps_test.as_ref());
    [
        r.v(|a| a.qps),
        r.r(|r| r.qps),
        num(rel.and_then(|r| r.ci95).map(|c| c[0])),
        num(rel.and_then(|r| r.ci95).map(|c| c[1])),
        text(rel.and_then(|r| r.verdict.as_deref())),
        flag(rel.is_some_and(|r| r.unstable)),
        num(qt.map(|t| t.p)),
        num(qt.map(|t| t.q)),
        num(qt.map(|t| t.ci[0])),
        num(qt.map(|t| t.ci[1])),
        num(qt.map(|t| t.ci_level)),
        num(qt.map(|t| t.df)),
        num(qt.map(|t| t.detectable)),
    ]
}

/// `tps` to `latency_mean_us`.
fn latency(r: &Row) -> [String; 8] {
    [
        r.v(|a| a.tps),
        r.lat(|l| l.p50),
        r.lat(|l| l.p90),
        r.lat(|l| l.p95),
        r.lat(|l| l.p99),
        r.lat(|l| l.p999),
        r.lat(|l| l.max),
        r.lat(|l| l.mean),
    ]
}

/// The cells of [`metric_columns`]`(parts)`: each aggregated value, its ratio and its verdict.
fn metric_cells(r: &Row, parts: &[Part]) -> Vec<String> {
    let mut out = Vec::new();
    for d in METRICS
        .iter()
        .filter(|d| d.over_repeats.is_some() && parts.contains(&d.part))
    {
        let v = r.a.and_then(|a| a.get(d.metric));
        out.push(if d.integer() {
            int(v.map(|v| v as u64))
        } else {
            num(v)
        });
        if d.relative {
            out.push(num(r.rel.and_then(|x| x.ratio(d.metric))));
        }
        if d.verdict.is_some() {
            let t = r.rel.and_then(|x| x.tests.get(d.metric));
            out.extend([
                text(t.map(|t| t.verdict.as_str())),
                flag(t.is_some_and(|t| t.unstable)),
            ]);
            out.extend(verdict_stats(t).map(num));
        }
    }
    out
}

/// The values of [`VERDICT_STATS`], in order.
fn verdict_stats(t: Option<&MetricTest>) -> [Option<f64>; 9] {
    let Some(t) = t else { return [None; 9] };
    let (p, q, ci, level, ci95) = (t.p, t.q, t.ci, t.ci_level, t.ci95);
    [
        p,
        q,
        ci[0],
        ci[1],
        level,
        ci95[0],
        ci95[1],
        t.df,
        t.detectable,
    ]
    .map(Some)
}

/// [`BETWEEN`]: whether the device IO is the engine's, and which ratios are too coarse.
fn between(r: &Row) -> [String; 3] {
    let a = r.a;
    [
        flag(a.and_then(|a| a.device_reads_confirmed) == Some(true)),
        flag(a.and_then(|a| a.device_writes_confirmed) == Some(true)),
        r.rel
            .map(|r| r.below_resolution.join(" "))
            .unwrap_or_default(),
    ]
}

/// `step_seconds` to `log_path`: within-step noise, the step's flags and CPUs seen, and
/// whether and why it failed.
fn outcome(r: &Row) -> [String; 15] {
    let (a, t) = (r.a, r.t);
    let w = a.and_then(|a| a.within_step.as_ref());
    let step_error =
        r.m.measurements
            .iter()
            .filter(|x| x.target == r.name && x.step == r.step && x.clients == r.clients)
            .find_map(|x| x.error.as_deref());
    [
        int(w.map(|w| u64::from(w.seconds))),
        num(w.and_then(|w| w.cv)),
        num(w.and_then(|w| w.precision)),
        flag(w.is_some_and(|w| w.too_short)),
        flag(w.is_some_and(|w| w.too_noisy)),
        flag(a.is_some_and(|a| a.client_bound)),
        flag(a.is_some_and(|a| a.wakeup_bound)),
        flag(a.is_some_and(|a| a.settling)),
        text(a.and_then(|a| a.server_cpus_seen.as_deref())),
        text(a.and_then(|a| a.client_cpus_seen.as_deref())),
        int(Some(a.map_or(0, |a| a.errors))),
        flag(a.is_none_or(|a| a.repeats == 0)),
        flag(t.is_some_and(|t| t.failed)),
        text(step_error.or(t.filter(|t| t.failed).and_then(|t| t.error.as_deref()))),
        text(t.and_then(|t| t.log_path.as_deref())),
    ]
}

/// The client-sweep columns: this target's group QPS at this count, its ratio and verdict
/// against its base, and the target × group's crossover (empty without a sweep).
fn concurrency(m: &ReportModel, name: &str, group: Option<&str>, clients: u32) -> [String; 6] {
    let g = group.and_then(|g| m.group_qps_of(name, g, clients));
    let x = group.and_then(|g| m.crossover_of(name, g));
    let p = x.and_then(|x| x.points.iter().find(|p| p.clients == clients));
    [
        num(g.and_then(|g| g.qps)),
        num(p.and_then(|p| p.ratio)),
        text(
            p.and_then(|p| p.qps_test.as_ref())
                .map(|t| t.verdict.as_str()),
        ),
        text(x.map(|x| x.kind.as_str())),
        int(x.and_then(|x| x.clients).map(u64::from)),
        text(x.and_then(|x| x.noise.as_deref())),
    ]
}

/// The Insert Benchmark's summary cell of this target × step (empty for other suites): its
/// rate, quartile mark, and for query steps the background insert rate against its target and
/// `sla` = `met` or `failed`.
fn insert(m: &ReportModel, name: &str, step: &str, clients: u32) -> [String; 6] {
    let cell = (super::super::suites::insert_summaries(m).iter())
        .filter(|s| s.clients == clients)
        .flat_map(|s| s.rows.iter().filter(|r| r.target == name))
        .flat_map(|r| r.cells.iter().filter(|c| c.step == step))
        .next();
    let b = cell.and_then(|c| c.background.as_ref());
    [
        num(cell.and_then(|c| c.rate)),
        text(cell.and_then(|c| c.quartile.as_deref())),
        num(b.map(|b| b.achieved_rows_per_sec)),
        num(b.and_then(|b| b.target_rows_per_sec)),
        num(b.and_then(|b| b.worst_share)),
        text(b.map(|b| if b.sla_met { "met" } else { "failed" })),
    ]
}

/// The CSV text: a header, then targets in the model's order, each by client count and step in
/// report order. A failed target gets a row (`failed` = true, numbers empty) for every step it
/// did not measure, or one row without a step when nothing was measured at all.
pub fn render(m: &ReportModel) -> String {
    let mut names: Vec<&str> = m.targets.iter().map(|t| t.name.as_str()).collect();
    for a in &m.aggregates {
        if !names.contains(&a.target.as_str()) {
            names.push(&a.target);
        }
    }
    let steps: Vec<&str> = m
        .step_groups
        .iter()
        .flat_map(|g| g.steps.iter().map(String::as_str))
        .collect();
    let header = columns();
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut write = |record: Vec<String>| {
        debug_assert_eq!(record.len(), header.len());
        w.write_record(&record)
            .expect("writing CSV to memory cannot fail");
    };
    write(header.clone());
    for name in names {
        let t = m.targets.iter().find(|t| t.name == name);
        let failed = t.is_some_and(|t| t.failed);
        let mut wrote = false;
        for &clients in &m.clients {
            for step in &steps {
                let a = m.aggregate(name, step, clients);
                if a.is_some() || failed {
                    write(row(m, name, t, clients, step, a));
                    wrote = true;
                }
            }
        }
        if failed && !wrote {
            let mut r = row(m, name, t, 0, "", None);
            let clients = HEAD.iter().position(|(c, _)| *c == "clients").unwrap();
            r[clients] = String::new();
            write(r);
        }
    }
    let bytes = w.into_inner().expect("writing CSV to memory cannot fail");
    String::from_utf8(bytes).expect("every cell is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::super::super::fixture::{
        run_pre_post, run_sweep, run_three_repeats, run_two_clients,
    };
    use super::super::super::{Format, build, render};
    use super::*;

    /// Every record of `out`, parsed back by the `csv` crate (header checked).
    fn records(out: &str) -> Vec<::csv::StringRecord> {
        let mut r = ::csv::Reader::from_reader(out.as_bytes());
        let header: Vec<&str> = r.headers().unwrap().iter().collect();
        assert_eq!(header, columns());
        r.records().map(|r| r.unwrap()).collect()
    }

    fn cell<'a>(r: &'a ::csv::StringRecord, column: &str) -> &'a str {
        &r[columns().iter().position(|c| c == column).unwrap()]
    }

    /// The row of `target`, `step` and `clients`.
    fn find_row<'a>(
        rows: &'a [::csv::StringRecord],
        target: &str,
        step: &str,
        clients: &str,
    ) -> &'a ::csv::StringRecord {
        rows.iter()
            .find(|r| {
                cell(r, "target") == target
                    && cell(r, "step") == step
                    && cell(r, "clients") == clients
            })
            .unwrap_or_else(|| panic!("no row {target} {step} {clients}"))
    }

    #[test]
    fn snapshot_csv() {
        let model = build(&run_two_clients(), None).unwrap();
        insta::assert_snapshot!("two_clients_csv", render(&model, Format::Csv, false));
    }

    #[test]
    fn every_cell_loads_without_fixes() {
        for data in [
            run_two_clients(),
            run_three_repeats(),
            run_pre_post(),
            run_sweep(),
        ] {
            let model = build(&data, None).unwrap();
            let out = render(&model, Format::Csv, true);
            assert!(!out.contains('\u{1b}'), "no colour in CSV");
            let rows = records(&out);
            assert!(!rows.is_empty());
            for row in &rows {
                assert_eq!(row.len(), columns().len());
                for (column, value) in columns().iter().zip(row.iter()) {
                    if is_boolean(column) {
                        assert!(value == "true" || value == "false", "{column}: {value:?}");
                    } else if !is_text(column) {
                        assert!(
                            value.is_empty() || value.parse::<f64>().is_ok_and(f64::is_finite),
                            "{column}: {value:?} is neither a number nor empty"
                        );
                        assert!(!value.contains(['+', ',', ' ']), "{column}: {value:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_row_per_target_clients_step_with_flags() {
        let model = build(&run_two_clients(), None).unwrap();
        let rows = records(&render(&model, Format::Csv, false));
        // 3 measured targets × 2 client counts × 5 steps, and the failed target (which measured
        // nothing) on every one of those 10 step × clients pairs.
        assert_eq!(rows.len(), 3 * 2 * 5 + 2 * 5);
        let find = |target: &str, step: &str, clients: &str| find_row(&rows, target, step, clients);
        let r = find("pg17", "update-one", "1");
        assert_eq!(cell(r, "relative_qps").parse::<f64>().unwrap(), 0.91);
        assert_eq!(cell(r, "base"), "pg16");
        assert_eq!(cell(r, "cs_per_op"), "", "not measured: empty, never n/a");
        assert_eq!(cell(r, "is_base"), "false");
        let b = find("pg16", "update-one", "1");
        assert_eq!((cell(b, "is_base"), cell(b, "relative_qps")), ("true", ""));
        assert_eq!(cell(b, "qps"), "14250");
        assert_eq!(cell(b, "rows_per_table"), "100000");
        assert_eq!(
            cell(find("pg17", "point-query", "4"), "client_bound"),
            "true"
        );
        let f = find("pg17", "update-index", "4");
        assert_eq!((cell(f, "failed"), cell(f, "qps")), ("true", ""));
        assert!(cell(f, "error").starts_with("connection lost"));
        assert_eq!(cell(find("pg17", "update-one", "4"), "errors"), "3");
        let j = find("pg17.jemalloc", "point-query", "1");
        assert_eq!(
            (
                cell(j, "failed"),
                cell(j, "target_failed"),
                cell(j, "repeats")
            ),
            ("true", "true", "0")
        );
        assert_eq!(cell(j, "base"), "pg16");
        assert!(cell(j, "log_path").ends_with("pg17.jemalloc/server.log"));
        assert!(cell(j, "error").starts_with("server did not accept"));
    }

    #[test]
    fn warm_steps_stay_out_and_repeats_are_counted() {
        let rows = records(&render(
            &build(&run_pre_post(), None).unwrap(),
            Format::Csv,
            false,
        ));
        assert!(rows.iter().all(|r| !cell(r, "step").contains(".warm")));
        let rows = records(&render(
            &build(&run_three_repeats(), None).unwrap(),
            Format::Csv,
            false,
        ));
        let r = rows
            .iter()
            .find(|r| cell(r, "target") == "pg17" && cell(r, "step") == "point-query")
            .unwrap();
        assert_eq!(cell(r, "repeats"), "3");
        assert_eq!(cell(r, "verdict"), "regression");
        assert!(cell(r, "relative_qps_ci95_low").parse::<f64>().unwrap() < 0.9);
        // The verdict's own interval (97.5% here) and q, and the CPU verdict beside it.
        let q: f64 = cell(r, "relative_qps_q").parse().unwrap();
        assert!(q < 0.05 && q > cell(r, "relative_qps_p").parse().unwrap());
        assert_eq!(cell(r, "relative_qps_ci_level"), "0.975");
        assert!(cell(r, "relative_qps_ci_high").parse::<f64>().unwrap() < 1.0);
        assert_eq!(cell(r, "server_cpu_verdict"), "regression");
        assert_eq!(cell(r, "server_cpu_unstable"), "false");
        assert!(
            cell(r, "relative_server_cpu_ci_low")
                .parse::<f64>()
                .unwrap()
                > 1.0
        );
        assert_eq!(
            (cell(r, "step_seconds"), cell(r, "too_short")),
            ("10", "false")
        );
        assert!(cell(r, "qps_precision").parse::<f64>().unwrap() < 0.01);
        assert_eq!(
            cell(r, "below_resolution"),
            "reads_per_op read_kb_per_op write_kb_per_op"
        );
        assert_eq!(
            cell(r, "relative_reads_per_op"),
            "",
            "below resolution: empty"
        );
        let scan = rows
            .iter()
            .find(|r| cell(r, "target") == "pg17" && cell(r, "step") == "scan")
            .unwrap();
        assert_eq!(
            (cell(scan, "too_noisy"), cell(scan, "unstable")),
            ("true", "true")
        );
    }

    #[test]
    fn a_target_that_measured_nothing_still_has_a_row() {
        let mut data = run_two_clients();
        data.measurements.clear();
        data.series.clear();
        let rows = records(&render(&build(&data, None).unwrap(), Format::Csv, false));
        assert_eq!(rows.len(), 1);
        assert_eq!(cell(&rows[0], "target"), "pg17.jemalloc");
        assert_eq!(
            (cell(&rows[0], "step"), cell(&rows[0], "clients")),
            ("", "")
        );
        assert_eq!(cell(&rows[0], "failed"), "true");
    }

    #[test]
    fn sweep_rows_carry_group_qps_and_crossovers() {
        let model = build(&run_sweep(), None).unwrap();
        let out = render(&model, Format::Csv, false);
        insta::assert_snapshot!("sweep_csv", out);
        let rows = records(&out);
        // 3 targets × 4 client counts × 5 steps.
        assert_eq!(rows.len(), 60);
        let find = |target: &str, step: &str, clients: &str| find_row(&rows, target, step, clients);
        let r = find("mysql80", "point-query", "2");
        let g = model
            .group_qps_of("mysql80", "point", 2)
            .unwrap()
            .qps
            .unwrap();
        assert_eq!(cell(r, "group_qps").parse::<f64>().unwrap(), g);
        let ratio: f64 = cell(r, "relative_group_qps").parse().unwrap();
        assert!((ratio - 0.90).abs() < 1e-3, "{ratio}");
        assert_eq!(cell(r, "group_qps_verdict"), "regression");
        assert_eq!(
            (
                cell(r, "crossover"),
                cell(r, "crossover_clients"),
                cell(r, "crossover_noise")
            ),
            ("overtakes", "4", "confirmed")
        );
        // Every row of the target × group says the same crossover.
        let same = find("mysql80", "random-points_range=10", "8");
        assert_eq!(cell(same, "crossover_clients"), "4");
        // The base has group QPS but no ratio or crossover.
        let b = find("mysql56", "point-query", "2");
        assert!(!cell(b, "group_qps").is_empty());
        assert_eq!(
            (cell(b, "relative_group_qps"), cell(b, "crossover")),
            ("", "")
        );
        // No group QPS where a step of the group failed; no crossover count without one.
        let f = find("mariadb114", "update-one", "4");
        assert_eq!(
            (cell(f, "group_qps"), cell(f, "relative_group_qps")),
            ("", "")
        );
        let s = find("mariadb114", "read-only_range=10", "1");
        assert_eq!(
            (cell(s, "crossover"), cell(s, "crossover_clients")),
            ("faster_throughout", "")
        );
    }

    #[test]
    fn quoting_follows_rfc_4180() {
        let mut data = run_two_clients();
        data.targets[3].error = Some("bad \"value\", see log\nsecond line".into());
        let out = render(&build(&data, None).unwrap(), Format::Csv, false);
        assert!(out.contains("\"bad \"\"value\"\", see log\nsecond line\""));
        let rows = records(&out);
        let j = rows
            .iter()
            .find(|r| cell(r, "target") == "pg17.jemalloc")
            .unwrap();
        assert_eq!(cell(j, "error"), "bad \"value\", see log\nsecond line");
    }
}
