//! `dbdelta explain` end to end: two SQLite targets that differ in two
//! PRAGMAs, `cache_size = 10` (SQLite re-reads and re-parses pages: more instructions per
//! point read) and `busy_timeout` (no lock is ever waited for here: no instruction moves), are
//! counted in a `--quick --instructions` run of `point-query`; `explain` must split the change
//! into code 1.00× (the twin with the base's values is the base: same library) and config, name
//! `cache_size` and not `busy_timeout`, from 3 twins (T counted again beside them, the whole
//! one, then one half), store the
//! explanation with the run (the report's "Why" section, the JSON's `functions.configuration`,
//! valid against the schema), and refuse an unknown run, target or step in one line, exit 2.
//! The step's differential flame graphs of the instructions render in the HTML report and, through
//! `dbdelta serve`, in Chromium. A target whose `config =` file set `cache_size = 10`, edited to
//! the base's value after the run, is explained from the lines the run stored (config, not code),
//! the file named on standard error.
//!
//! Cost: about 70 s on a 2-core host (two counting cells under callgrind for the run, at once,
//! then three twins, one after the other); 5,000 rows make the cache's effect ~3%, over the lab's
//! `min_effect` of 1%, with pairs of passes within 0.3%. Needs valgrind (installed by
//! `.ci/run`); without it the test says why and passes, except under CI (`CI` set).

mod common;
use common::*;

use serde_json::Value;

const LAB: &str = r#"[lab]
name = "explain"
repeats = 1
instructions = true
instruction_passes = 2
min_effect = 0.01

[[target]]
name = "base"
engine = "sqlite"

[[target]]
name = "small"
engine = "sqlite"
settings = ["cache_size = 10", "busy_timeout = 20000"]
"#;

/// The lab in `d`, run: `point-query` counted on both targets, stored as run `ab`.
fn counted_run(d: &std::path::Path) {
    counted(d, LAB, "ab");
}

/// `lab` in `d`, run: `point-query` counted on both targets, stored as run `name`.
fn counted(d: &std::path::Path, lab: &str, name: &str) {
    std::fs::write(d.join("lab.toml"), lab).unwrap();
    let args = ["-q", "run", "lab.toml", "--quick", "--rows", "5000"];
    let out = run(
        d,
        &[&args[..], &["--only", "point-query", "--name", name]].concat(),
    );
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
}

/// `explain RUN --target small --step point-query` in `d`, which must succeed: its standard
/// output and error, printed with the time since `started`.
fn explained(d: &std::path::Path, run_name: &str, started: std::time::Instant) -> (String, String) {
    let args = ["-q", "explain", run_name, "--target", "small"];
    let out = run(d, &[&args[..], &["--step", "point-query"]].concat());
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "explain failed: {err}");
    eprintln!(
        "{said}{err}(run and explain: {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    (said, err)
}

/// The line `explain` printed for `point-query`.
fn point_query(said: &str) -> &str {
    (said.lines())
        .find(|l| l.starts_with("point-query: "))
        .expect(said)
}

/// One line on standard error, exit 2, nothing on standard output.
fn refused(dir: &std::path::Path, args: &[&str], says: &str) {
    let out = run(dir, args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

#[test]
fn explain_names_the_pragma_that_moves_instructions_and_stores_the_split() {
    if !valgrind_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let _lock = measuring();
    let started = std::time::Instant::now();
    counted_run(d);
    refused(d, &["explain", "nope", "--target", "small"], "no run nope");
    refused(d, &["explain", "ab", "--target", "big"], "--target big");
    refused(d, &["explain", "ab", "--target", "base"], "base");
    let bad_step = ["explain", "ab", "--target", "small", "--step", "scan"];
    refused(d, &bad_step, "--step scan");
    profile_refuses_in_the_runs_own_names(d);
    let (said, _) = explained(d, "ab", started);
    assert!(said.contains("3 twin(s) counted"), "{said}");
    let line = point_query(&said);
    assert!(line.contains("code 1.00×"), "{line}");
    assert!(
        line.contains("cache_size 10 (base -2000) explains"),
        "{line}"
    );
    assert!(!line.contains("busy_timeout"), "{line}");
    // Stored with the run: the report's "Why" and the JSON, valid against the schema.
    let out = run(d, &["report", "ab", "--format", "json"]);
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    let config = &report["functions"]["configuration"][0];
    assert_eq!(config["target"], "small", "{config}");
    assert_eq!(config["twins"], 3, "{config}");
    let keys: Vec<&str> = (config["settings"].as_array().unwrap().iter())
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["cache_size"], "{config}");
    let (ratio, code) = (
        config["ratio"].as_f64().unwrap(),
        config["code"].as_f64().unwrap(),
    );
    assert!(ratio > 1.01, "{config}");
    assert!((code - 1.0).abs() < 0.005, "the twin is the base: {config}");
    let out = run(d, &["report", "ab", "--format", "md"]);
    let md = text(&out.stdout);
    assert!(md.contains("Why: configuration, small vs base"), "{md}");
    assert!(md.contains("cache_size 10 (base -2000) explains"), "{md}");
    let twins = twins_stay_apart(d);
    flame_graphs_render(d, &twins);
}

/// `profile` on the counted run names what it lacks in the run's own names: a step it did not
/// run (the near ones first), a target it does not have, the base (its graphs are the compared
/// target's); never "run it with --instructions", which it did.
fn profile_refuses_in_the_runs_own_names(d: &std::path::Path) {
    let typo = ["profile", "ab", "point-queyr"];
    refused(d, &typo, "did you mean `point-query`?");
    refused(d, &typo, "step point-queyr: run ");
    let nosuch = ["profile", "ab", "point-query", "--target", "nosuch"];
    refused(d, &nosuch, "has no such target; its targets: base, small");
    let base = ["profile", "ab", "point-query", "--target", "base"];
    refused(d, &base, "--target base is the base: name one of small");
}

/// After an explanation the run it explained is still the latest (`report`, `explain
/// latest`); its twins' run is stored as what it is (kind `explain`, the run it explains), out
/// of `list runs` (in `list runs --all`) and `history`; explaining it says which run to
/// explain; every twin names the build of the target it copies.
fn twins_stay_apart(d: &std::path::Path) -> String {
    let db = rusqlite::Connection::open(d.join("dbdelta.db")).unwrap();
    let ids: Vec<(String, Option<String>)> = rows(&db, "SELECT id, name FROM runs");
    assert_eq!(ids.len(), 2, "the run and its twins' run: {ids:?}");
    let ab = ids
        .iter()
        .find(|(_, n)| n.as_deref() == Some("ab"))
        .unwrap()
        .0
        .clone();
    let twins = ids.iter().find(|(id, _)| *id != ab).unwrap().0.clone();
    let out = run(d, &["report", "--format", "json"]);
    let latest: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    assert_eq!(
        latest["run"]["id"],
        ab.as_str(),
        "report: the latest is the run explained"
    );
    let again = ["explain", "latest", "--target", "small", "--step", "scan"];
    refused(
        d,
        &again,
        &format!("--step scan: run {ab} has no such step"),
    );
    let listed = text(&run(d, &["list", "runs"]).stdout);
    assert!(listed.contains(&ab) && !listed.contains(&twins), "{listed}");
    let all = text(&run(d, &["list", "runs", "--all"]).stdout);
    let line = all.lines().find(|l| l.contains(&twins)).expect(&all);
    assert!(
        line.contains(&format!("kind explain (twins of run {ab})")),
        "{all}"
    );
    let history = run(
        d,
        &["history", "--metric", "instructions", "--format", "json"],
    );
    let history = text(&history.stdout);
    assert!(
        history.contains(&ab) && !history.contains(&twins),
        "{history}"
    );
    let twin_run = ["explain", &twins, "--target", "small-again"];
    refused(d, &twin_run, &format!("explain's twins' run of run {ab}"));
    let kind: Vec<(Option<String>, Option<String>)> = rows(
        &db,
        &format!("SELECT kind, explains FROM runs WHERE id = '{twins}'"),
    );
    assert_eq!(kind, [(Some("explain".into()), Some(ab.clone()))]);
    let build = |run: &str, name: &str| -> Vec<(String, Option<String>, Option<String>)> {
        rows(
            &db,
            &format!(
                "SELECT name, server_version, provenance_json FROM targets
                 WHERE run_id = '{run}' AND name {name} ORDER BY position"
            ),
        )
    };
    let small = build(&ab, "= 'small'").remove(0);
    assert!(small.1.is_some(), "{small:?}");
    let twins_targets = build(&twins, "LIKE 'small-%'");
    assert_eq!(twins_targets.len(), 3, "{twins_targets:?}");
    for t in &twins_targets {
        assert_eq!(
            (&t.1, &t.2),
            (&small.1, &small.2),
            "{} is small's build",
            t.0
        );
    }
    twins
}

/// The step's differential flame graphs of the instructions: two figures in the HTML report
/// (the target's widths, then the base's), the extra page reads of `cache_size = 10` red in
/// both; `dbdelta serve` lists and serves them as SVGs, which Chromium renders without a
/// console message (skipped without Chromium, except under CI). Its run list leaves out the
/// `twins` run.
fn flame_graphs_render(d: &std::path::Path, twins: &str) {
    let page = d.join("report.html");
    let out = run(
        d,
        &["report", "ab", "--format", "html", "-o", "report.html"],
    );
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<figure class=\"flame\"><svg").count(), 2);
    let title = "small vs base, point-query: instructions/op in";
    for widths in ["small", "base"] {
        let said = format!("{title} {widths}&apos;s widths");
        assert!(
            html.contains(&said) && html.contains("red: more than base"),
            "{html}"
        );
    }
    // With 10 pages of cache SQLite fetches pages again and again: in small's widths (the
    // first figure), its page-fetch frames are where most instructions were added.
    let first = html.split("<figure class=\"flame\">").nth(1).unwrap();
    let first = &first[..first.find("</figure>").unwrap()];
    let added = |t: &str| -> Option<f64> {
        let (_, delta) = t.rsplit_once("; ")?;
        delta.strip_suffix("%)")?.parse().ok()
    };
    let (most, delta) = (first.split("<title>").skip(1))
        .map(|t| &t[..t.find("</title>").unwrap()])
        .filter_map(|t| Some((t, added(t)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("frames with a change");
    let name = most.split(" (").next().unwrap();
    assert!(delta >= 0.1, "{most}");
    assert!(
        ["Page", "Pcache", "pcache"]
            .iter()
            .any(|p| name.contains(p)),
        "the most added frame is a page fetch: {most}"
    );

    let (server, base) = common::serve::start_serve(d, &[]);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let runs = common::serve::get(port, "/");
    assert!(runs.contains("ab") && !runs.contains(twins), "{runs}");
    let list = common::serve::get(port, "/run/ab/flames");
    let links: Vec<&str> = (list.split("href=\"").skip(1))
        .map(|s| &s[..s.find('"').unwrap()])
        .filter(|h| h.contains(".instructions."))
        .collect();
    assert_eq!(links.len(), 2, "both widths: {list}");
    flames_page_names_and_orders(&list, &links);
    for link in &links {
        let svg = common::serve::get(port, link);
        assert!(svg.starts_with("HTTP/1.1 200"), "{link}: {svg:.300}");
        assert!(svg.contains("Content-Type: image/svg+xml"), "{svg:.300}");
        assert!(svg.contains(title) && svg.matches("<rect").count() > 10);
        if !common::chromium::chromium_available() {
            continue;
        }
        let shown = common::chromium::chromium_url(&format!("{base}{link}"), &["--dump-dom"]);
        let console = common::chromium::console_messages(&shown.stderr);
        assert!(console.is_empty(), "{link}: {}", console.join("\n"));
        assert!(shown.stdout.contains(title), "{}", shown.stdout);
    }
    common::serve::stop_serve(server);
    profile_lists_the_larger_change_first(d);
}

/// `serve`'s flames page lists each graph by its title (the pair, the step's instructions/op
/// ratio, whose widths) with what it shows, the graph of the larger change first: `cache_size =
/// 10` adds page fetches, which only small's widths draw.
fn flames_page_names_and_orders(list: &str, links: &[&str]) {
    let items: Vec<&str> = (list.split("<li>").skip(1))
        .map(|i| &i[..i.find("</li>").unwrap()])
        .filter(|i| i.contains(".instructions."))
        .collect();
    let ratio = "small vs base, point-query (instructions/op 1.";
    assert!(
        items.iter().all(|i| i.contains(ratio)),
        "titles with the ratio: {list}"
    );
    assert!(
        items[0].contains("in small&#39;s widths") && items[0].contains("the larger change"),
        "small's widths first: {list}"
    );
    assert!(links[0].ends_with(".instructions.svg"), "{links:?}");
    assert!(items[1].contains("in base&#39;s widths"), "{list}");
}

/// `dbdelta profile` writes the same graph first, and says on standard error what each shows.
fn profile_lists_the_larger_change_first(d: &std::path::Path) {
    let out = run(d, &["profile", "ab", "point-query", "-o", "flames"]);
    assert!(out.status.success(), "profile: {}", text(&out.stderr));
    let paths: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    let svgs: Vec<&String> = paths.iter().filter(|p| p.ends_with(".svg")).collect();
    assert_eq!(svgs.len(), 2, "{paths:?}");
    assert!(svgs[0].ends_with(".instructions.svg"), "{paths:?}");
    let said = text(&out.stderr);
    let first = said.lines().next().unwrap_or_default();
    assert!(
        first.contains("in small's widths: the larger change: what small added"),
        "{said}"
    );
}

/// An explanation stopped by SIGTERM while it counts leaves its twins' run stored incomplete
/// and no counting log or run directory behind; `run --resume`
/// (the latest incomplete run, or that run named) refuses it in one line, exit 2, instead of
/// running the lab's targets into it. Cost: about 15 s (the run, then explain until its first
/// twin starts).
#[test]
fn a_stopped_explanations_twins_run_is_not_resumed() {
    if !valgrind_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let _lock = measuring();
    counted_run(d);
    let mut explain = dbdelta(d)
        .args(["-q", "explain", "ab", "--target", "small"])
        .args(["--step", "point-query"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its twins' run is stored when explain begins it, before the first twin is counted.
    let db = rusqlite::Connection::open(d.join("dbdelta.db")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let twins: String = loop {
        let incomplete: Vec<(String,)> = rows(&db, "SELECT id FROM runs WHERE complete = 0");
        if let Some((id,)) = incomplete.into_iter().next() {
            break id;
        }
        assert!(explain.try_wait().unwrap().is_none(), "explain ended first");
        assert!(std::time::Instant::now() < deadline, "no twins' run stored");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Stopped while it counts: its counting cell's log exists.
    let work = d.join("dbdelta-work");
    while count_logs(&work).is_empty() {
        assert!(explain.try_wait().unwrap().is_none(), "explain ended first");
        assert!(
            std::time::Instant::now() < deadline,
            "no counting cell started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = explain.id() as libc::pid_t;
    // SAFETY: kill(2) with the PID of our own child, not yet waited for; no memory is shared.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let out = explain.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(&out.stderr)
    );
    // An interrupted counting cell runs again whole: its log goes with it, and with it the
    // run directory (unmarked as the run ends), which `clean` would never see.
    assert_eq!(count_logs(&work), Vec::<std::path::PathBuf>::new());
    let left: Vec<_> = std::fs::read_dir(&work).map_or(Vec::new(), |r| r.flatten().collect());
    assert!(left.is_empty(), "{left:?}");
    // The latest incomplete run is never a twins' run: every run of the lab is complete.
    let out = run(d, &["run", "lab.toml", "--resume"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("every run in"), "{err}");
    // Named: refused as explain's twins' run.
    let out = run(d, &["run", "--resume", &twins]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--resume {twins}")), "{err}");
    assert!(err.contains("`dbdelta explain`'s twins' run"), "{err}");
}

/// The counting cells' logs under `work` (in its run directories).
fn count_logs(work: &std::path::Path) -> Vec<std::path::PathBuf> {
    let runs = std::fs::read_dir(work).map_or(Vec::new(), |r| r.flatten().collect());
    (runs.iter())
        .filter_map(|run| std::fs::read_dir(run.path()).ok())
        .flat_map(|r| r.flatten().map(|e| e.path()))
        .filter(|p| {
            // `….count.log`, and the later server starts' `….count2.log`
            let name = p.to_string_lossy();
            let stem = name.strip_suffix(".log").unwrap_or("");
            stem.trim_end_matches(|c: char| c.is_ascii_digit())
                .ends_with(".count")
        })
        .collect()
}

/// `explain` uses the settings the run used: `small`'s `config =` file is edited to the base's
/// value after the run, and the change is still all configuration (`cache_size`, code 1.00×),
/// counted from the lines the run stored, with one line on standard error naming the file that
/// differs. Cost: the run's two counting cells, then two twins (T again and the whole one).
#[test]
fn explain_counts_the_config_file_the_run_used_not_the_edited_one() {
    if !valgrind_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let _lock = measuring();
    let started = std::time::Instant::now();
    // `small` takes `cache_size = 10` from its `config =` file, and nothing else.
    let settings = r#"settings = ["cache_size = 10", "busy_timeout = 20000"]"#;
    assert!(LAB.contains(settings));
    let lab = LAB.replace(settings, r#"config = "small.conf""#);
    std::fs::write(d.join("small.conf"), "cache_size = 10\n").unwrap();
    counted(d, &lab, "cf");
    std::fs::write(d.join("small.conf"), "cache_size = -2000\n").unwrap();
    let (said, err) = explained(d, "cf", started);
    let line = point_query(&said);
    assert!(line.contains("code 1.00×"), "{line}");
    assert!(
        line.contains("cache_size 10 (base -2000) explains"),
        "{line}"
    );
    let named: Vec<&str> = err.lines().filter(|l| l.contains("small.conf")).collect();
    assert_eq!(named.len(), 1, "{err}");
}
