//! Tests of lab parsing: every check's message names the file, line and key, and what a valid
//! lab parses into. Must not: start servers or read files outside a temporary directory.

use std::path::Path;

use super::remote::for_agent;
use super::{AutoRepeats, LabTarget, Order, parse, utf8};
use crate::cpus::Shorthand;
use crate::engine::EngineKind;
use crate::profiler::{CallGraph, ProfileSettings};
use crate::suites::sysbench::SysbenchConfig;

#[test]
fn a_lab_that_is_not_utf8_says_where_and_what_to_do() {
    let e = utf8(b"[lab]\nname = \"caf\xe9\"\n", "lab.toml")
        .unwrap_err()
        .0;
    assert_eq!(
        e,
        "lab.toml:2: is not UTF-8 text (byte 0xE9 at column 12; Latin-1?); save the lab as UTF-8"
    );
    let e = utf8(b"\xff\xfe[\x00l\x00", "lab.toml").unwrap_err().0;
    assert!(e.contains("is UTF-16 text"), "{e}");
    assert_eq!(utf8(b"[lab]", "x").unwrap(), "[lab]");
}

fn err(text: &str) -> String {
    parse(text, "lab.toml", Path::new(".")).unwrap_err().0
}

const OK: &str = r#"
[lab]
name = "t"

[[target]]
name = "a"
engine = "sqlite"
settings = ["synchronous = NORMAL"]

[suite.sysbench]
rows = 1000
read_secs = 0.5
"#;

#[test]
fn count_jobs_needs_instructions_and_a_count_from_1_to_64() {
    let with = |extra: &str| OK.replacen("name = \"t\"\n", &format!("name = \"t\"\n{extra}"), 1);
    let lab = parse(
        &with("instructions = true\ncount_jobs = 2\n"),
        "lab.toml",
        Path::new("."),
    );
    assert_eq!(lab.unwrap().instructions.unwrap().jobs, 2);
    // Without `instructions = true` the keys wait for `--instructions` (the plan applies them
    // or refuses them when nothing counts: plan's tests).
    let lab = parse(
        &with("count_jobs = 2\ninstruction_passes = 4\n"),
        "lab.toml",
        Path::new("."),
    );
    let lab = lab.unwrap();
    assert!(lab.instructions.is_none());
    let (c, at) = lab.counting_keys.unwrap();
    assert_eq!((c.jobs, c.passes), (2, 4));
    assert!(
        at.starts_with("lab.toml:5: [lab] instruction_passes"),
        "{at}"
    );
    let e = err(&with("instructions = true\ncount_jobs = 0\n"));
    assert!(e.contains("count_jobs must be a number"), "{e}");
}

#[test]
fn parses_a_lab_with_defaults() {
    let lab = parse(OK, "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.repeats, 1);
    assert_eq!(lab.order, Order::Interleaved);
    assert_eq!(lab.clients, vec![1]);
    assert_eq!(lab.suite::<SysbenchConfig>().unwrap().rows, 1000);
    assert_eq!(lab.suite::<SysbenchConfig>().unwrap().read_secs, 0.5);
    assert_eq!(lab.suite::<SysbenchConfig>().unwrap().write_secs, 90.0);
    assert!(!lab.suite::<SysbenchConfig>().unwrap().pre);
    let lab = parse(
        &OK.replace("read_secs = 0.5", "read_secs = 0.5\npre = true"),
        "lab.toml",
        Path::new("."),
    )
    .unwrap();
    assert!(
        lab.suite::<SysbenchConfig>().unwrap().pre,
        "pre = true is accepted"
    );
    assert_eq!(
        lab.targets[0].settings,
        vec!["synchronous = NORMAL".to_string()]
    );
}

#[test]
fn unknown_key_names_file_line_section_and_key() {
    let e = err(&OK.replace("rows = 1000", "rowz = 1000"));
    assert!(
        e.starts_with("lab.toml:11: [suite.sysbench] unknown field `rowz`"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn wrong_type_names_the_key() {
    let e = err(&OK.replace("rows = 1000", "rows = \"many\""));
    assert!(
        e.starts_with("lab.toml:11: [suite.sysbench] rows: invalid type"),
        "{e}"
    );
}

#[test]
fn duplicate_target_names_are_rejected() {
    let text = format!("{OK}\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n");
    let e = err(&text);
    assert!(
        e.contains(":15: [[target]] name: target name \"a\" is used twice (first at line 6)"),
        "{e}"
    );
}

/// Every unknown key of `[lab]`, the targets, their builds and the top level in one line, each
/// at its line with the names near it; one key keeps serde's words and the whole list.
#[test]
fn unknown_keys_are_reported_together_with_near_names() {
    let e = err(&OK
        .replace("name = \"t\"\n", "name = \"t\"\nrepeat = 2\n")
        .replace(
            "engine = \"sqlite\"",
            "engin = \"sqlite\"\nbuild = { sorce = \"x\" }",
        ));
    assert_eq!(
        e,
        "lab.toml: 3 unknown fields: line 4 [lab] `repeat` (did you mean `repeats` or `min_repeats`?), \
         line 8 [[target]] `engin` (did you mean `engine`?), line 9 [[target]] `sorce` (did you mean \
         `source`?); docs/lab.md lists every key"
    );
    let e = err(&OK.replace("engine = \"sqlite\"", "engin = \"sqlite\""));
    assert!(
        e.starts_with("lab.toml:7: [[target]] unknown field `engin` (did you mean `engine`?), expected one of `name`, `engine`,"),
        "{e}"
    );
    let e = err(&OK.replace("rows = 1000", "rowz = 1000\ntablez = 1"));
    assert!(e.contains("`rowz` (did you mean `rows`?), line 12 [suite.sysbench] `tablez` (did you mean `tables`?)"), "{e}");
    let e = err(&OK.replace("engine = \"sqlite\"", "engine = \"sqlit\""));
    assert!(
        e.contains("unknown engine \"sqlit\"; did you mean `sqlite`?"),
        "{e}"
    );
}

#[test]
fn missing_config_file_is_named() {
    let e = err(&OK.replace("settings = [", "config = \"nope.conf\"\nsettings = ["));
    assert!(
        e.starts_with("lab.toml:8: [[target]] config: cannot read config file \"nope.conf\""),
        "{e}"
    );
}

#[test]
fn unknown_engine_and_bad_clients() {
    let e = err(&OK.replace("engine = \"sqlite\"", "engine = \"oracle\""));
    assert!(
        e.contains("unknown engine \"oracle\"; this version supports: sqlite")
            && e.contains("mariadb"),
        "{e}"
    );
    let e = err(&OK.replace("name = \"t\"", "name = \"t\"\nclients = [0]"));
    assert!(e.starts_with("lab.toml:4: [lab] clients:"), "{e}");
}

fn target(lines: &str) -> Result<LabTarget, String> {
    let text = format!("[lab]\nname = \"t\"\n\n[[target]]\nname = \"a\"\n{lines}\n");
    parse(&text, "lab.toml", Path::new("."))
        .map(|mut l| l.targets.remove(0))
        .map_err(|e| e.0)
}

#[test]
fn versions_fetch_postgres_mysql_and_mariadb() {
    let t = target("engine = \"mysql\"\nversion = \"mysql@8.0\"").unwrap();
    assert_eq!(t.version.as_deref(), Some("8.0"));
    assert_eq!(t.product, crate::provision::product("mysql"));
    let t = target("engine = \"mariadb\"\nversion = \"10.2\"").unwrap();
    assert_eq!(t.product, crate::provision::product("mariadb"));
    assert_eq!(t.engine.name(), "mysql");
    let t = target("engine = \"postgres\"\nversion = \"postgres@17\"").unwrap();
    assert_eq!(
        (t.version.as_deref(), t.product),
        (Some("17"), crate::provision::product("postgres"))
    );
    let e = target("engine = \"sqlite\"\nversion = \"3\"").unwrap_err();
    assert!(e.contains("SQLite is built into dbdelta"), "{e}");
}

/// `versions` (a sweep) is kept unexpanded here: the plan expands it from the registries.
#[test]
fn versions_take_a_pattern_a_range_or_a_list_and_exclude_version_bin_and_build() {
    use crate::provision::sweep::VersionSet;
    let t = target("engine = \"postgres\"\nversions = \"postgres@16.*\"").unwrap();
    assert_eq!(t.versions, Some(VersionSet::Prefix("16".into())));
    assert_eq!(
        (t.product, t.version),
        (crate::provision::product("postgres"), None)
    );
    let t = target("engine = \"mariadb\"\nversions = \"10.2..10.5\"").unwrap();
    assert_eq!(
        t.versions,
        Some(VersionSet::Range("10.2".into(), "10.5".into()))
    );
    assert_eq!(t.product, crate::provision::product("mariadb"));
    let t = target("engine = \"mysql\"\nversions = [\"5.7\", \"8.0.31\"]").unwrap();
    assert_eq!(
        t.versions,
        Some(VersionSet::List(vec!["5.7".into(), "8.0.31".into()]))
    );
    let e = target("engine = \"postgres\"\nversions = \"16\"").unwrap_err();
    assert_eq!(
        e,
        "lab.toml:7: [[target]] versions: versions = \"16\" is not a pattern \"16.*\", an inclusive range \"16.2..16.8\" or a list [\"16.2\", \"16.9\"]; for one build write version = \"…\""
    );
    let e = target("engine = \"postgres\"\nversion = \"16\"\nversions = \"16.*\"").unwrap_err();
    assert!(
        e.contains("set either versions or version, not both"),
        "{e}"
    );
    let e = target("engine = \"postgres\"\nbin = \"/\"\nversions = \"16.*\"").unwrap_err();
    assert!(e.contains("set either versions or bin, not both"), "{e}");
    let e = target("engine = \"sqlite\"\nversions = \"3.*\"").unwrap_err();
    assert!(e.contains("versions sweeps fetched server builds"), "{e}");
}

#[test]
fn table_ddl_keys_are_checked() {
    let t = target(
        "engine = \"mariadb\"\nstorage_engine = \"RocksDB\"\nindex_options = \"COMMENT 'cfname=cf1'\"",
    )
    .unwrap();
    assert_eq!(t.tables.engine.as_deref(), Some("ROCKSDB"));
    assert!(t.tables.rocksdb());
    assert_eq!(
        t.tables.index_options.as_deref(),
        Some("COMMENT 'cfname=cf1'")
    );
    let t = target(
        "engine = \"mysql\"\nversion = \"8.0\"\ntable_options = \"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8\"",
    )
    .unwrap();
    assert_eq!(
        t.tables.table_options.as_deref(),
        Some("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
    );
    let e =
        target("engine = \"mysql\"\nversion = \"8.0\"\nstorage_engine = \"rocksdb\"").unwrap_err();
    assert!(e.contains("Oracle MySQL builds have no MyRocks"), "{e}");
    let e = target("engine = \"mariadb\"\nstorage_engine = \"myisam\"").unwrap_err();
    assert!(e.contains("unknown storage_engine \"myisam\""), "{e}");
    let e = target("engine = \"postgres\"\ntable_options = \"x\"").unwrap_err();
    assert!(
        e.contains("table_options is for MySQL/MariaDB targets"),
        "{e}"
    );
    let e = target("engine = \"mysql\"\ntable_options = \"x; DROP TABLE y\"").unwrap_err();
    assert!(e.contains("without ';'"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn remote_targets_take_an_ssh_host_and_nothing_that_only_works_here() {
    let pg = |extra: &str| {
        OK.replace(
            "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
            &format!("engine = \"postgres\"\nhost = \"ssh://bench@db1:2222\"{extra}"),
        )
    };
    let lab = parse(
        &pg("\nbin = \"/opt/pg/bin\"\nclient = \"local\""),
        "lab.toml",
        Path::new("."),
    )
    .unwrap();
    let r = lab.targets[0].remote.as_ref().unwrap();
    assert_eq!(r.host.to_string(), "ssh://bench@db1:2222");
    // bin names a directory on that host: not looked for here.
    assert_eq!(
        lab.targets[0].bin.as_deref(),
        Some(Path::new("/opt/pg/bin"))
    );
    assert_eq!(
        err(&pg(
            "\nbuild = { source = \"postgresql-15\", variant = \"o2\" }"
        )),
        "lab.toml:8: [[target]] host: host runs the server on another host, where build does not apply in this version; remove build (bin names a directory on that host)"
    );
    let lab = parse(&pg("\nclient = \"remote\""), "lab.toml", Path::new(".")).unwrap();
    assert!(lab.targets[0].remote.as_ref().unwrap().client_remote);
    let e = err(&pg("\nclient = \"there\""));
    assert!(e.contains("client = \"there\": expected \"local\""), "{e}");
    // The agent's lab: the suites, this target alone, nothing that places or profiles.
    let text = pg("\nclient = \"remote\"").replace("[lab]\n", "[lab]\nplacement = \"split\"\n");
    let agent = for_agent(&text, "a", EngineKind::parse("postgres").unwrap()).unwrap();
    let lab = parse(&agent, "agent", Path::new(".")).unwrap();
    assert_eq!(lab.targets.len(), 1);
    assert!(lab.targets[0].remote.is_none() && lab.placement.shorthand.is_none());
    assert_eq!(lab.suite::<SysbenchConfig>().cloned().unwrap().rows, 1000);
    let e = err(&pg("\nssh_config = \"missing\""));
    assert!(e.contains("ssh_config \"missing\""), "{e}");
    let e = err(&pg("").replace("ssh://bench@db1:2222", "ssh://u:secret@db1"));
    assert!(e.contains("a password does not belong in the lab"), "{e}");
    let e = err(&OK.replace("settings = [", "host = \"ssh://h\"\nsettings = ["));
    assert!(
        e.contains("SQLite runs inside dbdelta's own process"),
        "{e}"
    );
    let e = err(&OK.replace("settings = [", "client = \"local\"\nsettings = ["));
    assert!(e.contains("client is for a target on another host"), "{e}");
}

#[test]
fn connect_targets_take_a_postgres_url_and_nothing_that_starts_a_server() {
    let pg = |extra: &str| {
        OK.replace(
            "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
            &format!("engine = \"postgres\"\nconnect = \"postgres://u@127.0.0.1:6000/db\"{extra}"),
        )
    };
    let lab = parse(&pg(""), "lab.toml", Path::new(".")).unwrap();
    let url = lab.targets[0].connect.as_ref().unwrap();
    assert_eq!((url.user.as_str(), url.port), ("u", 6000));
    assert_eq!(
        err(&pg("\nbin = \"/usr/lib/postgresql/15/bin\"")),
        "lab.toml:8: [[target]] connect: connect names a server that is already running, so bin (which starts, configures or places a server dbdelta runs) cannot apply; remove bin or connect"
    );
    let e = err(&pg("").replace("postgres://u@127.0.0.1:6000/db", "mysql://root@h/db"));
    assert!(
        e.contains("a mysql URL on an engine = \"postgres\" target"),
        "{e}"
    );
    let e = err(&pg("").replace("postgres://u@127.0.0.1:6000/db", "postgres://h:x/db"));
    assert!(
        e.starts_with("lab.toml:8: [[target]] connect: connect = \"postgres://h:x/db\": port"),
        "{e}"
    );
    let my = OK.replace(
        "engine = \"sqlite\"\nsettings = [\"synchronous = NORMAL\"]",
        "engine = \"mariadb\"\nconnect = \"mysql://root@127.0.0.1/db\"",
    );
    let lab = parse(&my, "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.targets[0].connect.as_ref().unwrap().database, "db");
    // dbdelta's MySQL client logs in with a password too.
    let lab = parse(&my.replace("root@", "root:pw@"), "lab.toml", Path::new(".")).unwrap();
    let url = lab.targets[0].connect.as_ref().unwrap();
    assert_eq!(url.password.as_deref(), Some("pw"));
}

#[test]
fn a_lab_without_its_section_and_settings_with_second_statements_are_bad_input() {
    let e = err("[[target]]\nname = \"a\"\nengine = \"sqlite\"\n");
    assert_eq!(
        e,
        "lab.toml: the [lab] section is missing: start the file with [lab] and name = \"…\""
    );
    let e = err(&OK.replace(
        "settings = [\"synchronous = NORMAL\"]",
        "settings = [\"synchronous = NORMAL; DROP TABLE sbtest1\"]",
    ));
    assert!(
        e.contains("[[target]] a: the SQLite setting") && e.contains("holds a ';'"),
        "{e}"
    );
    let e = err(&OK.replace(
        "settings = [\"synchronous = NORMAL\"]",
        "settings = [\"synchronous = NORMAL\\nfoo = 1\"]",
    ));
    assert!(e.contains("spans lines"), "{e}");
}

#[test]
fn profile_keys_need_profile_and_are_checked() {
    let with = |v: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\n{v}"));
    let lab = parse(&with(""), "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.profile, None);
    let lab = parse(&with("profile = true"), "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.profile, Some(ProfileSettings::default()));
    let text = with("profile = true\nprofile_hz = 499\nprofile_call_graph = \"fp\"");
    let lab = parse(&text, "lab.toml", Path::new(".")).unwrap();
    assert_eq!(
        lab.profile,
        Some(ProfileSettings {
            hz: 499,
            call_graph: CallGraph::Fp
        })
    );
    assert_eq!(
        err(&with("profile_hz = 99")),
        "lab.toml:4: [lab] profile_hz: profile_hz needs profile = true"
    );
    assert_eq!(
        err(&with("profile = true\nprofile_hz = 0")),
        "lab.toml:5: [lab] profile_hz: profile_hz must be a sampling rate from 1 to 10000 per second, e.g. 99, not 0"
    );
    assert_eq!(
        err(&with("profile = true\nprofile_call_graph = \"lbr\"")),
        "lab.toml:5: [lab] profile_call_graph: profile_call_graph must be \"dwarf\" or \"fp\", not \"lbr\""
    );
    assert!(err(&with("profile = \"yes\"")).starts_with("lab.toml:4: [lab] profile: invalid type"));
}

#[test]
fn repeats_auto_has_bounds_and_clear_errors() {
    let with = |keys: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\n{keys}"));
    let lab = parse(&with("repeats = \"auto\""), "lab.toml", Path::new(".")).unwrap();
    assert_eq!((lab.repeats, lab.auto), (3, Some(AutoRepeats::DEFAULT)));
    assert_eq!(AutoRepeats::DEFAULT.looks(), 6);
    let keys = "repeats = \"auto\"\nmin_repeats = 2\nmax_repeats = 4";
    let lab = parse(&with(keys), "lab.toml", Path::new(".")).unwrap();
    assert_eq!(
        (lab.repeats, lab.auto),
        (2, Some(AutoRepeats { first: 2, max: 4 }))
    );
    assert_eq!(lab.auto.unwrap().looks(), 3);
    // A first round count above the default bound raises the bound with it.
    let lab = parse(
        &with("repeats = \"auto\"\nmin_repeats = 10"),
        "x",
        Path::new("."),
    )
    .unwrap();
    assert_eq!(lab.auto, Some(AutoRepeats { first: 10, max: 10 }));
    assert_eq!(
        err(&with("repeats = \"often\"")),
        "lab.toml:4: [lab] repeats: repeats must be a whole number from 1 to 1000, or \"auto\" (repeat undecided steps)"
    );
    // 2^32 wrapped to a u32 would be 0; the range is stated whatever the number.
    for n in ["4294967296", "4294967295", "1001", "0", "-1"] {
        let e = err(&with(&format!("repeats = {n}")));
        assert!(e.contains("from 1 to 1000"), "{n}: {e}");
    }
    assert_eq!(
        parse(&with("repeats = 1000"), "x", Path::new("."))
            .unwrap()
            .repeats,
        1000
    );
    assert!(err(&with("repeats = 3\nmax_repeats = 5")).contains("go with repeats = \"auto\""));
    let e = err(&with("repeats = \"auto\"\nmin_repeats = 1"));
    assert!(
        e.contains("min_repeats") && e.contains("from 2 to 50"),
        "{e}"
    );
    let e = err(&with(
        "repeats = \"auto\"\nmin_repeats = 4\nmax_repeats = 3",
    ));
    assert!(
        e.contains("max_repeats") && e.contains("from 4 to 50"),
        "{e}"
    );
}

#[test]
fn min_effect_is_a_fraction_with_a_default() {
    let lab = parse(OK, "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.min_effect, 0.02);
    let with = |v: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\nmin_effect = {v}"));
    let lab = parse(&with("0.05"), "lab.toml", Path::new(".")).unwrap();
    assert_eq!(lab.min_effect, 0.05);
    let e = err(&with("2"));
    assert_eq!(
        e,
        "lab.toml:4: [lab] min_effect: min_effect must be a fraction from 0 up to 1, e.g. 0.02 for 2%, not 2"
    );
    assert!(err(&with("\"2%\"")).starts_with("lab.toml:4: [lab] min_effect: invalid type"));
}

#[test]
fn placement_keys_in_lab_and_targets() {
    let text = OK.replace(
        "name = \"t\"",
        "name = \"t\"\nplacement = \"split\"\nclient_cpus = \"1\"",
    ) + "\n[[target]]\nname = \"b\"\nengine = \"sqlite\"\nplacement = \"shared\"\n";
    let lab = parse(&text, "lab.toml", Path::new(".")).unwrap();
    let (short, at) = lab.placement.shorthand.clone().unwrap();
    assert_eq!(
        (short, at.as_str()),
        (Shorthand::Split, "lab.toml:4: [lab] placement")
    );
    let (client, at) = lab.placement.client.clone().unwrap();
    assert_eq!(
        (client.to_string(), at.as_str()),
        ("1".into(), "lab.toml:5: [lab] client_cpus")
    );
    assert_eq!(lab.targets[0].placement, None, "the [lab] keys apply");
    let own = lab.targets[1].placement.clone().unwrap();
    assert_eq!(own.shorthand.unwrap().0, Shorthand::Shared);
    assert!(
        own.client.is_none(),
        "a target's keys replace the lab's as a whole"
    );

    let e = err(&OK.replace("name = \"t\"", "name = \"t\"\nplacement = \"pinned\""));
    assert_eq!(
        e,
        "lab.toml:4: [lab] placement: placement must be one of \"os\", \"shared\", \"split\", not \"pinned\""
    );
    let e = err(&OK.replace(
        "engine = \"sqlite\"",
        "engine = \"postgres\"\nclient_cpus = \"0-\"",
    ));
    assert!(
        e.starts_with("lab.toml:8: [[target]] client_cpus: \"0-\" is not a CPU list"),
        "{e}"
    );
    let e = err(&OK.replace(
        "engine = \"sqlite\"",
        "engine = \"sqlite\"\nserver_cpus = \"0\"",
    ));
    assert!(
        e.starts_with("lab.toml:8: [[target]] server_cpus: SQLite has no server process"),
        "{e}"
    );
}

#[test]
fn a_build_takes_the_recipe_of_the_product_the_target_names() {
    let lab = |engine: &str| {
        format!(
            "[lab]\nname = \"t\"\n[[target]]\nname = \"a\"\nengine = \"{engine}\"\n\
             build = {{ source = \"src.tar.gz\" }}\n[suite.sysbench]\n"
        )
    };
    for (engine, recipe) in [
        ("mysql", "mysql"),
        ("mariadb", "mariadb"),
        ("postgresql", "postgres"),
    ] {
        let parsed = parse(&lab(engine), "lab.toml", Path::new(".")).unwrap();
        let build = parsed.targets[0].build.as_ref().unwrap();
        assert_eq!(build.engine.name(), recipe);
    }
}
