//! Tests of the command line: clap's definition, the flags shared before a command, usage
//! errors. Must not: start servers or touch a real store.

#[test]
fn cli_definition_is_consistent() {
    use clap::CommandFactory;
    super::Cli::command().debug_assert();
}

/// The help states the ranges of `crate::range`, where they are written once.
#[test]
fn the_help_states_the_ranges() {
    use clap::CommandFactory;
    let mut cmd = super::Cli::command();
    let help = cmd
        .find_subcommand_mut("run")
        .unwrap()
        .render_long_help()
        .to_string();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for range in [crate::range::REPEATS, crate::range::CLIENTS] {
        assert!(help.contains(&range.words()), "{}: {help}", range.words());
    }
    assert!(help.contains(&format!("at most {} cells", crate::range::MAX_CELLS)));
}

/// Every command, walked from the top: `--store` only on the commands that open a store,
/// `-q`/`-v` only on those that print progress, `-o` on every one that prints a report or
/// a listing, and no flag global (a global flag shows in every command's help, used or not).
#[test]
fn every_flag_is_on_the_commands_that_use_it() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, Vec<String>)>) {
        for a in cmd.get_arguments() {
            assert!(!a.is_global_set(), "{path}: --{} is global", a.get_id());
        }
        let ids = cmd.get_arguments().map(|a| a.get_id().to_string());
        out.push((path.clone(), ids.collect()));
        for sub in cmd.get_subcommands() {
            walk(sub, format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut all = Vec::new();
    walk(&super::Cli::command(), "dbdelta".into(), &mut all);
    let with = |id: &str| -> Vec<&str> {
        (all.iter())
            .filter(|(p, ids)| p != "dbdelta" && ids.iter().any(|i| i == id))
            .map(|(p, _)| p.trim_start_matches("dbdelta "))
            .collect()
    };
    let stores = [
        "run",
        "plan",
        "report",
        "compare",
        "history",
        "list",
        "bisect",
        "explain",
        "calibrate",
        "profile",
        "serve",
        "store push",
    ];
    assert_eq!(with("store"), stores);
    let talks = ["run", "fetch", "build", "bisect", "explain", "calibrate"];
    assert_eq!(with("quiet"), talks);
    assert_eq!(with("verbose"), talks);
    let outputs = [
        "run", "plan", "report", "compare", "history", "list", "profile",
    ];
    assert_eq!(with("output"), outputs);
    // Before the command they are refused where they would do nothing.
    for argv in [
        &["dbdelta", "--store", "s.db", "fetch", "postgres@17"][..],
        &["dbdelta", "-q", "report"],
        &["dbdelta", "--store", "s.db", "init"],
    ] {
        let cli = super::parse_from(argv).unwrap();
        let e = super::Shared::of(&cli).err().expect("refused");
        assert!(e.to_string().contains("drop"), "{argv:?}: {e}");
    }
    let cli = super::parse_from(["dbdelta", "--store", "a.db", "report"]).unwrap();
    let super::Command::Report(args) = &cli.command else {
        panic!()
    };
    let top = super::Shared::of(&cli).unwrap();
    assert_eq!(top.store(&args.store), std::path::Path::new("a.db"));
}

/// `bisect`'s plan: the metric that decides (and why), and one-line refusals of what has
/// nothing to bisect or no verdict to decide by.
#[test]
fn bisect_decides_by_instructions_when_counted_and_refuses_what_gives_no_verdict() {
    use crate::runner::bisect::Decider;
    let dir = tempfile::tempdir().unwrap();
    let lab = |extra: &str, targets: usize| {
        // One file per lab (a later lab must not overwrite an earlier one still in use).
        let path = dir
            .path()
            .join(format!("lab-{targets}-{}.toml", extra.len()));
        let mut text = format!("[lab]\nname = \"b\"\n{extra}\n");
        for i in 0..targets {
            text.push_str(&format!(
                "[[target]]\nname = \"t{i}\"\nengine = \"sqlite\"\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let plan = |lab: &str, flags: &[&str]| {
        let mut argv = vec!["dbdelta", "bisect", lab, "--quick"];
        argv.extend(flags);
        let super::Command::Bisect(args) = super::parse_from(argv).unwrap().command else {
            panic!()
        };
        super::bisect::bisect_plan(&args).map_err(|e| e.to_string())
    };
    let counted = lab("repeats = 1\ninstructions = true", 3);
    let (p, by, why, _) = plan(&counted, &["--step", "point-query"]).unwrap();
    assert_eq!((by, p.targets.len()), (Decider::Instructions, 3));
    assert!(why.contains("the lab counts instructions"), "{why}");
    let steps: Vec<&str> = p.steps().map(|s| s.label.as_str()).collect();
    assert_eq!(steps, ["point-query"], "only the judged step runs");
    // The group's steps, and nothing else.
    let (p, ..) = plan(&counted, &["--group", "point"]).unwrap();
    assert!(p.steps().count() > 1 && p.steps().all(|s| s.group == "point"));

    let timed = lab("repeats = 1", 3);
    let e = plan(&timed, &["--step", "point-query"]).unwrap_err();
    assert!(
        e.contains("set repeats >= 2") && e.contains("instructions = true"),
        "{e}"
    );
    let (_, by, why, _) = plan(&timed, &["--step", "point-query", "--repeats", "3"]).unwrap();
    assert_eq!(by, Decider::ServerCpu);
    assert!(why.contains("3 paired repeats"), "{why}");
    let (_, by, ..) = plan(
        &timed,
        &["--step", "point-query", "--metric", "instructions"],
    )
    .unwrap();
    assert_eq!(by, Decider::Instructions);

    for (lab, flags, want) in [
        (lab("", 1), &["--step", "point-query"][..], "one target"),
        (
            counted.clone(),
            &["--step", "x", "--only", "x"],
            "--only/--skip",
        ),
        (counted.clone(), &["--group", "nope"], "--group nope"),
        (
            lab("repeats = \"auto\"", 2),
            &["--step", "point-query"],
            "\"auto\"",
        ),
    ] {
        let e = plan(&lab, flags).unwrap_err();
        assert!(e.contains(want) && !e.contains('\n'), "{flags:?}: {e}");
    }
}

#[test]
fn markdown_is_md_and_png_names_the_png_flag() {
    let cli = super::parse_from(["dbdelta", "report", "--format", "markdown"]).unwrap();
    let super::Command::Report(args) = cli.command else {
        panic!()
    };
    assert_eq!(args.out.format, crate::report::Format::Markdown);
    let e = super::parse_from(["dbdelta", "run", "--format", "png"]).unwrap_err();
    let line = super::usage_error(&e);
    assert!(
        line.starts_with("--format png:") && line.contains("--png DIR"),
        "{line}"
    );
}

#[test]
fn usage_errors_are_one_line() {
    use clap::Parser;
    for argv in [
        &["dbdelta", "run", "--repeats", "4294967295"][..],
        &["dbdelta", "run", "--frob"],
        &["dbdelta", "store", "push"],
        &["dbdelta", "run", "--format", "xml"],
        &["dbdelta", "nope"],
    ] {
        let e = super::Cli::try_parse_from(argv).unwrap_err();
        let line = super::usage_error(&e);
        assert!(
            !line.contains('\n') && !line.starts_with("error"),
            "{argv:?}: {line}"
        );
        assert!(
            line.ends_with("(dbdelta help [COMMAND] lists the flags)"),
            "{line}"
        );
    }
    let e = super::Cli::try_parse_from(["dbdelta", "run", "--repeats", "0"]).unwrap_err();
    assert!(super::usage_error(&e).contains("0 is not in 1..=1000"));
}

/// A mistyped flag is offered the near one (clap's tip, which the one line would cut), and
/// sysbench's names reach dbdelta's: `--threads` is `--clients`, `--table-size` is `--rows`.
#[test]
fn mistyped_flags_get_the_near_name_and_sysbench_names_work() {
    let e = super::parse_from(["dbdelta", "run", "--rowz", "10"]).unwrap_err();
    let line = super::usage_error(&e);
    assert!(
        line.contains("'--rowz' found; did you mean `--rows`?"),
        "{line}"
    );
    let cli = super::parse_from(["dbdelta", "run", "--table-size", "1000", "--threads", "2"]);
    let super::Command::Run(args) = cli.unwrap().command else {
        panic!()
    };
    let shape = &args.shape;
    assert_eq!(
        (shape.rows, shape.clients.as_deref()),
        (Some(1000), Some("2"))
    );
}
