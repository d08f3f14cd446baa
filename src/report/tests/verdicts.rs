//! Report tests: verdicts from repeats (QPS and server CPU/op against scipy, the minimum
//! effect), a step's verdict and the decided counts, unmeasurable and below-resolution steps.

use serde_json::Value;

use crate::results::Metric;

use super::super::fixture::{run_three_repeats, run_two_clients};
use super::super::model::{Decided, Relative, SpreadTest};
use super::instructions::run_with_instructions;
use super::*;

#[test]
fn repeats_give_verdicts() {
    let m = build(&run_three_repeats(), None).unwrap();
    let verdict = |step| m.relative_of("pg17", step, 1).unwrap().verdict.clone();
    assert_eq!(verdict("point-query").as_deref(), Some("regression"));
    assert_eq!(verdict("update-one").as_deref(), Some("improvement"));
    assert_eq!(verdict("scan").as_deref(), Some("within noise"));
    assert!(m.relative_of("pg17", "scan", 1).unwrap().unstable);
    // Student's t on its own; the moderated test is the same here: no group of this run has
    // the 4 steps a prior needs, so each keeps its own variance.
    let student = Options {
        student: true,
        ..Options::default()
    };
    let alone = build_with_options(&run_three_repeats(), &student).unwrap();
    let pq = alone.relative_of("pg17", "point-query", 1).unwrap();
    let ci = pq.ci95.unwrap();
    assert!(
        (ci[0] - 0.88546).abs() < 1e-4 && (ci[1] - 0.93515).abs() < 1e-4,
        "{ci:?}"
    );
    let moderated = m
        .relative_of("pg17", "point-query", 1)
        .unwrap()
        .ci95
        .unwrap();
    assert_eq!(moderated, ci);
    // l.i0 repeat 3 failed: only 2 pairs remain.
    assert_eq!(m.relative_of("pg17", "l.i0", 1).unwrap().paired_repeats, 2);
    assert!(
        m.warnings[0]
            .starts_with("run is incomplete (interrupted?): showing the 4 steps that finished")
    );
    assert!(m.notes.iter().any(|n| n.starts_with("Verdicts on QPS")));
}

#[test]
fn verdicts_on_qps_and_server_cpu_match_scipy() {
    // Independently, in Python: p = scipy.stats.ttest_1samp(np.log(r), 0).pvalue per step
    // (CPU/op ratios are 1/r in this fixture), q = statsmodels multipletests(p, 0.05, "fdr_bh")
    // over the 4 steps; R = 2 selected, so the intervals are at 1 - 2*0.05/4 = 97.5%:
    // exp(mean ± scipy.stats.t.ppf(0.9875, n-1) * sd/sqrt(n)). Student's t: the report's
    // evidence option (the moderated test's numbers are checked in stats).
    let student = Options {
        student: true,
        ..Options::default()
    };
    let m = build_with_options(&run_three_repeats(), &student).unwrap();
    let test = |step: &str, cpu: bool| {
        let r = m.relative_of("pg17", step, 1).unwrap();
        if cpu {
            r.tests.get(Metric::ServerCpu).cloned().unwrap()
        } else {
            r.qps_test.clone().unwrap()
        }
    };
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
    #[rustfmt::skip]
    let want = [
        ("update-one", false, 0.002476285280583777, 0.008983366470094387, [1.074715283180711, 1.1463811408591784], "improvement"),
        ("point-query", false, 0.004491683235047193, 0.008983366470094387, [0.8748327156735325, 0.9465047627465556], "regression"),
        ("l.i0", false, 0.996816874610795, 0.9999999999999999, [0.7752455332540981, 1.2897849224656779], "within noise"),
        ("update-one", true, 0.002476285280583783, 0.008983366470094454, [0.872310232921775, 0.9304789981588568], "improvement"),
        ("point-query", true, 0.004491683235047227, 0.008983366470094454, [1.056518719565882, 1.1430756784513958], "regression"),
    ];
    for (step, cpu, p, q, ci, verdict) in want {
        let t = test(step, cpu);
        assert!(near(t.p, p) && near(t.q, q), "{step} {cpu}: {t:?}");
        assert!(
            near(t.ci[0], ci[0]) && near(t.ci[1], ci[1]),
            "{step} {cpu}: {t:?}"
        );
        assert_eq!(t.verdict, verdict, "{step} {cpu}");
        assert!((t.ci_level - 0.975).abs() < 1e-12);
        assert_eq!((t.family_size, t.family_selected), (4, 2));
        assert_eq!(t.higher_is_better, !cpu);
    }
    // The summary fields mirror the QPS test; ci95 stays the unadjusted interval.
    let pq = m.relative_of("pg17", "point-query", 1).unwrap();
    assert_eq!(pq.verdict.as_deref(), Some("regression"));
    assert_eq!(pq.ci95, Some(test("point-query", false).ci95));
    let g = m.group_of("pg17", "point", 1).unwrap();
    assert_eq!(
        (g.server_cpu_regressions, g.server_cpu_improvements),
        (1, 0)
    );
    let text = render(&m, Format::Text, false);
    assert!(text.contains("Verdicts, pg17 vs pg16: QPS (> 1 is better) and server CPU/op"));
    assert!(
        m.tldr.iter().any(|l| l.contains(
            "verdicts on QPS: 1 regression, 0 improvements; on server CPU/op: 1 regression"
        )),
        "{:?}",
        m.tldr
    );
}

#[test]
fn min_effect_comes_from_the_run_or_the_flag() {
    let mut data = run_three_repeats();
    let m = build(&data, None).unwrap();
    assert_eq!(
        (m.method.min_effect, m.method.min_effect_source.as_str()),
        (0.02, "default")
    );
    data.run.min_effect = Some(0.15);
    let m = build(&data, None).unwrap();
    assert_eq!(m.method.min_effect_source, "lab");
    // 9% and 11% changes are selected, but their intervals lie inside 15%: no change of 15%
    // or more, `unchanged`.
    for step in ["point-query", "update-one"] {
        let t = m
            .relative_of("pg17", step, 1)
            .unwrap()
            .qps_test
            .clone()
            .unwrap();
        assert!(t.selected && t.may_be_below_min_effect, "{t:?}");
        assert_eq!(t.verdict, "unchanged");
    }
    let opts = Options {
        min_effect: Some(0.05),
        ..Options::default()
    };
    let m = build_with_options(&data, &opts).unwrap();
    assert_eq!(m.method.min_effect_source, "--min-effect");
    assert_eq!(
        m.relative_of("pg17", "update-one", 1)
            .unwrap()
            .verdict
            .as_deref(),
        Some("improvement")
    );
}

/// A CPU/op whose step's sample could not cover its operations is stored as no number
/// and flagged; the report shows it as below resolution (`~`), with no ratio, no verdict and no
/// place in the tl;dr or the group summary, and says so in a warning and a note. The JSON
/// carries the flag and stays valid.
#[test]
fn a_cpu_sample_that_missed_its_step_is_below_resolution_not_a_verdict() {
    let mut data = run_three_repeats();
    for m in
        (data.measurements.iter_mut()).filter(|m| m.target == "pg17" && m.step == "point-query")
    {
        m.values.set(Metric::ServerCpu, None);
        m.values.set(Metric::HostCpu, None);
        m.below_resolution = vec!["server_cpu_us_per_op".into(), "host_cpu_us_per_op".into()];
    }
    let m = build(&data, None).unwrap();
    let r = m.relative_of("pg17", "point-query", 1).unwrap();
    assert_eq!(r.ratio(Metric::ServerCpu), None);
    assert!(r.tests.get(Metric::ServerCpu).is_none(), "{r:?}");
    assert_eq!(r.below_resolution[0], "server_cpu_us_per_op", "{r:?}");
    assert!(r.qps_test.is_some(), "QPS is judged as before");
    let g = m.group_of("pg17", "point", 1).unwrap();
    assert_eq!(g.server_cpu_us_per_op_median, None);
    assert_eq!(
        (g.server_cpu_regressions, g.server_cpu_improvements),
        (0, 0)
    );
    let point = (m.tldr.iter())
        .find(|l| l.starts_with("pg17 vs pg16, point queries"))
        .unwrap();
    assert!(
        !point.contains("server CPU/op +") && !point.contains("server CPU/op -"),
        "{point}"
    );
    assert!(
        point.contains("on server CPU/op: 0 regressions, 0 improvements"),
        "{point}"
    );
    let w = m.warnings.join("\n");
    assert!(
        w.contains("below resolution (3 steps)")
            && w.contains(
                "pg17 point-query at 1 client, repeat 2: server_cpu_us_per_op, host_cpu_us_per_op"
            ),
        "{w}"
    );
    let text = render(&m, Format::Text, false);
    let cpu_row = (text.lines())
        .skip_while(|l| !l.starts_with("Server CPU µs/op"))
        .find(|l| l.starts_with(" point-query"))
        .unwrap();
    assert_eq!(
        cpu_row.split('|').map(str::trim).collect::<Vec<_>>()[2..],
        ["~", "~"],
        "pg17's value and ratio: {cpu_row}"
    );
    assert!(text.contains("| CPU/op |   |     ~ |"), "{text}");
    assert!(text.contains("~ also marks a cost its step's sample could not cover"));
    // One repeat of three missing it: the other two still give a value, a ratio and a test.
    let mut data = run_three_repeats();
    let one = (data.measurements.iter_mut())
        .find(|m| m.target == "pg17" && m.step == "point-query")
        .unwrap();
    one.values.set(Metric::ServerCpu, None);
    one.below_resolution = vec!["server_cpu_us_per_op".into()];
    let m = build(&data, None).unwrap();
    let r = m.relative_of("pg17", "point-query", 1).unwrap();
    assert!(!r.below_resolution.contains(&"server_cpu_us_per_op".into()));
    assert!(r.ratio(Metric::ServerCpu).is_some());
    assert_eq!(r.tests.get(Metric::ServerCpu).unwrap().paired_repeats, 2);
    let json: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
    let flagged = (json["measurements"].as_array().unwrap().iter())
        .find(|r| r["below_resolution"][0] == "server_cpu_us_per_op")
        .unwrap();
    assert_eq!(flagged["server_cpu_us_per_op"], Value::Null);
}

/// One repeat with a counting pass at 1 client: pg17's five steps there are a regression, an
/// improvement, two unchanged and one within noise by instructions/op, so 4 of 5 are decided;
/// its steps at 4 clients (not counted, one repeat) have no verdict. Every format says so, from
/// the model's counts.
#[test]
fn decided_steps_are_counted_per_group_per_target_and_in_every_format() {
    let model = build(&run_with_instructions(), None).unwrap();
    let d = model.decided_of("pg17", 1).unwrap();
    let want = Decided {
        steps: 5,
        decided: 4,
        regressions: 1,
        improvements: 1,
        unchanged: 2,
        within_noise: 1,
        unmeasurable: 0,
    };
    assert_eq!(d.counts, want);
    let at4 = model.decided_of("pg17", 4).unwrap().counts;
    assert_eq!((at4.steps, at4.decided, at4.within_noise), (5, 0, 0));
    let group = |g: &str| model.group_of("pg17", g, 1).unwrap().decided.unwrap();
    // point-query is within noise, random-points_range=100 unchanged.
    assert_eq!((group("point").decided, group("point").steps), (1, 2));
    assert_eq!((group("writes").decided, group("writes").steps), (2, 2));
    assert!(model.tldr.contains(
        &"pg17 vs pg16 (1 client): decided 4 of 5 steps: 1 regression, 1 improvement, 2 unchanged; \
          1 within noise"
            .to_string()
    ));
    assert!(model.tldr.contains(
        &"pg17 vs pg16 (4 clients): decided 0 of 5 steps; 5 without a verdict".to_string()
    ));
    let point = (model.tldr.iter())
        .find(|l| l.starts_with("pg17 vs pg16, point queries (1 client)"))
        .unwrap();
    assert!(point.contains(": decided 1 of 2; median"), "{point}");
    let json: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
    assert_eq!(json["decided"][0]["decided"], 4);
    assert_eq!(json["groups"][0]["decided"]["steps"], 2);
    let text = render(&model, Format::Text, false);
    let row = |doc: &str, prefix: &str| -> Vec<String> {
        (doc.lines())
            .filter(|l| l.starts_with(prefix))
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>().join("|"))
            .collect()
    };
    // Point queries at 1 client: pg17 decided 1 of 2, sqlite.wal (not counted) none.
    assert_eq!(row(&text, " (decided)")[0], "(decided)|1 of 2|0 of 2");
    let md = render(&model, Format::Markdown, false);
    assert_eq!(row(&md, "| (decided)")[0], "|(decided)|1 of 2|0 of 2|");
    let html = render(&model, Format::Html, false);
    assert!(
        html.contains("<td>(decided)</td><td class=\"num\">1 of 2</td>"),
        "{html}"
    );
    assert!(html.contains("decided 4 of 5 steps"), "{html}");
}

/// Without any verdict (one repeat, nothing counted), nothing is counted as decided: no
/// `decided` line, column or row, and the JSON's counts are empty.
#[test]
fn a_report_without_verdicts_counts_nothing_as_decided() {
    let model = build(&run_two_clients(), None).unwrap();
    assert!(model.decided.is_empty());
    assert!(model.groups.iter().all(|g| g.decided.is_none()));
    assert!(model.tldr.iter().all(|l| !l.contains("decided")));
    let text = render(&model, Format::Text, false);
    assert!(!text.contains("(decided)"), "{text}");
}

/// A step's verdict, the one "decided" counts: instructions/op's when counted (even within
/// noise), else QPS's when it decides, else server CPU/op's, else QPS's `within noise`.
#[test]
fn a_steps_verdict_is_instructions_then_the_timed_test_that_decides() {
    let model = build(&run_three_repeats(), None).unwrap();
    let mut r = model.relative_of("pg17", "scan", 1).unwrap().clone();
    let set = |r: &mut Relative, qps: &str, cpu: &str| {
        r.qps_test.as_mut().unwrap().verdict = qps.into();
        let mut t = r.tests.get(Metric::ServerCpu).unwrap().clone();
        t.verdict = cpu.into();
        r.tests.set(Metric::ServerCpu, Some(t));
    };
    set(&mut r, "within noise", "within noise");
    assert_eq!(r.step_verdict(), Some("within noise"));
    set(&mut r, "within noise", "regression");
    assert_eq!(r.step_verdict(), Some("regression"), "CPU/op decides");
    set(&mut r, "unchanged", "regression");
    assert_eq!(r.step_verdict(), Some("unchanged"), "QPS decides first");
    r.tests.set_spread(
        Metric::ServerInstr,
        Some(SpreadTest {
            metric: "server_instructions_per_op".into(),
            ratio: 1.0,
            range: [-0.1, 2.0],
            base_spread: 0.6,
            target_spread: 0.6,
            paired: 3,
            interval: None,
            between_starts: None,
            floor: None,
            verdict: "unmeasurable".into(),
            cpu_ratio: None,
            cpu_disagrees: false,
        }),
    );
    assert_eq!(
        r.step_verdict(),
        Some("unmeasurable"),
        "counted: instructions decide"
    );
    // Three steps: a regression, an unchanged one and one within noise: 2 of 3 decided.
    let mut rows = vec![r.clone(), r.clone(), r];
    for (row, v) in rows
        .iter_mut()
        .zip(["regression", "unchanged", "within noise"])
    {
        row.tests.set_spread(Metric::ServerInstr, None);
        set(row, v, "within noise");
    }
    let d = Decided::of(&rows);
    assert_eq!((d.decided, d.steps), (2, 3));
    assert_eq!((d.regressions, d.unchanged, d.within_noise), (1, 1, 1));
}

/// The three-repeat fixture with pg17's `update-one` repeat 2 completing no event (QPS and
/// per-op costs none, as the runner stores it) and its repeat 3 at 3 qps: the case that once
/// showed `update-one` at 0.68 in the relative table and 0.02 in the verdict table.
pub(super) fn run_without_an_event() -> crate::results::RunData {
    let mut data = run_three_repeats();
    for m in (data.measurements.iter_mut()).filter(|m| m.target == "pg17" && m.step == "update-one")
    {
        match m.repeat {
            2 => {
                m.ops = 0;
                m.events = 0;
                m.qps = None;
                m.tps = None;
                m.latency_us = None;
                m.values = crate::results::Values::default();
            }
            3 => m.qps = Some(3.0),
            _ => {}
        }
    }
    data
}

#[test]
fn a_repeat_without_a_completed_event_makes_the_step_unmeasurable_with_a_warning() {
    let model = build(&run_without_an_event(), None).unwrap();
    let r = (model.relative.iter())
        .find(|r| r.target == "pg17" && r.step == "update-one")
        .unwrap();
    assert_eq!(r.step_verdict(), Some("unmeasurable"));
    assert_eq!(r.qps, None, "no ratio from the other repeats alone");
    assert_eq!(r.ratio(Metric::ServerCpu), None, "nor a CPU/op ratio");
    assert!(r.qps_test.is_none());
    let warning = (model.warnings.iter())
        .find(|w| w.contains("update-one") && w.contains("completed no event"));
    assert!(
        warning.is_some_and(|w| w.contains("pg17 repeat 2")),
        "{:#?}",
        model.warnings
    );
}

/// The three-repeat fixture with pg17's `scan` 18× faster in two repeats and as fast in the
/// third: a large ratio its repeats disagree on (the demo's `update-index` at 18.52×).
pub(super) fn run_disagreeing_repeats() -> crate::results::RunData {
    let mut data = run_three_repeats();
    for m in (data.measurements.iter_mut()).filter(|m| m.target == "pg17" && m.step == "scan") {
        let factor = if m.repeat == 2 { 1.0 } else { 18.0 };
        m.qps = m.qps.map(|q| q * factor);
    }
    data
}

#[test]
fn a_large_ratio_within_noise_is_never_a_change_that_could_not_be_seen() {
    let model = build(&run_disagreeing_repeats(), None).unwrap();
    let r = (model.relative.iter())
        .find(|r| r.target == "pg17" && r.step == "scan")
        .unwrap();
    let t = r.qps_test.as_ref().unwrap();
    assert_eq!(t.verdict, "within noise");
    assert!(t.geo_mean > 5.0, "{}", t.geo_mean);
    let text = render(&model, Format::Text, false);
    let line = (text.lines())
        .find(|l| l.contains(" scan ") && l.contains("| QPS"))
        .unwrap();
    assert!(!line.contains("could not be seen"), "{line}");
    assert!(line.contains("the repeats disagree"), "{line}");
}

/// Three repeats with a counting pass on the first: point-query's QPS is a regression (0.91)
/// while its instructions/op (1.00 ±5%) are within noise; update-one's instructions are an
/// improvement like its QPS.
fn run_qps_against_instructions() -> crate::results::RunData {
    let mut data = run_three_repeats();
    for m in data.measurements.iter_mut().filter(|m| m.repeat == 1) {
        let (ratio, spread) = match m.step.as_str() {
            "point-query" => (1.0, 0.05),
            "update-one" => (0.80, 0.001),
            _ => continue,
        };
        let value = match m.target.as_str() {
            "pg17" => 100_000.0 * ratio,
            _ => 100_000.0,
        };
        m.values.set(Metric::ServerInstr, Some(value));
        m.values
            .set(Metric::ServerInstrSpread, Some(value * spread));
    }
    data
}

/// A counted step whose QPS says a regression while its instructions are within noise is named
/// in the Answer with both; the verdict table says the Answer followed the instructions and
/// colours neither that QPS verdict nor the Relative QPS cell.
#[test]
fn the_answer_names_a_step_whose_qps_and_instructions_disagree() {
    use super::super::doc::{Block, Tone};
    let m = build(&run_qps_against_instructions(), None).unwrap();
    let pq = m.relative_of("pg17", "point-query", 1).unwrap();
    assert_eq!(pq.qps_verdict(), Some("regression"));
    assert_eq!(pq.step_verdict(), Some("within noise"));
    let d = &m.summary.disagree;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0].step.as_str(), d[0].other.cost.as_str()),
        ("point-query", "QPS")
    );
    let json: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
    assert_eq!(
        json["summary"]["disagree"][0]["followed"]["verdict"],
        "within noise"
    );
    let text = render(&m, Format::Text, false);
    let answer = text[..text.find("tl;dr").unwrap()]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(answer.contains("QPS says otherwise (1;"), "{answer}");
    assert!(
        answer.contains("point-query, pg17 vs pg16: QPS regression 0.91")
            && answer.contains("but instructions/op within noise 1.00"),
        "{answer}"
    );
    let doc = super::layout::document(&m);
    let cells: Vec<&super::super::doc::Cell> = (doc.iter())
        .filter_map(|b| match b {
            Block::Table(g) => Some(g),
            _ => None,
        })
        .flat_map(|g| {
            g.rows
                .iter()
                .filter(|r| r[0].text.starts_with("point-query"))
        })
        .flatten()
        .collect();
    let verdict = cells
        .iter()
        .find(|c| c.text.starts_with("regression"))
        .expect("the QPS row's verdict");
    assert!(
        verdict
            .text
            .contains("the Answer follows instructions/op: within noise"),
        "{}",
        verdict.text
    );
    assert!(
        cells.iter().all(|c| c.tone == Tone::Plain),
        "a colour the Answer contradicts: {cells:?}"
    );
}

/// The Answer says once which metric decided, and why, when CPU/op decided a step, and shows
/// the ratio of the means beside a paired ratio whose interval it lies outside (1.26, 1.20–1.30,
/// against means that moved 11%), saying what the paired ratio is.
#[test]
fn the_answer_says_which_metric_decides_and_what_a_paired_ratio_is() {
    let one_line = |m: &ReportModel| {
        let text = render(m, Format::Text, false);
        let answer = &text[..text.find("tl;dr").unwrap()];
        answer.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let mut m = build(&run_three_repeats(), None).unwrap();
    let plain = one_line(&m);
    assert!(!plain.contains("Each step's verdict follows"), "{plain}");
    assert!(!plain.contains("ratio of the means"), "{plain}");
    for c in m.summary.changed.iter_mut() {
        match c.step.as_str() {
            "point-query" => c.deciding.cost = "CPU/op".into(),
            _ => (c.deciding.ratio, c.deciding.interval) = (1.26, [1.2, 1.3]),
        }
    }
    let said = one_line(&m);
    assert!(
        said.contains("here 1 step by CPU/op, 1 step by QPS")
            && said.contains("else its server CPU/op (steadier than QPS"),
        "{said}"
    );
    assert!(
        said.contains("update-one, pg17 vs pg16: QPS 1.26 (interval 1.20–1.30; > 1 is faster; ratio of the means 1.11)"),
        "{said}"
    );
    assert!(
        said.contains("is the geometric mean of the repeats' paired ratios"),
        "{said}"
    );
}
