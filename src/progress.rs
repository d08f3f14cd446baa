//! Progress output on stderr: a bar per step on a terminal, plain lines otherwise, nothing with `-q`.
//!
//! Owns how long work is shown while it happens. Must not: print results (reports go to stdout)
//! or take part in measuring; the runner hands it numbers it already has.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::console::errln;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// indicatif bars (stderr is a terminal).
    Bars,
    /// One line per finished step.
    Lines,
    /// Nothing (`-q`).
    Quiet,
}

impl Mode {
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Lines
        }
    }
}

/// Progress reporter for a run.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub mode: Mode,
    pub verbose: bool,
    /// `run --report-interval`: a line per interval while each step runs; `None`: none.
    pub interval: Option<Duration>,
}

/// What one `--report-interval` line counts: counted operations (sysbench's queries), the
/// transactions they made (a sysbench event is one), the interval's measured seconds and its
/// failed operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub ops: u64,
    pub transactions: u64,
    pub secs: f64,
    pub errors: u64,
}

/// The bar (or nothing) of one running step.
pub struct StepProgress {
    bar: Option<ProgressBar>,
    total: Duration,
    mode: Mode,
    prefix: String,
    interval: Option<Duration>,
}

impl Progress {
    /// A line about the run itself (load done, cleanup, failures). Shown unless quiet.
    pub fn line(&self, text: &str) {
        if self.mode != Mode::Quiet {
            errln!("{text}");
        }
    }

    /// Detail shown only with `-v`.
    pub fn detail(&self, text: &str) {
        if self.verbose && self.mode != Mode::Quiet {
            errln!("{text}");
        }
    }

    /// Start showing a step that will take `total` (warm-up included).
    pub fn step(&self, prefix: &str, total: Duration) -> StepProgress {
        let bar = (self.mode == Mode::Bars).then(|| {
            let bar = ProgressBar::new(total.as_millis() as u64);
            bar.set_style(
                ProgressStyle::with_template("{prefix:.bold} [{bar:24}] {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(prefix.to_string());
            bar
        });
        StepProgress {
            bar,
            total,
            mode: self.mode,
            prefix: prefix.to_string(),
            interval: self.interval,
        }
    }
}

/// A wait with nothing to measure (the settle after a load): said on a line when it begins,
/// and on a terminal followed by a spinner with its elapsed time until it is dropped.
pub struct Waiting(Option<ProgressBar>);

impl Progress {
    /// Say what the run waits for; the spinner (a terminal only) lasts as long as the value.
    pub fn wait(&self, text: &str) -> Waiting {
        self.line(text);
        Waiting((self.mode == Mode::Bars).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("  {spinner} waiting, {elapsed} so far")
                    .expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        }))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

impl StepProgress {
    /// Update with the time elapsed since the step started, the live rate and, for an
    /// adaptive step, its state (`±1.4% after 12 s`; then the time left is its maximum).
    pub fn update(&self, elapsed: Duration, warming: bool, qps: f64, adaptive: Option<&str>) {
        if let Some(bar) = &self.bar {
            bar.set_position(elapsed.as_millis() as u64);
            let left = self.total.saturating_sub(elapsed).as_secs_f64();
            let phase = if warming { "warm-up, " } else { "" };
            let state = adaptive.map(|a| format!(" · {a}")).unwrap_or_default();
            let max = if adaptive.is_some() { "at most " } else { "" };
            bar.set_message(format!(
                "{phase}{max}{left:.0}s left · {} qps{state}",
                thousands(qps)
            ));
        }
    }

    /// How often the step's runner should hand over an interval's numbers
    /// ([`StepProgress::interval_line`]); `None`: not asked for.
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// One `--report-interval` line: the step's `elapsed` time at the interval's end (warm-up
    /// included), then, as sysbench's lines, transactions and counted operations per second
    /// over the interval's measured length, and its errors. Shown unless quiet, above the bar
    /// on a terminal.
    pub fn interval_line(&self, elapsed: Duration, warming: bool, i: Interval) {
        let phase = if warming { ", warm-up" } else { "" };
        let rate = |n: u64| match i.secs > 0.0 {
            true => n as f64 / i.secs,
            false => 0.0,
        };
        let line = format!(
            "{}: [{:.0} s{phase}] {} tps, {} qps ({} ops in {:.2} s), {} errors",
            self.prefix,
            elapsed.as_secs_f64(),
            thousands(rate(i.transactions)),
            thousands(rate(i.ops)),
            thousands(i.ops as f64),
            i.secs,
            i.errors
        );
        match (&self.bar, self.mode) {
            (Some(bar), _) => bar.println(line),
            (None, Mode::Lines) => errln!("{line}"),
            _ => {}
        }
    }

    /// The step ended: replace the bar with its summary line.
    pub fn finish(self, summary: &str) {
        match (&self.bar, self.mode) {
            (Some(bar), _) => {
                bar.finish_and_clear();
                errln!("{summary}");
            }
            (None, Mode::Lines) => errln!("{summary}"),
            _ => {}
        }
    }
}

/// The whole run's clock: which cell of how many is starting, the time since the run began
/// and the time left, from the plan's estimate of every cell still to run, scaled by how the
/// finished ones went against their estimates.
#[derive(Debug)]
pub struct RunClock {
    started: std::time::Instant,
    /// Each cell to run (its name, as the runner's labels) and its estimated seconds, in order.
    planned: Vec<(String, f64)>,
}

/// The pace of finished cells against their estimates is trusted within these bounds.
const PACE: (f64, f64) = (0.5, 3.0);

impl RunClock {
    pub fn new(planned: Vec<(String, f64)>) -> RunClock {
        RunClock {
            started: std::time::Instant::now(),
            planned,
        }
    }

    /// The cell `name` begins: `cell 3/12 · 1 min 5 s elapsed · about 4 min left`; a cell the
    /// plan did not count (an extra round of `repeats = "auto"`) has no number and no time left.
    pub fn begin(&mut self, name: &str) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let shown = duration(Duration::from_secs_f64(elapsed));
        let Some(k) = self.planned.iter().position(|(n, _)| n == name) else {
            return format!("extra cell · {shown} elapsed");
        };
        let left = time_left(&self.planned, k, elapsed);
        format!(
            "cell {}/{} · {shown} elapsed · about {} left",
            k + 1,
            self.planned.len(),
            duration(Duration::from_secs_f64(left))
        )
    }
}

/// Seconds left when cell `k` of `planned` begins after `elapsed` seconds: the estimate of
/// cells `k..` times the pace of cells `..k` (actual over estimated, within [`PACE`]).
pub fn time_left(planned: &[(String, f64)], k: usize, elapsed: f64) -> f64 {
    let done: f64 = planned[..k].iter().map(|(_, s)| s).sum();
    let rest: f64 = planned[k..].iter().map(|(_, s)| s).sum();
    let pace = match done > 0.0 {
        true => (elapsed / done).clamp(PACE.0, PACE.1),
        false => 1.0,
    };
    rest * pace
}

/// `12345.6` → `12,346`.
pub fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A duration as people read it: `0.5 s`, `12 s`, `4 min 10 s`, `5 h 48 min` (sub-second
/// parts to 0.1 s under 10 s; seconds dropped from hours).
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        let text = format!("{secs:.1}");
        return format!("{} s", text.strip_suffix(".0").unwrap_or(&text));
    }
    let whole = secs.round() as u64;
    let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_as_h_min_s() {
        let d = |s: f64| super::duration(std::time::Duration::from_secs_f64(s));
        assert_eq!(d(0.5), "0.5 s");
        assert_eq!(d(0.3), "0.3 s");
        assert_eq!(d(2.0), "2 s");
        assert_eq!(d(59.6), "1 min");
        assert_eq!(d(250.0), "4 min 10 s");
        assert_eq!(d(20880.0), "5 h 48 min");
        assert_eq!(d(7200.0), "2 h");
    }

    #[test]
    fn time_left_scales_the_rest_by_the_pace_so_far() {
        let p =
            |s: &[f64]| -> Vec<(String, f64)> { s.iter().map(|s| (String::new(), *s)).collect() };
        let cells = p(&[60.0, 60.0, 30.0, 30.0]);
        // Nothing done yet: the estimate as it is.
        assert_eq!(super::time_left(&cells, 0, 0.0), 180.0);
        // Two cells took 180 s against 120 s estimated: the rest takes 1.5 times longer.
        assert_eq!(super::time_left(&cells, 2, 180.0), 90.0);
        // A pace beyond its bounds is held to them (a cell that failed at once: 1 s).
        assert_eq!(super::time_left(&cells, 2, 1.0), 30.0);
        assert_eq!(super::time_left(&cells, 2, 10_000.0), 180.0);
        assert_eq!(super::time_left(&cells, 4, 200.0), 0.0);
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(super::thousands(0.0), "0");
        assert_eq!(super::thousands(999.4), "999");
        assert_eq!(super::thousands(1234567.0), "1,234,567");
        assert_eq!(super::thousands(-1000.0), "-1,000");
    }
}
