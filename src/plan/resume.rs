//! Resuming a run: the command-line options a run keeps so its plan can be rebuilt exactly,
//! and whether a lab file (given again, or found where the run read it) still gives that plan.
//!
//! A run stores its lab text and these options; `dbdelta run --resume` plans again from them.
//! A lab file that changed in a way that alters the plan (targets, their settings, binaries or
//! placement, clients, repeats, order, the suites' settings or steps, profiling) is bad input
//! naming the first difference; one that changed only in comments or report settings is not.
//! The stored text keeps no password or secret env value: a lab that held one resumes from its
//! file.
//! Must not: open the store, start anything or touch the work directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::connect::{holds_redacted, redact_secrets};
use crate::error::InputError;
use crate::plan::lab::GoneConfig;
use crate::plan::{self, RunOptions, RunPlan, TargetPlan};

/// The options that shaped a run's plan, as stored with the run (`runs.options_json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct StoredOptions {
    /// The lab file, absolute (`None`: the built-in demo).
    pub lab_path: Option<PathBuf>,
    /// The command line's options; `workdir` absolute (where an interrupted run left its data
    /// directories).
    #[serde(flatten)]
    pub options: RunOptions,
}

impl StoredOptions {
    /// What a new run keeps of its options; paths made absolute against the current
    /// directory, so a resume from elsewhere finds them.
    pub fn new(opts: &RunOptions, lab: Option<&Path>) -> StoredOptions {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        StoredOptions {
            lab_path: lab.map(abs),
            options: RunOptions {
                workdir: abs(&opts.workdir),
                snapshots: opts.snapshots.as_deref().map(abs),
                ..opts.clone()
            },
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("options serialize")
    }

    /// The run's options again; `keep` as this invocation asks.
    pub fn run_options(&self, keep: bool) -> RunOptions {
        RunOptions {
            keep,
            ..self.options.clone()
        }
    }
}

/// The plan of a stored run: from its stored lab text and options. `lab_file` is the lab file
/// given now (else the stored path, when it still exists): when its text differs from the
/// stored one in a way that changes the plan, that is bad input naming the difference. The
/// stored text keeps no password (the store redacts it): a lab that held one is planned from
/// the file, compared without its passwords; without the file, that is bad input asking for it.
/// `gone`: what a `config =` file that is gone does (bad input for a resume; `explain` takes the
/// target's stored lines instead).
pub fn rebuild_plan(
    run_id: &str,
    lab_text: &str,
    stored: &StoredOptions,
    lab_file: Option<&Path>,
    (keep, gone): (bool, GoneConfig),
) -> Result<RunPlan, InputError> {
    let opts = stored.run_options(keep);
    let (origin, base) = match &stored.lab_path {
        Some(p) => (
            p.display().to_string(),
            p.parent().unwrap_or(Path::new(".")).to_path_buf(),
        ),
        None => ("<built-in demo>".to_string(), PathBuf::from(".")),
    };
    let lab = crate::plan::lab::parse_with(lab_text, &origin, &base, gone)
        .map_err(|e| InputError::new(format!("run {run_id}'s stored lab: {e}")))?;
    let stored_plan = plan::plan(lab, &opts)?;
    let redacted = holds_redacted(lab_text);
    let file = lab_file
        .map(Path::to_path_buf)
        .or_else(|| stored.lab_path.clone().filter(|p| p.is_file()));
    let Some(file) = file else {
        if redacted {
            return Err(InputError::new(format!(
                "--resume {run_id}: the run's lab held a password or a secret env value, which \
                 the store does not keep; give the lab file again: dbdelta run LAB --resume {run_id}"
            )));
        }
        return Ok(stored_plan);
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| InputError::new(format!("cannot read lab file {}: {e}", file.display())))?;
    if text == lab_text {
        return Ok(stored_plan);
    }
    let shown = file.display().to_string();
    let file_base = file.parent().unwrap_or(Path::new("."));
    let parse = |text: &str| crate::plan::lab::parse_with(text, &shown, file_base, gone);
    let lab = parse(&redact_secrets(&text))?;
    match plan_difference(&stored_plan, &plan::plan(lab, &opts)?) {
        None if redacted => plan::plan(parse(&text)?, &opts),
        None => Ok(stored_plan),
        Some(what) => Err(InputError::new(format!(
            "--resume {run_id}: lab file {shown} changed since the run started ({what}); restore it, \
             or start a new run"
        ))),
    }
}

/// Bad input when a target's settings lines now differ from those the run stored for it
/// (`stored`: each target's name and stored `config_text`): a `config =` file edited, or gone,
/// since the run started would make the resumed cells run other settings than the finished
/// ones under the same target. `lab` is the lab file, whose folder a relative path starts at.
pub fn refuse_changed_settings(
    run_id: &str,
    plan: &RunPlan,
    stored: &[(&str, &str)],
    lab: Option<&Path>,
) -> Result<(), InputError> {
    for t in &plan.targets {
        let Some((_, text)) = stored.iter().find(|(name, _)| *name == t.name) else {
            continue;
        };
        if let Some(diff) = super::stored_settings::difference(t, text, lab) {
            return Err(InputError::new(format!(
                "--resume {run_id}: {}; restore it, or start a new run",
                diff.sentence(&t.name, run_id)
            )));
        }
    }
    Ok(())
}

/// The first way `now` differs from `before` that changes what runs, in words; `None` when
/// they run the same cells and steps the same way.
pub fn plan_difference(before: &RunPlan, now: &RunPlan) -> Option<String> {
    let names = |p: &RunPlan| p.targets.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    if names(before) != names(now) {
        return Some(format!(
            "targets {:?} are now {:?}",
            names(before),
            names(now)
        ));
    }
    for (a, b) in before.targets.iter().zip(&now.targets) {
        for ((field, x), (_, y)) in target_fields(a).into_iter().zip(target_fields(b)) {
            if x != y {
                return Some(format!("target {}: {field} {}", a.name, changed(&x, &y)));
            }
        }
    }
    for ((what, x), (_, y)) in run_fields(before).into_iter().zip(run_fields(now)) {
        if x != y {
            return Some(format!("{what} {}", changed(&x, &y)));
        }
    }
    None
}

/// `X is now Y` for two different values as text; of a long one (a suite's settings, as
/// `Debug` writes them), only the first `key: value` that differs, so the message stays one
/// short line.
fn changed(x: &str, y: &str) -> String {
    const SHORT: usize = 60;
    if x.len() <= SHORT && y.len() <= SHORT {
        return format!("{x} is now {y}");
    }
    let parts = |s: &str| -> Vec<String> {
        (s.split(['{', '}', '(', ')', '[', ']', ',']))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (parts(x), parts(y));
    let n = a.iter().zip(&b).take_while(|(p, q)| p == q).count();
    let short = |p: Option<&String>| match p {
        None => "(nothing)".to_string(),
        Some(p) if p.chars().count() > SHORT => p.chars().take(SHORT).collect::<String>() + "…",
        Some(p) => p.clone(),
    };
    let (p, q) = (short(a.get(n)), short(b.get(n)));
    match (p.split_once(": "), q.split_once(": ")) {
        (Some((k, v)), Some((l, w))) if k == l => format!("{k} {v} is now {w}"),
        _ => format!("{p} is now {q}"),
    }
}

/// What of a target shapes its cells, each as text to compare and show.
fn target_fields(t: &TargetPlan) -> Vec<(&'static str, String)> {
    vec![
        ("engine", t.engine.name().to_string()),
        ("settings", format!("{:?}", t.settings)),
        ("bin", format!("{:?}", t.bin)),
        ("version", format!("{:?}", t.version)),
        ("env", format!("{:?}", t.env)),
        ("args", format!("{:?}", t.args)),
        ("port", format!("{:?}", t.port)),
        ("table options", format!("{:?}", t.tables)),
        ("placement", format!("{:?}", t.placement)),
        ("build", format!("{:?}", t.build)),
        ("library", format!("{:?}", t.library)),
        (
            "connect",
            format!("{:?}", t.connect.as_ref().map(|c| c.shown())),
        ),
    ]
}

/// What of the run as a whole shapes its cells and steps.
fn run_fields(p: &RunPlan) -> Vec<(String, String)> {
    let steps = |p: &RunPlan| {
        (p.suites.iter())
            .map(|s| {
                let labels: Vec<&str> = s.steps.iter().map(|st| st.label.as_str()).collect();
                format!("{}: {}", s.id(), labels.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = vec![
        ("clients".into(), format!("{:?}", p.clients)),
        ("repeats".into(), p.repeats.to_string()),
        ("order".into(), format!("{:?}", p.order)),
        ("steps".into(), steps(p)),
    ];
    // Every suite the registry knows, so that both plans list the same fields.
    for kind in crate::suites::registry() {
        let name = kind.name();
        out.push((format!("[suite.{name}]"), format!("{:?}", p.suite(name))));
    }
    out.push(("profile".into(), format!("{:?}", p.profile)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAB: &str = "[lab]\nname = \"l\"\n\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\
        settings = [\"synchronous = FULL\"]\n\n[[target]]\nname = \"b\"\nengine = \"sqlite\"\n\n\
        [suite.sysbench]\nrows = 1000\n";

    fn stored(dir: &Path) -> StoredOptions {
        StoredOptions {
            lab_path: Some(dir.join("lab.toml")),
            options: RunOptions {
                quick: true,
                workdir: dir.join("work"),
                ..Default::default()
            },
        }
    }

    /// A `config =` file edited after the run refuses its resume, naming the file and the
    /// line; one that is gone is bad input to a resume and no lines to `explain`'s plan, whose
    /// stored lines then stand in.
    #[test]
    fn a_config_file_edited_or_gone_since_the_run_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let opts = stored(dir.path());
        let lab = LAB.replace("settings = [\"synchronous = FULL\"]", "config = \"a.conf\"");
        std::fs::write(dir.path().join("lab.toml"), &lab).unwrap();
        std::fs::write(dir.path().join("a.conf"), "synchronous = FULL\n").unwrap();
        let ran = "synchronous = FULL";
        let file = opts.lab_path.as_deref();
        let p = rebuild_plan("r", &lab, &opts, None, (false, GoneConfig::Fail)).unwrap();
        let stored = [("a", ran), ("b", "")];
        refuse_changed_settings("r", &p, &stored, file).expect("the lines the run used");

        std::fs::write(dir.path().join("a.conf"), "synchronous = OFF\n").unwrap();
        let p = rebuild_plan("r", &lab, &opts, None, (false, GoneConfig::Fail)).unwrap();
        let e = refuse_changed_settings("r", &p, &stored, file)
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            format!(
                "--resume r: config file a.conf ({}) of target a differs from what run r used \
                 (line 1: `synchronous = FULL`, now `synchronous = OFF`); restore it, or start a \
                 new run",
                dir.path().join("a.conf").display()
            )
        );

        std::fs::remove_file(dir.path().join("a.conf")).unwrap();
        let e = rebuild_plan("r", &lab, &opts, None, (false, GoneConfig::Fail)).unwrap_err();
        assert!(
            e.0.contains("cannot read config file \"a.conf\""),
            "{}",
            e.0
        );
        let p = rebuild_plan("r", &lab, &opts, None, (false, GoneConfig::Empty)).unwrap();
        let a = &p.targets[0];
        assert!(a.settings.is_empty() && a.config_name.as_deref() == Some("a.conf"));
        let diff = crate::plan::stored_settings::difference(a, ran, file).unwrap();
        assert!(diff.what.contains("a.conf, which is gone"), "{diff:?}");
    }

    #[test]
    fn the_same_plan_or_a_comment_resumes_and_a_changed_setting_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let opts = stored(dir.path());
        let file = dir.path().join("lab.toml");
        std::fs::write(&file, LAB).unwrap();
        let p = rebuild_plan("r", LAB, &opts, None, (false, GoneConfig::Fail)).unwrap();
        assert_eq!(p.targets.len(), 2);
        assert!(p.quick);

        std::fs::write(&file, format!("# a comment\n{LAB}")).unwrap();
        rebuild_plan("r", LAB, &opts, None, (false, GoneConfig::Fail))
            .expect("a comment changes no plan");

        std::fs::write(&file, LAB.replace("FULL", "OFF")).unwrap();
        let e = rebuild_plan("r", LAB, &opts, None, (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        assert!(
            e.contains("target a: settings") && e.contains("OFF") && e.contains("lab.toml"),
            "{e}"
        );

        std::fs::write(&file, LAB.replace("rows = 1000", "rows = 2000")).unwrap();
        let e = rebuild_plan("r", LAB, &opts, Some(&file), (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        assert!(
            e.contains("([suite.sysbench] rows 1000 is now 2000)") && !e.contains("Some("),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");

        std::fs::remove_file(&file).unwrap();
        rebuild_plan("r", LAB, &opts, None, (false, GoneConfig::Fail))
            .expect("the stored text when the file is gone");
    }

    #[test]
    fn a_lab_with_a_password_resumes_from_its_file_or_asks_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let opts = stored(dir.path());
        let file = dir.path().join("lab.toml");
        let lab = format!(
            "{LAB}\n[[target]]\nname = \"c\"\nengine = \"postgres\"\n\
             connect = \"postgres://u:pw@127.0.0.1:1/db\"\n"
        );
        let kept = redact_secrets(&lab).into_owned();
        assert!(kept.contains("u:***@") && holds_redacted(&kept));
        std::fs::write(&file, &lab).unwrap();
        let p = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail)).unwrap();
        let url = p.targets[2].connect.as_ref().unwrap();
        assert_eq!(url.password.as_deref(), Some("pw"), "the file's password");

        std::fs::write(&file, lab.replace("FULL", "OFF")).unwrap();
        let e = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        assert!(
            e.contains("target a: settings") && !e.contains("pw@"),
            "{e}"
        );

        std::fs::remove_file(&file).unwrap();
        let e = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        assert!(
            e.contains("password") && e.ends_with("dbdelta run LAB --resume r"),
            "{e}"
        );
    }

    #[test]
    fn a_lab_with_a_secret_env_value_resumes_from_its_file_or_asks_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let opts = stored(dir.path());
        let file = dir.path().join("lab.toml");
        let lab = LAB.replacen(
            "name = \"l\"\n",
            "name = \"l\"\nsecret_env = [\"CRED\"]\n",
            1,
        ) + "\n[[target]]\nname = \"c\"\nengine = \"postgres\"\n\
               env = { PGPASSWORD = \"pw1\", CRED = \"pw2\", TZ = \"UTC\" }\n";
        let kept = redact_secrets(&lab).into_owned();
        assert!(!kept.contains("pw1") && !kept.contains("pw2") && holds_redacted(&kept));
        std::fs::write(&file, &lab).unwrap();
        let p = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail)).unwrap();
        let env = &p.targets[2].env;
        assert_eq!(
            (env["PGPASSWORD"].as_str(), env["CRED"].as_str()),
            ("pw1", "pw2")
        );

        std::fs::write(&file, lab.replace("UTC", "CET")).unwrap();
        let e = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        // (Not "pw": the temporary directory's random name may hold it.)
        assert!(
            e.contains("target c: env") && !e.contains("pw1") && !e.contains("pw2"),
            "{e}"
        );

        std::fs::remove_file(&file).unwrap();
        let e = rebuild_plan("r", &kept, &opts, None, (false, GoneConfig::Fail))
            .unwrap_err()
            .0;
        assert!(
            e.contains("secret env value") && e.ends_with("dbdelta run LAB --resume r"),
            "{e}"
        );
    }

    #[test]
    fn stored_options_round_trip_through_json() {
        let mut opts = stored(Path::new("/tmp"));
        opts.options.only = vec!["point-*".into()];
        opts.options.clients = Some("1,2".into());
        opts.options.repeats = Some(3);
        let back: StoredOptions = serde_json::from_str(&opts.to_json()).unwrap();
        assert_eq!(back, opts);
    }

    /// `--rows`, `--tables` and `--time` are stored with the run, so a resume plans the same
    /// scale; options stored before they existed read as none.
    #[test]
    fn scale_flags_are_stored_and_resume_plans_the_same_scale() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = stored(dir.path());
        opts.options.rows = Some(500);
        opts.options.tables = Some(2);
        opts.options.time = Some(0.2);
        let back: StoredOptions = serde_json::from_str(&opts.to_json()).unwrap();
        assert_eq!(back, opts);
        let p = rebuild_plan("r", LAB, &back, None, (false, GoneConfig::Fail)).unwrap();
        let d = p.describe();
        assert!(
            d.contains("2 table(s) × 500 rows") && d.contains("reads 0.2 s"),
            "{d}"
        );
        let old: StoredOptions = serde_json::from_str(r#"{"quick":true}"#).unwrap();
        assert_eq!(
            (old.options.rows, old.options.tables, old.options.time),
            (None, None, None)
        );
    }
}
