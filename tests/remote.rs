//! Remote targets (`host = "ssh://…"`) on test hosts: network namespaces with Debian's sshd
//! inside (`common::netns`). dbdelta logs in with the system `ssh`, puts itself there as the
//! agent, which starts the server on an address that exists only on the namespace's link and
//! samples its processes; the client runs here. Killing the SSH connection mid-step fails the
//! target and leaves nothing in the namespace. Needs root, iproute2, openssh-server and
//! Debian's PostgreSQL and MariaDB; otherwise says why and passes, except under CI.

mod common;
use common::netns::{Host, can_make_hosts};
use common::*;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

fn mariadb_installed() -> bool {
    let found = Path::new("/usr/sbin/mariadbd").is_file();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI must install mariadb-server"
    );
    found
}

/// A lab with `targets` (TOML of `[[target]]` tables) and an optional `[suite.sysbench]`.
fn lab(dir: &Path, targets: &str, sysbench: &str) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        format!("[lab]\nname = \"remote test\"\n\n{targets}\n{sysbench}"),
    )
    .unwrap();
    path
}

/// `dbdelta run LAB --quick --only point-query EXTRA…` in `dir`.
fn quick_point_query(dir: &Path, lab: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        lab.to_str().unwrap(),
        "--quick",
        "--only",
        "point-query",
    ];
    args.extend_from_slice(extra);
    run(dir, &args)
}

fn remote_target(name: &str, engine: &str, host: &Host) -> String {
    format!(
        "[[target]]\nname = \"{name}\"\nengine = \"{engine}\"\nhost = \"{}\"\nssh_config = \"{}\"\n\n",
        host.url(),
        host.ssh_config().display()
    )
}

fn measurement<'a>(json: &'a Value, target: &str) -> &'a Value {
    (json["measurements"].as_array().unwrap().iter())
        .find(|m| m["target"] == target && m["step"] == "point-query")
        .unwrap_or_else(|| panic!("no point-query of {target}: {json}"))
}

/// The agent work directories a run left in the (shared) temporary directory.
fn agent_dirs(pids: &[u32]) -> Vec<PathBuf> {
    (pids.iter())
        .map(|p| std::env::temp_dir().join(format!("dbdelta-agent.{p}")))
        .filter(|d| d.exists())
        .collect()
}

#[test]
fn a_remote_target_runs_point_query_with_its_server_cpu_sampled_there() {
    if !can_make_hosts() || !postgres_installed() || !mariadb_installed() {
        return;
    }
    let host = Host::start();
    let dir = scratch();
    let targets = remote_target("pg-remote", "postgres", &host)
        + &remote_target("maria-remote", "mariadb", &host)
        + &remote_target("pg-client-there", "postgres", &host)
        + "client = \"remote\"\n";
    let lab = lab(dir.path(), &targets, "");
    let out = {
        let _lock = measuring();
        quick_point_query(dir.path(), &lab, &["--keep", "--workdir", "work"])
    };
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "run failed: {stderr}");
    let json: Value =
        serde_json::from_slice(&run(dir.path(), &["report", "--format", "json"]).stdout).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let settings: Vec<Value> =
        rows::<(String,)>(&db, "SELECT settings_json FROM targets ORDER BY position")
            .into_iter()
            .map(|(s,)| serde_json::from_str(&s).unwrap())
            .collect();
    for (i, name) in ["pg-remote", "maria-remote", "pg-client-there"]
        .iter()
        .enumerate()
    {
        let m = measurement(&json, name);
        assert!(m["qps"].as_f64().unwrap() > 0.0, "{name}: {m}");
        assert!(
            m["server_cpu_us_per_op"].as_f64().is_some_and(|c| c > 0.0),
            "{name}: server CPU/op sampled by the agent: {m}"
        );
        let settings = &settings[i];
        assert_eq!(settings["dbdelta.host"], host.url(), "{settings}");
        // The agent's own account of its sampling, in the target's log (kept by --keep).
        let log = std::fs::read_dir(dir.path().join("work"))
            .unwrap()
            .flatten()
            .map(|run| run.path().join(format!("{name}.c1.r1.log")))
            .find(|l| l.exists())
            .expect("the target's log");
        let log = std::fs::read_to_string(log).unwrap();
        let answered: u64 = (log.split("answered ").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no agent report in its log: {log}"));
        let here = name.ends_with("-there");
        // Samples come from the agent either way; with client = "remote" it also ran the step
        // (and its clients' cost is the agent's own).
        assert!(answered >= 2 || here, "{name}: {log}");
        let steps = if here {
            "ran 1 step(s)"
        } else {
            "ran 0 step(s)"
        };
        assert!(log.contains(steps), "{name}: {log}");
        assert!(
            measurement(&json, name)["client_cpu_us_per_op"]
                .as_f64()
                .is_some_and(|c| c > 0.0),
            "{name}: client cost measured"
        );
    }
    // PostgreSQL listened on the namespace's address, for the clients here.
    let listen = &settings[0]["listen_addresses"];
    assert!(listen.as_str().unwrap().contains(&host.address), "{listen}");
    let left = host.wait_empty(Duration::from_secs(10));
    assert!(left.is_empty(), "left running in the namespace: {left:?}");
}

#[test]
fn a_fetched_build_is_copied_to_the_host_once_and_runs_there() {
    if !can_make_hosts() || !mariadb_installed() {
        return;
    }
    let host = Host::start();
    let dir = scratch();
    let target = remote_target("maria102", "mariadb", &host) + "version = \"10.2\"\n";
    let lab = lab(dir.path(), &target, "");
    let _lock = measuring();
    let shipped = || -> Option<std::time::SystemTime> {
        // The agent runs as root there: its cache is /var/cache/dbdelta (apart from builds
        // fetched on that host, under remote/).
        let builds = Path::new("/var/cache/dbdelta/remote/builds/mariadb");
        let version = std::fs::read_dir(builds).ok()?.flatten().next()?;
        let marker = version.path().join("tree/.dbdelta-shipped");
        std::fs::metadata(marker).ok()?.modified().ok()
    };
    let mut stamps = Vec::new();
    for _ in 0..2 {
        let mut cmd = dbdelta(dir.path());
        cmd.env("DBDELTA_CACHE", fetch_cache()).args([
            "run",
            lab.to_str().unwrap(),
            "--quick",
            "--only",
            "point-query",
        ]);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        stamps.push(shipped().expect("the build's copy on the host"));
    }
    assert_eq!(stamps[0], stamps[1], "the second run reused the copy");
    let json: Value =
        serde_json::from_slice(&run(dir.path(), &["report", "--format", "json"]).stdout).unwrap();
    let version = json["targets"][0]["server_version"].as_str().unwrap();
    assert!(version.starts_with("10.2."), "{version}");
    assert!(measurement(&json, "maria102")["server_cpu_us_per_op"].is_number());
    assert!(host.wait_empty(Duration::from_secs(10)).is_empty());
}

#[test]
fn killing_the_ssh_connection_mid_step_fails_the_target_and_leaves_nothing() {
    if !can_make_hosts() || !postgres_installed() {
        return;
    }
    let host = Host::start();
    let dir = scratch();
    let targets = remote_target("pg-remote", "postgres", &host);
    // Long enough a step to cut it in the middle; a short postwrite before it.
    let sysbench =
        "[suite.sysbench]\nrows = 2000\nread_secs = 30\nwarmup_secs = 1\npostwrite_secs = 0.5\n";
    let lab = lab(dir.path(), &targets, sysbench);
    let _lock = measuring();
    let mut child = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "--only", "point-query"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The step runs once its client holds a connection from our side of the link.
    let start = Instant::now();
    let mut seen = Vec::new();
    let (agent, client_backend) = loop {
        seen.extend(rx.try_iter());
        let others = host.others();
        let loaded = seen.iter().any(|l| l.contains("pg-remote c=1 r=1: loaded"));
        let backend =
            (others.iter()).find(|(_, c)| c.contains(&host.local) && c.contains("SELECT"));
        if loaded && let Some(b) = backend {
            let agent = (others.iter())
                .find(|(_, c)| c.contains(" agent"))
                .map(|(p, _)| *p)
                .expect("the agent runs in the namespace");
            break (agent, b.clone());
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the step did not start: {seen:?} {others:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Cut the connection: end dbdelta's ssh master (a child of dbdelta, `ssh -M`).
    let master = children(child.id())
        .into_iter()
        .find(|(_, cmd)| cmd.starts_with("ssh ") && cmd.contains(" -M "))
        .expect("dbdelta's ssh master");
    // SAFETY: ending the ssh process the dbdelta this test started runs.
    unsafe { libc::kill(master.0 as i32, libc::SIGKILL) };
    let cut = Instant::now();
    let left = host.wait_empty(Duration::from_secs(20));
    assert!(
        left.is_empty(),
        "left running in the namespace after the cut: {left:?}"
    );
    let cleaned_in = cut.elapsed();
    assert!(
        agent_dirs(&[agent]).is_empty(),
        "the agent's work directory"
    );
    let status = child.wait().unwrap();
    seen.extend(rx.iter());
    let all = seen.join("\n");
    assert_eq!(status.code(), Some(1), "{all}");
    let failed = (seen.iter())
        .find(|l| l.starts_with("target pg-remote (clients 1, repeat 1) failed:"))
        .unwrap_or_else(|| panic!("no failure line: {all}"));
    assert!(
        failed.contains(&format!("lost the SSH connection to {}", host.url())),
        "{failed}"
    );
    // The store says what failed (the fault matrix shows the run going on to other targets).
    let json: Value =
        serde_json::from_slice(&run(dir.path(), &["report", "--format", "json"]).stdout).unwrap();
    let pg = &json["targets"][0];
    assert_eq!(pg["failed"], true, "{pg}");
    eprintln!(
        "cut mid-step (backend {client_backend:?}); namespace empty {:.1} s later",
        cleaned_in.as_secs_f64()
    );
}

#[test]
fn a_host_whose_key_is_not_known_fails_the_target_in_one_line() {
    if !can_make_hosts() || !postgres_installed() {
        return;
    }
    let host = Host::start();
    let dir = scratch();
    let config = dir.path().join("ssh_config");
    let known = std::fs::read_to_string(host.ssh_config()).unwrap();
    let unknown = (known.lines())
        .map(|l| match l.trim_start().starts_with("UserKnownHostsFile") {
            true => "  UserKnownHostsFile /dev/null".to_string(),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&config, unknown).unwrap();
    let targets = format!(
        "[[target]]\nname = \"pg-remote\"\nengine = \"postgres\"\nhost = \"{}\"\nssh_config = \"ssh_config\"\n",
        host.url()
    );
    let lab = lab(dir.path(), &targets, "");
    let out = quick_point_query(dir.path(), &lab, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let line = (stderr.lines())
        .find(|l| l.starts_with("target pg-remote (clients 1, repeat 1) failed:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains(&format!("ssh to {} failed", host.url()))
            && line.contains("Host key verification failed"),
        "{line}"
    );
    assert!(host.others().is_empty());
}

/// Direct children of `pid`: `(pid, command line)`.
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let ppid = (stat.rsplit_once(')').map(|(_, r)| r))
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        if ppid == Some(pid) {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            out.push((p, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

#[test]
fn the_example_lab_plans_its_targets_on_their_host() {
    let dir = scratch();
    let lab = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/remote-host.toml");
    let out = run(dir.path(), &["plan", lab]);
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for t in ["mysql57", "mysql80"] {
        assert!(
            printed.contains(&format!(
                "target {t}: server on ssh://bench@bench1.example, clients there"
            )),
            "{printed}"
        );
    }
    // Nothing of the remote servers' data lands here.
    assert!(printed.contains("disk: about 0 kB needed"), "{printed}");
}
