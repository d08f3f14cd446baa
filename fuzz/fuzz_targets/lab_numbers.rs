//! Fuzz target `lab_numbers`: every numeric key of a lab file (`[lab]`, a `[[target]]`'s
//! `port`, each suite's section) set to numbers the fuzzer picks, whole or floating (any `f64`:
//! `1e20`, NaN, infinities, subnormals), with `--repeats` and `--quick`, then parsed and
//! planned as a dry run does (see `shared::dry_run`).
//!
//! Raw text (`lab_parse`) seldom turns `write_secs = 90` into a valid TOML float past 2e19,
//! the one that panicked in `plan::plan_on`; here the value is the input, so every
//! key meets every kind of number at once. Any `Err` is a fine answer; a panic, abort, running
//! out of memory or time is a bug.
#![no_main]

#[path = "shared/mod.rs"]
mod shared;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

/// `(section, key, a list)`: every numeric key the lab's sections know.
const KEYS: &[(&str, &str, bool)] = &[
    ("lab", "repeats", false),
    ("lab", "min_repeats", false),
    ("lab", "max_repeats", false),
    ("lab", "clients", true),
    ("lab", "min_effect", false),
    ("lab", "profile_hz", false),
    ("lab", "instruction_passes", false),
    ("target", "port", false),
    ("suite.sysbench", "tables", false),
    ("suite.sysbench", "rows", false),
    ("suite.sysbench", "read_secs", false),
    ("suite.sysbench", "write_secs", false),
    ("suite.sysbench", "warmup_secs", false),
    ("suite.sysbench", "postwrite_secs", false),
    ("suite.sysbench", "precision", false),
    ("suite.sysbench", "min_secs", false),
    ("suite.sysbench", "max_secs", false),
    ("suite.insert", "rows", false),
    ("suite.insert", "write_rows", false),
    ("suite.insert", "query_secs", false),
    ("suite.insert", "rates", true),
    ("suite.insert", "rows_per_commit_l_i0", false),
    ("suite.insert", "rows_per_commit_l_i1", false),
    ("suite.insert", "rows_per_commit_l_i2", false),
    ("suite.insert", "postwrite_secs", false),
    ("suite.linkbench", "maxid1", false),
    ("suite.linkbench", "loaders", false),
    ("suite.linkbench", "requesters", true),
    ("suite.linkbench", "request_secs", false),
    ("suite.linkbench", "warmup_secs", false),
    ("suite.linkbench", "node_bytes", false),
    ("suite.linkbench", "link_bytes", false),
    ("suite.linkbench", "batch", false),
    ("suite.linkbench", "partitions", false),
    ("suite.linkbench", "postwrite_secs", false),
];

#[derive(Debug, Arbitrary)]
enum Number {
    Whole(i64),
    Float(f64),
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// Keys (an index into [`KEYS`]) and their values; a key given twice is a TOML error.
    values: Vec<(u8, Number)>,
    /// `repeats = "auto"`, `profile = true`, `instructions = true`, `duration = "adaptive"`:
    /// what the keys that need them need.
    auto: bool,
    switches: bool,
    adaptive: bool,
    engine_server: bool,
    repeats: Option<u32>,
    quick: bool,
}

/// The most LinkBench nodes an input plans: planning walks every node id to count the load's
/// statements (`linkbench::steps::range_rows`), so `maxid1 = 488447261` took over 10 s here
/// (a timeout this target found; docs/fuzzing.md). 10^7 plans in about 0.2 s.
const MAX_PLANNED_NODES: i64 = 10_000_000;

fuzz_target!(|input: Input| {
    let too_many_nodes = (input.values.iter()).any(|(i, v)| {
        KEYS[usize::from(*i) % KEYS.len()].1 == "maxid1"
            && match v {
                Number::Whole(n) => *n > MAX_PLANNED_NODES,
                Number::Float(_) => false,
            }
    });
    if too_many_nodes {
        return;
    }
    let text = lab_text(&input);
    if let Ok(lab) = dbdelta::plan::lab::parse(&text, "fuzz.toml", shared::scratch()) {
        let opts = dbdelta::plan::RunOptions {
            repeats: input.repeats,
            quick: input.quick,
            ..Default::default()
        };
        shared::dry_run(lab, &opts);
    }
});

/// The lab `input` describes, as TOML text.
fn lab_text(input: &Input) -> String {
    let mut sections: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut lab = vec!["name = \"n\"".to_string()];
    if input.auto {
        lab.push("repeats = \"auto\"".into());
    }
    if input.switches {
        lab.extend(["profile = true".into(), "instructions = true".into()]);
    }
    sections.insert("lab", lab);
    let engine = if input.engine_server {
        "postgres"
    } else {
        "sqlite"
    };
    sections.insert(
        "target",
        vec!["name = \"a\"".into(), format!("engine = \"{engine}\"")],
    );
    if input.adaptive {
        sections.insert("suite.sysbench", vec!["duration = \"adaptive\"".into()]);
    }
    for (i, value) in &input.values {
        let (section, key, list) = KEYS[usize::from(*i) % KEYS.len()];
        let v = toml_number(value);
        let line = if list {
            format!("{key} = [{v}]")
        } else {
            format!("{key} = {v}")
        };
        sections.entry(section).or_default().push(line);
    }
    let mut text = String::new();
    for (section, lines) in &sections {
        let header = if *section == "target" {
            "[[target]]".to_string()
        } else {
            format!("[{section}]")
        };
        let _ = writeln!(text, "{header}\n{}", lines.join("\n"));
    }
    text
}

/// A number as TOML writes it: `nan`, `inf`, `-inf`, `1e20`, `-5`.
fn toml_number(n: &Number) -> String {
    match n {
        Number::Whole(i) => i.to_string(),
        Number::Float(f) if f.is_nan() => "nan".into(),
        Number::Float(f) if f.is_infinite() => if *f > 0.0 { "inf" } else { "-inf" }.into(),
        Number::Float(f) => format!("{f:e}"),
    }
}
