//! CPU sets and placement: CPU lists (`"0"`, `"0-3"`, `"0,2-3"`), the `placement` shorthand
//! resolved against the CPUs dbdelta may use, pinning with `sched_setaffinity`, and the
//! wake-up-bound rule that says when an unpinned low-concurrency result measures cross-CPU
//! wake-ups rather than the engine.
//!
//! A leaf: owns parsing, resolution and the affinity system calls. It must not decide when to
//! pin (the runner pins client threads, `engine::common::process` the server at spawn), read `/proc`
//! or `/sys` (that is `sampler` and `host`), or know about targets and steps.

use std::collections::BTreeSet;
use std::fmt;

/// A set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash, serde::Serialize, serde::Deserialize)]
pub struct CpuSet(BTreeSet<usize>);

/// CPUs beyond this do not fit the kernel's `cpu_set_t` that dbdelta hands to
/// `sched_setaffinity`.
pub const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

impl CpuSet {
    /// Parse a CPU list as the kernel writes them: comma-separated CPUs and inclusive ranges,
    /// e.g. `0`, `0-3`, `0,2-3`. The message of an error does not name a key (callers do).
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let bad = |why: &str| {
            format!(
                "\"{text}\" is not a CPU list ({why}); write CPUs and ranges like \"0\", \"0-3\" or \"0,2-3\""
            )
        };
        let mut set = BTreeSet::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty item"));
            }
            let num = |s: &str| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|_| bad(&format!("\"{}\" is not a CPU number", s.trim())))
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if lo > hi {
                return Err(bad(&format!("range {lo}-{hi} runs backwards")));
            }
            if hi >= MAX_CPUS {
                return Err(bad(&format!("CPU {hi} is beyond {}", MAX_CPUS - 1)));
            }
            set.extend(lo..=hi);
        }
        Ok(CpuSet(set))
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    pub fn insert(&mut self, cpu: usize) {
        self.0.insert(cpu);
    }

    /// Add every CPU of `other`.
    pub fn extend(&mut self, other: &CpuSet) {
        self.0.extend(other.iter());
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }

    /// CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    /// `None` for an empty set, else the compact list (`0,2-3`): how sets are stored.
    pub fn to_option(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.to_string())
    }

    /// The set as the kernel's bit mask.
    fn to_libc(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain bits; CPU_SET only writes inside it (every CPU of a set is
        // below MAX_CPUS: `parse` refuses larger ones and `from_iter` callers read them from
        // the kernel's own masks).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for cpu in self.iter().filter(|c| *c < MAX_CPUS) {
                libc::CPU_SET(cpu, &mut set);
            }
            set
        }
    }

    fn from_libc(set: &libc::cpu_set_t) -> CpuSet {
        // SAFETY: CPU_ISSET only reads inside the set.
        (0..MAX_CPUS)
            .filter(|c| unsafe { libc::CPU_ISSET(*c, set) })
            .collect()
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

/// The compact list: `0,2-3`; empty for an empty set.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().expect("peeked");
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

/// The CPUs the calling thread may run on (`sched_getaffinity`). Called on the main thread
/// before anything is pinned, it is the set the process was started with (taskset, cgroups).
pub fn current_affinity() -> std::io::Result<CpuSet> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(CpuSet::from_libc(&set))
    }
}

/// Pin the calling thread to `cpus`. Threads it creates afterwards inherit the mask.
pub fn pin_current_thread(cpus: &CpuSet) -> std::io::Result<()> {
    let set = cpus.to_libc();
    // SAFETY: sched_setaffinity reads the set we hand it.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Make `cmd`'s process start pinned to `cpus`: `sched_setaffinity` in the child between fork
/// and exec, so the server and every process and thread it creates inherit the mask (a server
/// cannot escape it by forking backends).
pub fn pin_command(cmd: &mut std::process::Command, cpus: &CpuSet) {
    use std::os::unix::process::CommandExt;
    // Built here, in the parent: the child only makes one system call.
    let set = cpus.to_libc();
    // SAFETY: the hook runs in the forked child before exec; it calls only sched_setaffinity
    // (a system call, async-signal-safe) and reads errno, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The `placement` shorthand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shorthand {
    /// No affinity: the scheduler's choice.
    Os,
    /// Server and client on the same single CPU (the first one dbdelta may use).
    Shared,
    /// Server on the first half of the usable CPUs (whole cores first), client on the rest.
    Split,
}

impl Shorthand {
    pub const NAMES: &'static [&'static str] = &["os", "shared", "split"];

    pub fn parse(name: &str) -> Option<Shorthand> {
        match name {
            "os" => Some(Shorthand::Os),
            "shared" => Some(Shorthand::Shared),
            "split" => Some(Shorthand::Split),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Shorthand::Os => "os",
            Shorthand::Shared => "shared",
            Shorthand::Split => "split",
        }
    }
}

/// A placement as written in a lab (`[lab]` or one `[[target]]`): each key with where it was
/// written (`lab.toml:4: [lab] server_cpus`), for messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlacementSpec {
    pub shorthand: Option<(Shorthand, String)>,
    pub server: Option<(CpuSet, String)>,
    pub client: Option<(CpuSet, String)>,
}

impl PlacementSpec {
    pub fn is_empty(&self) -> bool {
        self.shorthand.is_none() && self.server.is_none() && self.client.is_none()
    }
}

/// A resolved placement: what the runner applies and records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `os`, `shared`, `split`, or `custom` (only explicit lists).
    pub name: String,
    /// CPUs of the server process tree; `None`: not pinned (or no server process: SQLite).
    pub server: Option<CpuSet>,
    /// CPUs of every client thread (for SQLite, where the engine runs); `None`: not pinned.
    pub client: Option<CpuSet>,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            name: "os".into(),
            server: None,
            client: None,
        }
    }
}

impl Placement {
    /// Server and client confined to one and the same CPU.
    pub fn one_shared_cpu(&self) -> bool {
        matches!((&self.server, &self.client), (Some(s), Some(c)) if s.len() == 1 && s == c)
    }

    /// `shared: server 0, client 0`, `os (not pinned)`.
    pub fn describe(&self) -> String {
        describe(
            &self.name,
            self.server.as_ref().map(|s| s.to_string()).as_deref(),
            self.client.as_ref().map(|s| s.to_string()).as_deref(),
        )
    }
}

/// A placement's one-line description from its stored parts.
pub fn describe(name: &str, server: Option<&str>, client: Option<&str>) -> String {
    match (server, client) {
        (None, None) => format!("{name} (not pinned)"),
        (s, c) => format!(
            "{name}: server {}, client {}",
            s.unwrap_or("not pinned"),
            c.unwrap_or("not pinned")
        ),
    }
}

/// The CPUs placement is resolved against.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Machine {
    /// CPUs the host has online.
    pub online: CpuSet,
    /// Online CPUs dbdelta may run on (its affinity mask at start).
    pub usable: CpuSet,
    /// The usable CPUs ordered so that SMT siblings sit together (by package, core, number):
    /// a half of this list is a half of the cores.
    pub by_core: Vec<usize>,
}

impl Machine {
    /// A machine whose CPUs `0..n` are all online, usable and on separate cores (tests).
    pub fn simple(n: usize) -> Machine {
        let all: CpuSet = (0..n).collect();
        Machine {
            online: all.clone(),
            usable: all,
            by_core: (0..n).collect(),
        }
    }

    fn check(&self, set: &CpuSet, at: &str) -> Result<(), String> {
        if let Some(cpu) = set.iter().find(|c| !self.online.contains(*c)) {
            return Err(format!(
                "{at}: CPU {cpu} does not exist on this host (online CPUs: {}); use CPUs from that list",
                self.online
            ));
        }
        if let Some(cpu) = set.iter().find(|c| !self.usable.contains(*c)) {
            return Err(format!(
                "{at}: dbdelta may not use CPU {cpu} (its affinity mask allows {}; online CPUs: {}); use CPUs dbdelta may run on",
                self.usable, self.online
            ));
        }
        Ok(())
    }
}

/// Resolve `spec` on `machine`. Explicit lists win over the shorthand; for an embedded engine
/// (no server process) `server_cpus` is not applied and the server list is `None`.
pub fn resolve(
    spec: &PlacementSpec,
    machine: &Machine,
    embedded: bool,
) -> Result<Placement, String> {
    for (set, at) in [&spec.server, &spec.client].into_iter().flatten() {
        machine.check(set, at)?;
    }
    let order: Vec<usize> = if machine.by_core.is_empty() {
        machine.usable.iter().collect()
    } else {
        machine.by_core.clone()
    };
    let (mut server, mut client) = match &spec.shorthand {
        None | Some((Shorthand::Os, _)) => (None, None),
        Some((Shorthand::Shared, at)) => {
            let first = *order.iter().min().ok_or_else(|| {
                format!(
                    "{at}: dbdelta may use no online CPU (online: {})",
                    machine.online
                )
            })?;
            let one: CpuSet = [first].into_iter().collect();
            (Some(one.clone()), Some(one))
        }
        Some((Shorthand::Split, at)) => {
            if order.len() < 2 {
                return Err(format!(
                    "{at}: \"split\" needs at least 2 CPUs dbdelta may use; it may use {} (online: {}); use \"shared\" or \"os\"",
                    machine.usable, machine.online
                ));
            }
            let half = order.len().div_ceil(2);
            (
                Some(order[..half].iter().copied().collect()),
                Some(order[half..].iter().copied().collect()),
            )
        }
    };
    if let Some((set, _)) = &spec.server {
        server = Some(set.clone());
    }
    if let Some((set, _)) = &spec.client {
        client = Some(set.clone());
    }
    if embedded {
        server = None;
    }
    let name = match &spec.shorthand {
        Some((s, _)) => s.name().to_string(),
        None if spec.server.is_some() || spec.client.is_some() => "custom".to_string(),
        None => Shorthand::Os.name().to_string(),
    };
    Ok(Placement {
        name,
        server,
        client,
    })
}

/// What the wake-up-bound rule looks at, for one measured step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WakeupInputs {
    /// The engine runs in dbdelta's own threads (SQLite): never wake-up-bound.
    pub embedded: bool,
    pub clients: u32,
    /// CPUs dbdelta may use.
    pub usable_cpus: usize,
    /// Server and client confined to one and the same CPU.
    pub one_shared_cpu: bool,
    /// KB the server's processes read and wrote per op (`/proc/PID/io`; `None`: unknown).
    /// The server's own IO, not the device's: other processes on the same disk must not
    /// hide the flag.
    pub server_io_kb_per_op: Option<f64>,
    pub client_cpu_us_per_op: Option<f64>,
    pub server_cpu_us_per_op: Option<f64>,
    pub qps: Option<f64>,
}

/// Server IO per op at or above which sleeping may be IO waits (fsync, reads), not wake-ups:
/// 0.1 KB, one 4 KB page per 40 ops. A write step that commits every event writes at least a
/// WAL/redo block per commit (read-write's 20 ops: ≥ 0.4 KB/op); a cached 1-client point select
/// on PostgreSQL 15 measured 0.0002–0.0013 KB/op.
pub const WAKEUP_MAX_IO_KB_PER_OP: f64 = 0.1;
/// Client busy share below which the client is not what limits the round trip.
pub const WAKEUP_MAX_CLIENT_BUSY: f64 = 0.5;
/// Server busy share below which a query is a short round trip rather than engine work.
///
/// Not one half, as first planned: on these VMs a cross-CPU wake-up is charged largely as CPU
/// time of both sides. 1-client cached point selects on PostgreSQL 15 on an idle host ran at
/// 21–22.5K QPS across two CPUs with the server busy 0.52–0.54 of each query (client 0.39–0.41),
/// against 65–67K QPS on one shared CPU; with the host's other CPU busy the unpinned pair ran at
/// 47–67K with the server busy 0.56–0.60. Two thirds flags both, while queries that keep the
/// server busy most of the time (ranges, scans: 0.8 and more) are not round-trip bound.
pub const WAKEUP_MAX_SERVER_BUSY: f64 = 2.0 / 3.0;

/// Busy share of one side: its CPU per op × ops per second per client, i.e. the fraction of
/// each client's wall time that side spent on CPU for it. `cpu_us × qps / clients / 1e6`.
pub fn busy_share(cpu_us_per_op: Option<f64>, qps: Option<f64>, clients: u32) -> Option<f64> {
    let (cpu, qps) = (cpu_us_per_op?, qps?);
    (clients > 0).then(|| cpu * qps / f64::from(clients) / 1e6)
}

/// The step is wake-up-bound: a server engine at low concurrency (fewer clients than usable
/// CPUs), client and server not confined to one shared CPU, little server IO per op, the
/// client busy less than half and the server less than two thirds of each query's wall time:
/// each query is a short round trip between threads on different CPUs, so the number measures
/// cross-CPU wake-ups (and where the scheduler put the two) more than the engine.
pub fn wakeup_bound(w: &WakeupInputs) -> bool {
    if w.embedded || w.one_shared_cpu || (w.clients as usize) >= w.usable_cpus {
        return false;
    }
    if w.server_io_kb_per_op
        .is_some_and(|io| io >= WAKEUP_MAX_IO_KB_PER_OP)
    {
        return false;
    }
    let client = busy_share(w.client_cpu_us_per_op, w.qps, w.clients);
    let server = busy_share(w.server_cpu_us_per_op, w.qps, w.clients);
    matches!((client, server), (Some(c), Some(s))
        if c < WAKEUP_MAX_CLIENT_BUSY && s < WAKEUP_MAX_SERVER_BUSY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> CpuSet {
        CpuSet::parse(text).unwrap()
    }

    #[test]
    fn cpu_lists_parse_and_print_compactly() {
        assert_eq!(set("0").iter().collect::<Vec<_>>(), [0]);
        assert_eq!(set("0-3").iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(set("0,2-3").iter().collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(set(" 3, 1 ,2").to_string(), "1-3");
        assert_eq!(set("0,2-3,5,7-9,4").to_string(), "0,2-5,7-9");
        assert_eq!(set("1-1").to_string(), "1");
        assert_eq!(CpuSet::default().to_string(), "");
        assert_eq!(CpuSet::default().to_option(), None);
        for bad in ["", "a", "1,", ",1", "3-1", "1-", "-1", "0-x", "1.5", "5000"] {
            let e = CpuSet::parse(bad).unwrap_err();
            assert!(
                e.contains(&format!("\"{bad}\" is not a CPU list")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn affinity_round_trips_on_this_thread() {
        let before = current_affinity().unwrap();
        assert!(!before.is_empty());
        let first_cpu = before.iter().next().unwrap();
        std::thread::spawn(move || {
            let first: CpuSet = [first_cpu].into_iter().collect();
            pin_current_thread(&first).unwrap();
            assert_eq!(current_affinity().unwrap(), first);
        })
        .join()
        .unwrap();
        assert_eq!(
            current_affinity().unwrap(),
            before,
            "other threads unchanged"
        );
    }

    fn spec(short: Option<Shorthand>, server: Option<&str>, client: Option<&str>) -> PlacementSpec {
        PlacementSpec {
            shorthand: short.map(|s| (s, "lab.toml:3: [lab] placement".to_string())),
            server: server.map(|s| (set(s), "lab.toml:4: [lab] server_cpus".to_string())),
            client: client.map(|s| (set(s), "lab.toml:5: [lab] client_cpus".to_string())),
        }
    }

    fn lists(p: &Placement) -> (String, Option<String>, Option<String>) {
        (
            p.name.clone(),
            p.server.as_ref().map(|s| s.to_string()),
            p.client.as_ref().map(|s| s.to_string()),
        )
    }

    #[test]
    fn shorthands_resolve_on_the_usable_cpus() {
        let m4 = Machine::simple(4);
        let r = |s: &PlacementSpec, m: &Machine| lists(&resolve(s, m, false).unwrap());
        let some = |s: &str| Some(s.to_string());
        assert_eq!(r(&PlacementSpec::default(), &m4), ("os".into(), None, None));
        assert_eq!(r(&spec(Some(Shorthand::Os), None, None), &m4).1, None);
        assert_eq!(
            r(&spec(Some(Shorthand::Shared), None, None), &m4),
            ("shared".into(), some("0"), some("0"))
        );
        assert_eq!(
            r(&spec(Some(Shorthand::Split), None, None), &m4),
            ("split".into(), some("0-1"), some("2-3"))
        );
        // Three CPUs: the server gets the larger half.
        assert_eq!(
            r(
                &spec(Some(Shorthand::Split), None, None),
                &Machine::simple(3)
            )
            .1,
            some("0-1")
        );
        // Only CPUs 2 and 3 usable (taskset -c 2,3): shared takes the first of them.
        let mut m = Machine::simple(4);
        m.usable = set("2-3");
        m.by_core = vec![2, 3];
        assert_eq!(
            r(&spec(Some(Shorthand::Shared), None, None), &m).1,
            some("2")
        );
        // SMT: CPUs 0,2 share a core and 1,3 another: split gives each side whole cores.
        let mut smt = Machine::simple(4);
        smt.by_core = vec![0, 2, 1, 3];
        assert_eq!(
            r(&spec(Some(Shorthand::Split), None, None), &smt),
            ("split".into(), some("0,2"), some("1,3"))
        );
    }

    #[test]
    fn explicit_lists_win_and_sqlite_has_no_server_list() {
        let m = Machine::simple(4);
        let p = resolve(&spec(Some(Shorthand::Split), Some("3"), None), &m, false).unwrap();
        assert_eq!(
            lists(&p),
            ("split".into(), Some("3".into()), Some("2-3".into()))
        );
        let p = resolve(&spec(None, Some("0"), Some("0")), &m, false).unwrap();
        assert_eq!(
            lists(&p),
            ("custom".into(), Some("0".into()), Some("0".into()))
        );
        assert!(p.one_shared_cpu());
        assert_eq!(p.describe(), "custom: server 0, client 0");
        let p = resolve(&spec(None, Some("1"), None), &m, false).unwrap();
        assert_eq!(p.describe(), "custom: server 1, client not pinned");
        assert!(!p.one_shared_cpu());
        let p = resolve(&spec(Some(Shorthand::Shared), None, None), &m, true).unwrap();
        assert_eq!(lists(&p), ("shared".into(), None, Some("0".into())));
        assert_eq!(Placement::default().describe(), "os (not pinned)");
    }

    #[test]
    fn cpus_the_host_lacks_or_forbids_are_named() {
        let m = Machine::simple(2);
        let e = resolve(&spec(None, Some("0-3"), None), &m, false).unwrap_err();
        assert_eq!(
            e,
            "lab.toml:4: [lab] server_cpus: CPU 2 does not exist on this host (online CPUs: 0-1); use CPUs from that list"
        );
        let mut m = Machine::simple(2);
        m.usable = set("0");
        m.by_core = vec![0];
        let e = resolve(&spec(None, None, Some("1")), &m, false).unwrap_err();
        assert!(
            e.starts_with("lab.toml:5: [lab] client_cpus: dbdelta may not use CPU 1 (its affinity mask allows 0; online CPUs: 0-1)"),
            "{e}"
        );
        let e = resolve(&spec(Some(Shorthand::Split), None, None), &m, false).unwrap_err();
        assert!(
            e.starts_with("lab.toml:3: [lab] placement: \"split\" needs at least 2 CPUs"),
            "{e}"
        );
    }

    #[test]
    fn wakeup_rule() {
        // The platform notes' unpinned 1-client point select: 13.5K QPS, client 26 µs/q,
        // server 33 µs/q: busy 0.35 and 0.45.
        let unpinned = WakeupInputs {
            embedded: false,
            clients: 1,
            usable_cpus: 2,
            one_shared_cpu: false,
            server_io_kb_per_op: Some(0.0003),
            client_cpu_us_per_op: Some(26.0),
            server_cpu_us_per_op: Some(33.0),
            qps: Some(13_500.0),
        };
        assert!((busy_share(Some(26.0), Some(13_500.0), 1).unwrap() - 0.351).abs() < 1e-9);
        assert!(wakeup_bound(&unpinned));
        assert!(!wakeup_bound(&WakeupInputs {
            one_shared_cpu: true,
            ..unpinned
        }));
        assert!(!wakeup_bound(&WakeupInputs {
            embedded: true,
            ..unpinned
        }));
        assert!(!wakeup_bound(&WakeupInputs {
            clients: 2,
            ..unpinned
        }));
        assert!(
            !wakeup_bound(&WakeupInputs {
                server_io_kb_per_op: Some(8.0),
                ..unpinned
            }),
            "fsync waits are not wake-ups"
        );
        assert!(wakeup_bound(&WakeupInputs {
            server_io_kb_per_op: None,
            ..unpinned
        }));
        // Measured on an idle host, across two CPUs: 21,288 QPS, client 18.3 µs, server 24.9 µs
        // per query (busy 0.39 and 0.53): the cost of the wake-ups shows as CPU time.
        assert!(wakeup_bound(&WakeupInputs {
            qps: Some(21_288.0),
            client_cpu_us_per_op: Some(18.3),
            server_cpu_us_per_op: Some(24.9),
            ..unpinned
        }));
        // A server busy 0.7 of each query is doing engine work, and a client busy 0.55 is
        // what limits the round trip.
        assert!(!wakeup_bound(&WakeupInputs {
            server_cpu_us_per_op: Some(52.0),
            ..unpinned
        }));
        assert!(!wakeup_bound(&WakeupInputs {
            client_cpu_us_per_op: Some(41.0),
            ..unpinned
        }));
        assert!(!wakeup_bound(&WakeupInputs {
            qps: None,
            ..unpinned
        }));
        assert_eq!(busy_share(Some(1.0), Some(1.0), 0), None);
    }
}
