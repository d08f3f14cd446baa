//! `dbdelta plan LAB --emit k8s` through the real binary: the manifests pass `kubeconform
//! -strict` against the Kubernetes JSON schemas that `.ci/run` prepares (also those of a lab
//! with secrets, which adds a Secret), a manifest with an unknown field does not (so the
//! schemas really are strict and found), and bad input writes nothing.
//!
//! kubeconform comes from `DBDELTA_KUBECONFORM` or `PATH`, the schemas from
//! `DBDELTA_K8S_SCHEMAS` or `<target dir>/k8s-schemas/strict`. Without them the validation is
//! skipped with a note, except under CI (`CI` set), where that is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{run, scratch, text};

const LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/three-engines.toml");

/// kubeconform and the schema directory, or why they are missing.
fn validator() -> Result<(PathBuf, PathBuf), String> {
    let exe = std::env::var_os("DBDELTA_KUBECONFORM").map_or("kubeconform".into(), PathBuf::from);
    let schemas = std::env::var_os("DBDELTA_K8S_SCHEMAS").map_or_else(
        || common::target_dir().join("k8s-schemas/strict"),
        PathBuf::from,
    );
    if Command::new(&exe).arg("-v").output().is_err() {
        return Err(format!("{} cannot be run", exe.display()));
    }
    if !schemas.join("job-batch-v1.json").is_file() {
        return Err(format!("{} holds no job-batch-v1.json", schemas.display()));
    }
    Ok((exe, schemas))
}

/// Run kubeconform -strict on `file`: (success, output).
fn kubeconform(exe: &Path, schemas: &Path, file: &Path) -> (bool, String) {
    let out = Command::new(exe)
        .arg("-strict")
        .arg("-summary")
        .arg("-schema-location")
        .arg(format!(
            "{}/{{{{.ResourceKind}}}}{{{{.KindSuffix}}}}.json",
            schemas.display()
        ))
        .arg(file)
        .output()
        .expect("run kubeconform");
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    (out.status.success(), all)
}

#[test]
fn emitted_manifests_pass_kubeconform_strict() {
    let dir = scratch();
    let file = dir.path().join("lab.yaml");
    let args = [
        "plan",
        LAB,
        "--emit",
        "k8s",
        "--image",
        "registry.example.com/dbdelta:1",
        "--quick",
        "--clients",
        "1,2",
        "--repeats",
        "2",
    ];
    let out = run(
        dir.path(),
        &[&args[..], &["-o", file.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = run(dir.path(), &args);
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text(&stdout.stdout), yaml, "-o writes what stdout shows");
    assert_eq!(yaml.matches("\nkind: Job\n").count(), 3 * 2 * 2);

    let Some((exe, schemas)) = validator_or_skip() else {
        return;
    };
    let (ok, report) = kubeconform(&exe, &schemas, &file);
    assert!(ok, "{report}");
    assert!(
        report.contains("13 resources found in 1 file - Valid: 13, Invalid: 0, Errors: 0"),
        "{report}"
    );
    // The control: an unknown field in the pod spec must fail -strict.
    let bad = dir.path().join("bad.yaml");
    let wrong = yaml.replacen(
        "restartPolicy: Never",
        "restartPolicy: Never\n      restartPolcy: Never",
        1,
    );
    std::fs::write(&bad, wrong).unwrap();
    let (ok, report) = kubeconform(&exe, &schemas, &bad);
    assert!(!ok && report.contains("restartPolcy"), "{report}");
}

/// kubeconform and the schemas, or `None` (with a note) outside CI when they are missing.
fn validator_or_skip() -> Option<(PathBuf, PathBuf)> {
    match validator() {
        Ok(found) => Some(found),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{why} under CI: .ci/run installs kubeconform and the schemas")
        }
        Err(why) => {
            eprintln!("skipping the kubeconform validation: {why}");
            None
        }
    }
}

#[test]
fn manifests_of_a_lab_with_secrets_pass_kubeconform_strict() {
    let dir = scratch();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"with secrets\"\n\n[[target]]\nname = \"pg\"\nengine = \"postgres\"\n\
         env = { PGPASSWORD = \"s3cret\" }\n",
    )
    .unwrap();
    let file = dir.path().join("lab.yaml");
    let args = [
        "plan",
        lab.to_str().unwrap(),
        "--emit",
        "k8s",
        "--image",
        "i:1",
        "--quick",
    ];
    let out = run(
        dir.path(),
        &[&args[..], &["-o", file.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(
        yaml.contains("\nkind: Secret\n") && yaml.contains("secretName: "),
        "{yaml}"
    );
    let Some((exe, schemas)) = validator_or_skip() else {
        return;
    };
    let (ok, report) = kubeconform(&exe, &schemas, &file);
    assert!(ok, "{report}");
    assert!(
        report.contains("3 resources found in 1 file - Valid: 3, Invalid: 0, Errors: 0"),
        "{report}"
    );
}

#[test]
fn plan_without_emit_prints_the_dry_run_plan() {
    let dir = scratch();
    let plan = run(dir.path(), &["plan", LAB, "--quick"]);
    let dry = run(dir.path(), &["run", LAB, "--quick", "--dry-run"]);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    assert_eq!(text(&plan.stdout), text(&dry.stdout));
    assert!(text(&plan.stdout).contains("order: pg15@c1r1 → mariadb@c1r1 → sqlite@c1r1"));
}

#[test]
fn bad_input_is_one_line_and_writes_nothing() {
    let dir = scratch();
    let file = dir.path().join("out.yaml");
    let o = file.to_str().unwrap();
    for (args, start) in [
        (
            vec!["plan", LAB, "--emit", "k8s", "-o", o],
            "--emit k8s needs --image IMAGE",
        ),
        (
            vec![
                "plan", LAB, "--emit", "k8s", "--image", "i", "--memory", "lots", "-o", o,
            ],
            "--memory lots: expected a whole quantity",
        ),
        (
            vec![
                "plan",
                LAB,
                "--emit",
                "k8s",
                "--image",
                "i",
                "--node-label",
                "x",
                "-o",
                o,
            ],
            "--node-label x: expected KEY=VALUE",
        ),
        (
            vec!["run", LAB, "--cell", "pg15:3:1"],
            "--cell pg15:3:1: 3 is not a planned client count",
        ),
    ] {
        let out = run(dir.path(), &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("error: {start}")) && err.lines().count() == 1,
            "{err}"
        );
        assert!(
            !file.exists() && !dir.path().join("dbdelta.db").exists(),
            "{args:?}"
        );
    }
}
