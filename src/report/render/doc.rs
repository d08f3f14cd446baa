//! The pieces a report is made of, independent of output format (blocks, grids, cells and their
//! tone, chart references) and how a single number is written into a cell.
//!
//! A leaf of the report: the layout and every section (the suites', profiles') build documents
//! from these, and the renderers (`text`, `markdown`, `html`) read them. It must not read the
//! model, choose sections or render a format.

use super::super::fmt::two;

/// One piece of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Title(String),
    Heading(String),
    SubHeading(String),
    Para(String),
    Bullets(Vec<String>),
    Table(Grid),
    /// Charts, drawn only by formats that can (HTML, PNG); text and Markdown skip them.
    Figures {
        title: Option<String>,
        charts: Vec<ChartRef>,
        /// Under the title: what was left out and why.
        note: Option<String>,
    },
}

/// Which chart of the model to draw; `charts` draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartRef {
    /// Relative QPS of one group's steps, one bar per step per compared target.
    RelativeQps { group: String, clients: u32 },
    /// Ops per second over the measured period of one step, one line per target.
    Throughput { step: String, clients: u32 },
    /// A group's QPS (geometric mean of its steps') against clients, one line per target.
    ClientsQps { group: String },
    /// Rows inserted per second by an Insert Benchmark query step's background inserters,
    /// one line per target (first repeat).
    BackgroundInserts { step: String, clients: u32 },
    /// A version sweep's group against the release order: relative QPS and server CPU/op,
    /// the first release that moved marked.
    ByVersion {
        sweep: String,
        group: String,
        clients: u32,
    },
    /// The differential flame graph of a compared target against its base on one step
    /// (HTML only: no PNG).
    ProfileDiff {
        step: String,
        clients: u32,
        target: String,
    },
    /// The differential flame graph of a compared target's instructions per operation against
    /// its base on one step, drawn from the counted call trees, in the target's widths or the
    /// base's (HTML only: no PNG).
    CallTreeDiff {
        step: String,
        clients: u32,
        target: String,
        base_widths: bool,
    },
}

/// A table; header and body cells may contain `\n` (lines of one cell in text, a space in
/// Markdown and HTML).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Grid {
    pub header: Vec<String>,
    /// Right-align this column (numbers).
    pub right: Vec<bool>,
    pub rows: Vec<Vec<Cell>>,
}

/// Whether a value is good or bad news, for colouring: only a verdict is (see [`rel_cell`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    /// The statistics called an improvement.
    Better,
    /// The statistics called a regression.
    Worse,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub tone: Tone,
}

impl Cell {
    pub fn plain(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            tone: Tone::Plain,
        }
    }
}

pub(in crate::report) const NA: &str = "n/a";
/// A ratio of two values both below the resolution of their counter.
pub(in crate::report) const COARSE: &str = "~";
/// Within-step flags: fewer whole seconds than the minimum; precision wider than the min effect.
pub(in crate::report) const SHORT: &str = " [short]";
pub(in crate::report) const NOISY: &str = " [noisy]";
/// An adaptive step that ran to its maximum without reaching the target precision.
pub(in crate::report) const MAX: &str = " [max]";
/// Marks a step flagged client-bound in a table's step column.
pub(in crate::report) const CB: &str = " [cb]";
/// After a step: a side's server was still settling before its steps (the settling guard).
pub(in crate::report) const SETTLING: &str = " [settling]";

/// A relative value: coloured, with a `+` (above 1) or `-` (below 1) mark, only where the
/// statistics called a change for its metric (`verdict` is `improvement` or `regression`);
/// plain otherwise: a metric without a verdict, one repeat, `within noise`, a group statistic.
pub fn rel_cell(v: Option<f64>, verdict: Option<&str>) -> Cell {
    let Some(v) = v else {
        return Cell::plain(NA);
    };
    let tone = match verdict {
        Some("improvement") => Tone::Better,
        Some("regression") => Tone::Worse,
        _ => return Cell::plain(two(v)),
    };
    let mark = if v >= 1.0 { "+" } else { "-" };
    Cell {
        text: format!("{}{mark}", two(v)),
        tone,
    }
}

/// Integer with thousands separators: `1234567` → `1,234,567`.
pub fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// A rate (QPS, rows/s): integer with separators from 100 up, else a few decimals.
pub fn rate(v: Option<f64>) -> String {
    match v {
        None => NA.into(),
        Some(v) if v.abs() >= 100.0 => thousands(v),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// A per-op value with about three significant digits.
pub fn metric(v: Option<f64>) -> String {
    match v {
        None => NA.into(),
        Some(v) if v.abs() >= 1000.0 => thousands(v),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.01 || v == 0.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.4}"),
    }
}

/// A latency in µs, compact: `850`, `12.3k`, `1.2M`.
pub fn micros(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Bytes as MB (10^6), one decimal.
pub fn mb(v: Option<u64>) -> String {
    match v {
        None => NA.into(),
        Some(b) => format!("{:.1}", b as f64 / 1e6),
    }
}
