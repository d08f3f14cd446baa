//! Debian's headless Chromium from the tests: load a page or URL with a throwaway profile,
//! bounded in time, and read its console messages. Without `/usr/bin/chromium` a test skips
//! its browser part ([`chromium_available`]), except under CI (`CI` set).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Longest a Chromium invocation may take before it is killed.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

pub fn chromium_available() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{CHROMIUM} is missing under CI: .ci/run installs the Debian package `chromium`");
    }
    eprintln!("skipped: {CHROMIUM} not found (apt-get install chromium to run this test)");
    false
}

/// What one headless Chromium invocation printed.
pub struct Chromium {
    pub stdout: String,
    pub stderr: String,
}

/// Runs headless Chromium on a local file with a throwaway profile (see [`chromium_url`]).
pub fn chromium(page: &Path, args: &[&str]) -> Chromium {
    chromium_url(&format!("file://{}", page.display()), args)
}

/// Runs headless Chromium on `url` with a throwaway profile; kills it (by PID) when it
/// outlives [`CHROMIUM_TIMEOUT`]. Console messages go to stderr (`--enable-logging=stderr`).
pub fn chromium_url(url: &str, args: &[&str]) -> Chromium {
    let profile = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            // Child::kill sends SIGKILL to this PID only.
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {CHROMIUM_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        status.success(),
        "chromium failed ({status}); stderr:\n{stderr}"
    );
    Chromium { stdout, stderr }
}

/// Console messages in Chromium's log. Chromium logs every `console.*` call and uncaught
/// exception as `INFO:CONSOLE` whatever its level, so the level cannot be told apart; the
/// report has no script, so any console message at all is a failure.
pub fn console_messages(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}
