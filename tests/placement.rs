//! CPU placement on a real PostgreSQL server (Debian's, installed by `.ci/run`): every server
//! process and thread and every client thread is allowed only, and seen only, on the CPUs the
//! lab asked for; an `os` target stays unpinned; a CPU the host lacks is bad input.
//!
//! Two kinds of evidence: what dbdelta stored per step (its sampler reads each thread's last CPU
//! and affinity mask every second and at the step's boundaries), and this test's own reading of
//! `/proc/PID/task/TID/status` for every thread of every running server it finds meanwhile.

mod common;
use common::*;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// A CPU list (`0,2-3`) as a set.
fn cpus(list: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        out.extend(a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap());
    }
    out
}

/// This test's own affinity mask: dbdelta, its child, inherits it, and so does an unpinned
/// server.
fn own_mask() -> BTreeSet<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    cpus(
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap(),
    )
}

/// The CPUs placements are resolved against: online ones this test may run on.
fn usable() -> BTreeSet<usize> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    own_mask().intersection(&cpus(&online)).copied().collect()
}

/// Affinity mask of every thread of `pid`.
fn thread_masks(pid: u32) -> Vec<BTreeSet<usize>> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(cpus)
        })
        .collect()
}

/// Threads read, and the distinct affinity masks they had.
type Masks = (usize, BTreeSet<BTreeSet<usize>>);

/// (pid, ppid, command line) of every process.
fn processes() -> Vec<(u32, u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            Some((pid, ppid, String::from_utf8_lossy(&cmd).replace('\0', " ")))
        })
        .collect()
}

/// While `child` (dbdelta) runs: for each of its postmasters (its children running `.../postgres
/// -D <dir>/<target>.c1.r1`; not initdb, which is not pinned), the number of threads of the
/// postmaster and its children that were read, and the distinct masks they had, by target.
/// Polls every 50 ms until dbdelta exits.
fn watch_servers(child: &mut std::process::Child) -> BTreeMap<String, Masks> {
    let mut seen: BTreeMap<String, Masks> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "dbdelta did not finish in 180 s");
        let all = processes();
        let postmasters = all.iter().filter(|p| {
            p.1 == child.id()
                && p.2
                    .split_whitespace()
                    .next()
                    .is_some_and(|bin| bin.ends_with("/postgres"))
        });
        for (pm, _, cmd) in postmasters {
            let Some(target) = cmd
                .split_whitespace()
                .skip_while(|a| *a != "-D")
                .nth(1)
                .and_then(|d| Path::new(d).file_name()?.to_str()?.split(".c1.").next())
            else {
                continue;
            };
            let masks = seen.entry(target.to_string()).or_default();
            for (pid, ..) in all.iter().filter(|p| p.0 == *pm || p.1 == *pm) {
                for m in thread_masks(*pid) {
                    masks.0 += 1;
                    masks.1.insert(m);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    seen
}

#[test]
fn shared_and_split_pin_every_server_and_client_thread() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let usable = usable();
    let first = *usable.iter().next().unwrap();
    let dir = scratch();
    let split = usable.len() >= 2;
    let mut lab = String::from(
        "[lab]\nname = \"placement\"\n\n\
         [[target]]\nname = \"shared\"\nengine = \"postgres\"\nplacement = \"shared\"\n\n\
         [[target]]\nname = \"os\"\nengine = \"postgres\"\n\n",
    );
    if split {
        lab.push_str(
            "[[target]]\nname = \"split\"\nengine = \"postgres\"\nplacement = \"split\"\n\n",
        );
    } else {
        eprintln!("note: one usable CPU; the split target is left out");
    }
    lab.push_str("[suite.sysbench]\nrows = 2000\nwarmup_secs = 0.2\n");
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    let mut child = dbdelta(dir.path())
        .args(["run", "lab.toml", "-q", "--quick", "--clients", "1"])
        .args([
            "--only",
            "point-query,random-points_range=10,hot-points,read-only_range=10",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let live = watch_servers(&mut child);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let targets: Vec<(String, String, Option<String>, Option<String>)> = rows(
        &db,
        "SELECT name, placement, server_cpus, client_cpus FROM targets ORDER BY position",
    );
    type Lists = (Option<BTreeSet<usize>>, Option<BTreeSet<usize>>);
    let want: BTreeMap<String, Lists> = targets
        .iter()
        .map(|(n, _, s, c)| (n.clone(), (s.as_deref().map(cpus), c.as_deref().map(cpus))))
        .collect();
    let one: BTreeSet<usize> = [first].into();
    assert_eq!(
        want["shared"],
        (Some(one.clone()), Some(one.clone())),
        "{targets:?}"
    );
    assert_eq!(want["os"], (None, None), "{targets:?}");
    if split {
        let (s, c) = (
            want["split"].0.clone().unwrap(),
            want["split"].1.clone().unwrap(),
        );
        assert!(
            !s.is_empty() && !c.is_empty() && s.is_disjoint(&c),
            "{targets:?}"
        );
        assert_eq!(s.union(&c).copied().collect::<BTreeSet<_>>(), usable);
    }

    // This test's own reading of every server thread while the servers ran.
    for (name, (server, _)) in &want {
        let (threads, masks) = live
            .get(name)
            .unwrap_or_else(|| panic!("{name}'s server never seen"));
        assert!(*threads >= 3, "{name}: postmaster and helpers: {threads}");
        let expect = server.clone().unwrap_or_else(own_mask);
        assert_eq!(
            masks,
            &BTreeSet::from([expect]),
            "{name}: every server thread must be allowed exactly the CPUs asked for"
        );
    }

    // What dbdelta's sampler stored per step: allowed exactly, seen only on, the asked CPUs.
    type Row = (String, String, String, String, String, String);
    let measured: Vec<Row> = rows(
        &db,
        "SELECT target, step, server_cpus_allowed, server_cpus_seen, client_cpus_allowed,
                client_cpus_seen FROM measurements WHERE NOT failed",
    );
    assert_eq!(measured.len(), 4 * want.len());
    for (target, step, s_allowed, s_seen, c_allowed, c_seen) in measured {
        let (server, client) = &want[&target];
        let server = server.clone().unwrap_or_else(own_mask);
        let client = client.clone().unwrap_or_else(own_mask);
        let at = format!("{target} {step}");
        assert_eq!(cpus(&s_allowed), server, "{at}: server threads allowed");
        assert!(
            cpus(&s_seen).is_subset(&server) && !s_seen.is_empty(),
            "{at}: server seen {s_seen}"
        );
        assert_eq!(cpus(&c_allowed), client, "{at}: client threads allowed");
        assert!(
            cpus(&c_seen).is_subset(&client) && !c_seen.is_empty(),
            "{at}: client seen {c_seen}"
        );
    }

    // Every report format names each target's placement.
    let md = text(&run(dir.path(), &["report", "--format", "md"]).stdout);
    let cells = |line: &str| -> Vec<String> {
        line.split('|')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    let table: Vec<Vec<String>> = md.lines().map(cells).collect();
    let first = first.to_string();
    let row = |cells: [&str; 4]| cells.map(String::from).to_vec();
    assert!(
        table.contains(&row(["shared", "shared", &first, &first])),
        "{md}"
    );
    assert!(
        table.contains(&row(["os", "os", "not pinned", "not pinned"])),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&run(dir.path(), &["report", "--format", "json"]).stdout).unwrap();
    assert!(schema_errors(&json).is_empty());
    assert_eq!(json["targets"][0]["placement"], "shared");
    assert_eq!(json["targets"][0]["server_cpus"], first);
    assert!(
        !json["run"]["host"]["cpu_topology"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let csv = text(&run(dir.path(), &["report", "--format", "csv"]).stdout);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for col in [
        "placement",
        "server_cpus",
        "client_cpus",
        "host_cpu_topology",
    ] {
        assert!(header.contains(&col), "{col}");
    }
}

#[test]
fn a_cpu_the_host_lacks_is_bad_input() {
    let dir = scratch();
    let online = cpus(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    let missing = online.iter().max().unwrap() + 1;
    std::fs::write(
        dir.path().join("lab.toml"),
        format!(
            "[lab]\nname = \"x\"\n\n[[target]]\nname = \"a\"\nengine = \"postgres\"\nserver_cpus = \"{missing}\"\n"
        ),
    )
    .unwrap();
    let out = run(dir.path(), &["run", "lab.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "lab.toml:7: [[target]] server_cpus: CPU {missing} does not exist on this host (online CPUs: "
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!dir.path().join("dbdelta.db").exists(), "nothing written");
    assert!(!dir.path().join("dbdelta-work").exists(), "nothing written");
}
