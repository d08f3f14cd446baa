//! Test hosts for remote targets: a network namespace joined to this one by a veth pair, with
//! Debian's `openssh-server` inside on an address that exists only on that link, a host key
//! and a client key of its own, and an ssh config file naming them (what a lab's `ssh_config`
//! points at). Removed on drop: the sshd this helper started, anything left in the namespace
//! (a test checks first that nothing is), the namespace itself (its veth end goes with it).
//!
//! A namespace has its own network, not its own filesystem or PIDs: the "remote" agent's work
//! directory is visible here, and `ip netns pids` lists what runs in the namespace.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Whether this machine can make test hosts (root, `ip`, `sshd`); under CI it must.
pub fn can_make_hosts() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = Path::new("/usr/sbin/sshd").is_file()
        && Command::new("ip")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
    if !(root && tools) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with iproute2 and openssh-server installed"
        );
        eprintln!("note: test hosts need root, iproute2 and openssh-server; skipping");
    }
    root && tools
}

/// One test host.
pub struct Host {
    pub ns: String,
    /// The host's address (inside the namespace) and ours on the link.
    pub address: String,
    pub local: String,
    pub dir: tempfile::TempDir,
    sshd: Child,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Host {
    /// A namespace with sshd listening on its end of a fresh /30.
    pub fn start() -> Host {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % 4;
        let id = std::process::id() % 4096 * 4 + n;
        let ns = format!("dbdt{id}");
        let block = id * 4;
        let (local, address) = (
            format!("10.222.{}.{}", block >> 8, (block & 255) + 1),
            format!("10.222.{}.{}", block >> 8, (block & 255) + 2),
        );
        let (a, b) = (format!("dbdt{id}a"), format!("dbdt{id}b"));
        // A namespace of that name left by a crashed run of this PID is ours to replace.
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        ip(&["netns", "add", &ns]);
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
        ip(&["link", "set", &b, "netns", &ns]);
        ip(&["addr", "add", &format!("{local}/30"), "dev", &a]);
        ip(&["link", "set", &a, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &ns, "ip"];
            all.extend_from_slice(args);
            ip(&all);
        };
        inside(&["addr", "add", &format!("{address}/30"), "dev", &b]);
        inside(&["link", "set", &b, "up"]);
        inside(&["link", "set", "lo", "up"]);
        let dir = tempfile::tempdir().unwrap();
        let sshd = start_sshd(&ns, &address, &local, dir.path());
        Host {
            ns,
            address,
            local,
            dir,
            sshd,
        }
    }

    /// The ssh config file that logs in to this host as root with the test's key.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// `ssh://root@ADDRESS`.
    pub fn url(&self) -> String {
        format!("ssh://root@{}", self.address)
    }

    /// PIDs of every process in the namespace.
    pub fn pids(&self) -> Vec<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.ns])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Processes in the namespace other than the listening sshd: `(pid, command line)`.
    pub fn others(&self) -> Vec<(u32, String)> {
        self.pids()
            .into_iter()
            .filter(|&p| p != self.sshd.id())
            .map(|p| {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                (p, cmd.trim().to_string())
            })
            .filter(|(_, cmd)| !cmd.is_empty())
            .collect()
    }

    /// Wait until nothing but the listening sshd runs in the namespace, for at most `limit`;
    /// what is still there then.
    pub fn wait_empty(&self, limit: Duration) -> Vec<(u32, String)> {
        let start = Instant::now();
        loop {
            let left = self.others();
            if left.is_empty() || start.elapsed() > limit {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// sshd in the namespace: key logins as root only, on `address`, its own host key.
fn start_sshd(ns: &str, address: &str, local: &str, dir: &Path) -> Child {
    let (host_key, client_key) = (dir.join("host_key"), dir.join("client_key"));
    keygen(&host_key);
    keygen(&client_key);
    std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "ListenAddress {address}:22\nHostKey {}\nAuthorizedKeysFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n\
             PidFile {}\nLogLevel VERBOSE\n",
            host_key.display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
    let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
    std::fs::write(
        dir.join("known_hosts"),
        format!("{address} {}\n", key.join(" ")),
    )
    .unwrap();
    std::fs::write(
        dir.join("ssh_config"),
        format!(
            "Host {address}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  BindAddress {local}\n",
            client_key.display(),
            dir.join("known_hosts").display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "/usr/sbin/sshd", "-D", "-f"])
        .arg(dir.join("sshd_config"))
        .arg("-E")
        .arg(dir.join("sshd.log"))
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Ready when the port answers.
    let start = Instant::now();
    let target: std::net::SocketAddr = format!("{address}:22").parse().unwrap();
    while std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sshd did not listen: {}",
            std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
        // Anything still in the namespace was started by this test's run.
        for p in self.pids() {
            // SAFETY: ending a process in the namespace this test created.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}
