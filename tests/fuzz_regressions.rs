//! Regression tests for the crashes the fuzzers in `fuzz/` found (docs/fuzzing.md): each
//! feeds the crashing input, or the smallest input with the same cause, to the library and
//! checks that it is now an error and not a panic.

use std::path::Path;

/// `lab_parse`: `write_rows` near `i64::MAX` overflowed `write_rows * 4` in the insert suite's
/// check (a panic with overflow checks, a wrong answer without).
#[test]
fn lab_insert_write_rows_too_large_is_bad_input() {
    for (key, value) in [
        ("write_rows", "9223372036854775807"),
        ("rows", "4611686018427387904"),
    ] {
        let text = format!(
            "[lab]\nname = \"t\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
             [suite.insert]\n{key} = {value}\n"
        );
        let e = dbdelta::plan::lab::parse(&text, "lab.toml", Path::new(".")).unwrap_err();
        assert!(
            e.0.contains("must be at most 1000000000000"),
            "{key}: {}",
            e.0
        );
    }
}

/// `store_read`: a measurement whose `server_cpu_us_per_op` was overwritten with 5.5e74 scaled
/// its profile's stacks to counts of `u64::MAX` each, and inferno's flame graph overflowed
/// adding them up (`dbdelta profile` and the HTML report draw it).
#[test]
fn profile_with_a_huge_cpu_per_op_draws_without_overflow() {
    use dbdelta::report::model::TargetProfile;
    use dbdelta::report::profile::{diff_svg, flame_svg, folded_per_op};
    let p = TargetProfile {
        target: "a".into(),
        repeats: 1,
        samples: 2,
        cpu_us_per_op: Some(5.5e74),
        instructions_per_op: None,
        unresolved_share: 0.0,
        unresolved_modules: Vec::new(),
        top: Vec::new(),
        errors: Vec::new(),
        stacks: vec![("main;f".into(), 5.5e74), ("main;g".into(), 5.5e74)],
    };
    assert_eq!(
        folded_per_op(&p.stacks).lines().count(),
        1,
        "the overflowing stack is left out"
    );
    assert!(flame_svg(&p, "point-query").is_ok());
    assert!(diff_svg(&p, &p, "point-query", false).is_ok());
}

/// `store_read`: two repeats of a profiled step whose stored `samples` were negative (read back
/// as counts near `u64::MAX`) overflowed the report's sum of samples over repeats.
#[test]
fn profiled_repeats_with_huge_sample_counts_make_a_report() {
    use dbdelta::results::{Measurement, Metric, RunData, StepProfile, TargetInfo, Values};
    let repeat = |repeat| Measurement {
        target: "a".into(),
        step: "point-query".into(),
        clients: 1,
        repeat,
        ops: 10,
        qps: Some(10.0),
        values: Values::default().with(&[(Metric::ServerCpu, 1.0)]),
        profile: Some(StepProfile {
            samples: u64::MAX / 2 + 1,
            unresolved: u64::MAX / 2 + 1,
            folded: "main;f 3\n".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let data = RunData {
        targets: vec![TargetInfo {
            name: "a".into(),
            engine: "sqlite".into(),
            ..Default::default()
        }],
        measurements: vec![repeat(1), repeat(2)],
        ..Default::default()
    };
    let model = dbdelta::report::build(&data, None).unwrap();
    assert_eq!(
        model.profiles.unwrap().steps[0].targets[0].samples,
        u64::MAX
    );
}

/// `store_read` (after the store moved behind its SQL interface): a damaged schema whose column
/// name is not UTF-8 made rusqlite's `column_names` panic in every query of that table; now
/// reading the store is an error.
#[test]
fn a_column_name_that_is_not_utf8_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(dbdelta::store::Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_master
            SET sql = replace(sql, ' lab TEXT NOT NULL', ' ' || CAST(X'6C61FF' AS TEXT) || ' TEXT NOT NULL')
          WHERE name = 'runs';",
    )
    .unwrap();
    drop(conn);
    // Reading `SELECT * FROM runs` (as `load_run` does) would meet the damaged name: opening
    // the store already says it is damaged.
    let e = match dbdelta::store::Store::open_existing(&path) {
        Ok(store) => store.load_run("any").unwrap_err(),
        Err(e) => e,
    };
    assert!(format!("{e:#}").contains("damaged"), "{e:#}");
}

/// `lab_parse` (extended to plan what it parses): a step length of `1e20` seconds
/// panicked in `plan::plan_on` converting it to a `Duration`; `1e12` was planned. Every
/// duration key of every suite, each now bad input naming its line.
#[test]
fn lab_durations_past_their_range_are_bad_input_not_a_panic() {
    let cases = [
        ("sysbench", "rows = 1000\n", "read_secs"),
        ("sysbench", "rows = 1000\n", "write_secs"),
        ("sysbench", "rows = 1000\n", "warmup_secs"),
        ("sysbench", "rows = 1000\n", "postwrite_secs"),
        ("sysbench", "duration = \"adaptive\"\n", "max_secs"),
        ("sysbench", "duration = \"adaptive\"\n", "min_secs"),
        ("insert", "rows = 10000\n", "query_secs"),
        ("linkbench", "maxid1 = 5000\n", "request_secs"),
        ("linkbench", "maxid1 = 5000\n", "warmup_secs"),
    ];
    for (suite, other, key) in cases {
        for value in ["1e20", "1e12", "nan", "inf", "-1"] {
            let text = format!(
                "[lab]\nname = \"t\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
                 [suite.{suite}]\n{other}{key} = {value}\n"
            );
            let e = dbdelta::plan::lab::parse(&text, "lab.toml", Path::new(".")).unwrap_err();
            assert!(
                e.0.starts_with(&format!("lab.toml:8: [suite.{suite}] {key}: ")),
                "{suite} {key} = {value}: {}",
                e.0
            );
        }
    }
}

/// `cli_parse`: `--repeats 4294967295` made the plan allocate a cell per repeat (4 GiB, then an
/// abort); the flag's range is now clap's, and a plan of more cells than
/// `range::MAX_CELLS` is refused before any is allocated.
#[test]
fn huge_repeats_and_client_lists_are_refused_before_the_plan_allocates() {
    let e = dbdelta::cli::parse_from(["dbdelta", "run", "--repeats", "4294967295", "--dry-run"])
        .unwrap_err();
    assert!(dbdelta::cli::usage_error(&e).contains("4294967295 is not in 1..=1000"));
    let lab = dbdelta::plan::lab::parse(dbdelta::plan::demo_lab(), "demo", Path::new(".")).unwrap();
    let opts = dbdelta::plan::RunOptions {
        repeats: Some(1000),
        clients: Some(
            (1..=100)
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ..Default::default()
    };
    let machine = dbdelta::cpus::Machine::simple(2);
    let e = dbdelta::plan::plan_on(lab, &opts, machine).unwrap_err();
    assert!(e.0.starts_with("the plan has 200000 cells"), "{}", e.0);
}
