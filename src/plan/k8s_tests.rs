//! Unit tests of the Kubernetes emitter: the snapshot of `examples/three-engines.toml`, the
//! YAML read back, the sanitisers, the CPU rule and the refusals.

use super::*;
use crate::cpus::Machine;
use crate::plan::{RunOptions, plan_on};
use std::path::Path;

fn options() -> Options {
    Options {
        image: "registry.example.com/dbdelta:test".into(),
        ..Options::default()
    }
}

fn three_engines(opts: &RunOptions) -> RunPlan {
    let lab = crate::plan::lab::load(Path::new("examples/three-engines.toml")).unwrap();
    plan_on(lab, opts, Machine::simple(2)).unwrap()
}

fn lab_plan(text: &str, opts: &RunOptions) -> Result<RunPlan, InputError> {
    let lab = crate::plan::lab::parse(text, "lab.toml", Path::new("."))?;
    plan_on(lab, opts, Machine::simple(4))
}

const SQLITE_LAB: &str = "[lab]\nname = \"l\"\nclients = [1, 4]\n[[target]]\nname = \"a\"\n\
                          engine = \"sqlite\"\n[[target]]\nname = \"b\"\nengine = \"postgres\"\n";

#[test]
fn three_engines_manifests() {
    let plan = three_engines(&RunOptions::default());
    insta::assert_snapshot!("three_engines_k8s", emit(&plan, &options()).unwrap());
}

#[test]
fn manifests_read_back_as_one_config_map_and_a_job_per_cell() {
    let run = RunOptions {
        quick: true,
        repeats: Some(2),
        ..Default::default()
    };
    let plan = three_engines(&run);
    let opts = Options {
        run_flags: vec!["--quick".into(), "--repeats".into(), "2".into()],
        ..options()
    };
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&emit(&plan, &opts).unwrap()).unwrap();
    assert_eq!(
        docs.len(),
        1 + 3 * 2,
        "a ConfigMap and 3 targets × 2 repeats"
    );
    assert_eq!(docs[0]["kind"], "ConfigMap");
    assert_eq!(
        docs[0]["data"][LAB_FILE].as_str(),
        Some(plan.lab.text.as_str()),
        "the lab text exactly"
    );
    let config_map = docs[0]["metadata"]["name"].clone();
    let mut names = std::collections::BTreeSet::new();
    for (job, cell) in docs[1..].iter().zip(plan.cells()) {
        assert_eq!(job["kind"], "Job");
        assert!(
            names.insert(job["metadata"]["name"].to_string()),
            "unique names"
        );
        let pod = &job["spec"]["template"]["spec"];
        let c = &pod["containers"][0];
        let args: Vec<&str> = (c["args"].as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap())
            .collect();
        let cell_arg = plan.cell_arg(&cell);
        assert_eq!(
            args[..6],
            [
                "--store",
                "$(DBDELTA_STORE)",
                "run",
                "/etc/dbdelta/lab.toml",
                "--cell",
                &cell_arg
            ]
        );
        assert!(args.ends_with(&["--quick", "--repeats", "2"]), "{args:?}");
        let resources = &c["resources"];
        assert_eq!(resources["requests"], resources["limits"], "Guaranteed QoS");
        let cpus = resources["requests"]["cpu"].as_str().unwrap();
        assert!(cpus.parse::<u32>().is_ok(), "whole CPUs: {cpus}");
        assert_eq!(pod["volumes"][0]["configMap"]["name"], config_map);
        assert_eq!(pod["nodeSelector"]["dbdelta.io/benchmark-node"], "true");
        let apart = &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0];
        assert_eq!(apart["topologyKey"], "kubernetes.io/hostname");
        assert_eq!(apart["namespaceSelector"], json!({}), "all namespaces");
        let own = &job["spec"]["template"]["metadata"]["labels"];
        for (k, v) in apart["labelSelector"]["matchLabels"].as_object().unwrap() {
            assert_eq!(&own[k], v, "the selector matches its own pod: one per node");
        }
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["dbdelta.io/repeat"],
            cell.repeat.to_string()
        );
    }
}

#[test]
fn a_lab_with_secrets_is_whole_only_in_a_secret_the_jobs_mount() {
    let text = format!(
        "{SQLITE_LAB}env = {{ PGPASSWORD = \"pg-s3cret\" }}\n\
         settings = [\"primary_conninfo = 'host=a password=conn-s3cret'\"]\n"
    );
    let plan = lab_plan(&text, &RunOptions::default()).unwrap();
    let yaml = emit(&plan, &options()).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml).unwrap();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[..3], ["ConfigMap", "Secret", "Job"], "{yaml}");
    let (config_map, secret) = (&docs[0], &docs[1]);
    assert_eq!(secret["stringData"][LAB_FILE].as_str(), Some(text.as_str()));
    assert_eq!(secret["type"], "Opaque");
    let shown = config_map["data"][LAB_FILE].as_str().unwrap();
    assert!(shown.contains("PGPASSWORD = \"***\"") && shown.contains("password=***'"));
    for s in ["pg-s3cret", "conn-s3cret"] {
        // Only the Secret holds it: the rest of the text, without the Secret, does not.
        let rest: Vec<Value> = docs
            .iter()
            .filter(|d| d["kind"] != "Secret")
            .cloned()
            .collect();
        assert!(!serde_json::to_string(&rest).unwrap().contains(s), "{s}");
        assert_eq!(yaml.matches(s).count(), 1, "{s}: {yaml}");
    }
    let name = &secret["metadata"]["name"];
    assert_eq!(&config_map["metadata"]["name"], name);
    for job in &docs[2..] {
        let volumes = &job["spec"]["template"]["spec"]["volumes"];
        assert_eq!(
            volumes[0],
            json!({"name": "lab", "secret": {"secretName": name}})
        );
    }
}

#[test]
fn label_values_and_names_are_valid_and_distinct() {
    assert_eq!(
        label_value("PostgreSQL 15 vs MariaDB vs SQLite"),
        "PostgreSQL-15-vs-MariaDB-vs-SQLite"
    );
    assert_eq!(
        label_value("pg17.jemalloc_2"),
        "pg17.jemalloc_2",
        "kept as is"
    );
    assert_eq!(label_value("  --é. x!! "), "x");
    assert_eq!(label_value("ü"), "");
    assert_eq!(label_value(&"a".repeat(100)).len(), 63);
    assert_eq!(
        label_value(&format!("{}.b", "a".repeat(62))),
        "a".repeat(62)
    );
    assert_eq!(dns_label("pg17-a"), "pg17-a", "a valid name is kept");
    let (dot, upper) = (dns_label("pg17.a"), dns_label("PG17-a"));
    assert!(
        dot.starts_with("pg17-a-") && upper.starts_with("pg17-a-"),
        "{dot} {upper}"
    );
    assert!(dot != upper && dot != "pg17-a", "lossy names carry a hash");
    let long = dns_label(&"x".repeat(80));
    assert_eq!(long.len(), 63);
    assert_ne!(long, dns_label(&"x".repeat(81)));
    assert_eq!(dns_label("ü").len(), 6, "only the hash is left");
    let valid_label = |s: &str| s.is_empty() || label_value(s) == s;
    let valid_name = |s: &str| {
        s.len() <= 63
            && is_dns_subdomain(s)
            && !s.contains('.')
            && s.chars().any(|c| c.is_ascii_alphanumeric())
    };
    for text in [
        "",
        "-",
        "a..b",
        "_x_",
        "Ä-b-",
        "a b\tc\nd",
        "1",
        &"é-".repeat(40),
    ] {
        assert!(valid_label(&label_value(text)), "{text:?}");
        assert!(
            valid_name(&dns_label(text)),
            "{text:?} → {}",
            dns_label(text)
        );
    }
}

#[test]
fn cpus_follow_connections_engine_and_placement() {
    let p = lab_plan(SQLITE_LAB, &RunOptions::default()).unwrap();
    let cpus = |cell: &Cell| pod_cpus(&p, cell).0;
    let cell = |target, clients| Cell {
        target,
        clients,
        repeat: 1,
    };
    // point-query.warm runs one client per table (1 here); the other steps one per client.
    assert_eq!(cpus(&cell(0, 1)), 2, "SQLite: 1 client thread + 1");
    assert_eq!(cpus(&cell(0, 4)), 5, "SQLite: 4 client threads + 1");
    assert_eq!(cpus(&cell(1, 1)), 3, "server: 1 × 2 + 1");
    assert_eq!(cpus(&cell(1, 4)), 9, "server: 4 × 2 + 1");
    let shared = SQLITE_LAB.replace("clients = [1, 4]", "clients = [4]\nplacement = \"shared\"");
    let p = lab_plan(&shared, &RunOptions::default()).unwrap();
    assert_eq!(pod_cpus(&p, &cell(1, 4)).0, 2, "shared: one pinned CPU + 1");
    let insert = format!("{SQLITE_LAB}[suite.insert]\nrows = 1000\n");
    let p = lab_plan(&insert, &RunOptions::default()).unwrap();
    let (n, why) = pod_cpus(&p, &cell(1, 4));
    assert_eq!(n, 25, "{why}: inserter, deleter and querier per client");
    assert!(why.starts_with("25 CPUs = 12 connection(s)"), "{why}");
}

#[test]
fn bad_options_and_host_bound_labs_are_refused() {
    let p = lab_plan(SQLITE_LAB, &RunOptions::default()).unwrap();
    let err = |o: Options| emit(&p, &o).unwrap_err().0;
    assert!(err(Options::default()).starts_with("--image \"\": expected"));
    let bad = |o: Options, start: &str| {
        let e = err(o);
        assert!(e.starts_with(start), "{e}");
    };
    bad(
        Options {
            memory: "4 GB".into(),
            ..options()
        },
        "--memory 4 GB: expected a whole quantity",
    );
    bad(
        Options {
            node_label: ("bench node".into(), "yes".into()),
            ..options()
        },
        "--node-label bench node=yes: expected a Kubernetes label",
    );
    bad(
        Options {
            store_secret: "Store".into(),
            ..options()
        },
        "--store-secret Store: expected a Secret name",
    );
    let pinned = SQLITE_LAB.replace("clients = [1, 4]", "server_cpus = \"0\"");
    let p = lab_plan(&pinned, &RunOptions::default()).unwrap();
    let e = emit(&p, &options()).unwrap_err().0;
    assert!(
        e.starts_with("--emit k8s: lab.toml:3: [lab] server_cpus names CPUs of one host"),
        "{e}"
    );
    let remote = SQLITE_LAB.replace(
        "engine = \"postgres\"\n",
        "engine = \"postgres\"\nhost = \"ssh://bench@db1\"\n",
    );
    let p = lab_plan(&remote, &RunOptions::default()).unwrap();
    let e = emit(&p, &options()).unwrap_err().0;
    assert!(
        e.starts_with("--emit k8s: target b runs its server on another host over SSH"),
        "{e}"
    );
}
