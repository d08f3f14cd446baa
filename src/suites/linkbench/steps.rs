//! The LinkBench suite (docs/workloads.md, LinkBench): a social graph of nodes and typed links with
//! per-(node, type) counts, loaded by `loaders` connections over disjoint id ranges, then requested
//! by a closed-loop mix of ten operations.
//!
//! Steps, in order: `linkbench.load` (nodes, links and counts as multi-row inserts; each
//! statement an operation of type `nodes`, `links` or `counts`, counting its rows),
//! `linkbench.index` (`id1_type`, built after the load and timed; the postwrite cleanup
//! follows), `linkbench.warm` (requests, stored flagged, never reported),
//! `linkbench.request.P<n>` per requester count (ten operation types, one unit per request),
//! and `linkbench.check` (counttable against the visible links; a mismatch fails the step with
//! the first differing keys).
//!
//! Out-degrees are a pure function of the node id ([`degree`]), so each loader knows the links
//! of its range and the requests know which links exist without asking. The loaders' executor is
//! in `load.rs`, the requesters' in `request.rs`.
//! Must not: time anything or sleep (the runner does); the rows' `time` values come from a
//! synthetic clock, never the wall clock.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rand::RngExt;
use rand::rngs::SmallRng;

use super::sql as lsql;
use crate::engine::{DbError, Dialect, Session, TableDdl};
use crate::workload::Suite;
use crate::workload::{
    Counted, Done, Executor, ExecutorFactory, Opening, Pacer, Role, Scale, StepPlan,
};

pub const SUITE: &str = "linkbench";
/// Report group of `linkbench.load` and `linkbench.index`.
pub const LOAD_GROUP: &str = "linkbench-load";
/// Report group of the request steps.
pub const REQUEST_GROUP: &str = "linkbench-request";
/// The request operation types, in the order of [`Mix`] and of every request step's role.
pub const OPS: [&str; 10] = [
    "addlink",
    "deletelink",
    "updatelink",
    "countlink",
    "getlink",
    "getlinklist",
    "getnode",
    "addnode",
    "updatenode",
    "deletenode",
];
/// Link types (LinkBench's `link_type_count`).
pub const LINK_TYPES: u64 = 2;
/// Share of getlinklist requests that page further back through a list seen earlier.
pub const HISTORY_SHARE: f64 = 0.3;
/// getlink's ids per request: geometric with this p, from 1 to `MULTIGET_MAX` (mean ≈ 2.6).
pub const MULTIGET_P: f64 = 0.382;
/// Zipf shapes of the id draws (LinkBench's FBWorkload): link reads, link writes, node
/// reads, node updates; node deletes are uniform.
pub const ZIPF_LINK_READ: f64 = 0.8;
pub const ZIPF_LINK_WRITE: f64 = 0.741;
pub const ZIPF_NODE_READ: f64 = 0.625;
pub const ZIPF_NODE_UPDATE: f64 = 0.606;
/// Share of a payload that is random characters, the rest repeating a short motif
/// (LinkBench's MotifDataGenerator `uniqueness`: 0.63 for nodes, 0.225 for links).
const NODE_RANDOM: f64 = 0.63;
const LINK_RANDOM: f64 = 0.225;
/// Share of the id2s an operation draws that exist after the load (LinkBench's ID2Chooser:
/// the id2 is drawn from `ceil(links / share)` ids after id1): addlink, updatelink and
/// deletelink, getlink.
pub const EXISTING_ADD: f64 = 0.05;
pub const EXISTING_UPDATE: f64 = 0.9;
pub const EXISTING_GET: f64 = 0.5;
/// `data` of a link is a `VARCHAR(255)`.
const LINK_DATA_MAX: usize = 255;
/// Synthetic clocks: load links' `time` (ms), requests' (ms, later than every load time),
/// nodes' (s).
const LOAD_TIME_MS: i64 = 1_767_225_600_000;
const REQUEST_TIME_MS: i64 = LOAD_TIME_MS + 1_000_000_000_000;
const NODE_TIME_S: i64 = 1_767_225_600;
/// Keys the consistency check names at most.
const CHECK_KEYS: u32 = 5;

/// The out-degree distribution: `(largest degree of the bucket, cumulative share)`. A compact
/// approximation of LinkBench's `config/Distribution.dat` (`nlinks`, 19,951 points up to
/// 961,963 links, mean 4.10): its cumulative shares at these 20 degrees, the degree drawn
/// with density ∝ 1/d² within a bucket, nothing above 100,000. Mean 4.19 (docs/workloads.md
/// "LinkBench").
pub const DEGREES: &[(u32, f64)] = &[
    (0, 0.45332),
    (1, 0.77463),
    (2, 0.86958),
    (3, 0.91993),
    (4, 0.94451),
    (5, 0.95828),
    (7, 0.97320),
    (10, 0.98328),
    (15, 0.99027),
    (20, 0.99327),
    (30, 0.99557),
    (50, 0.99722),
    (100, 0.99831),
    (200, 0.99885),
    (500, 0.99927),
    (1_000, 0.99951),
    (3_000, 0.99979),
    (10_000, 0.99995),
    (30_000, 0.99999),
    (100_000, 1.0),
];

/// The request mix: percentages of [`OPS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix(pub [f64; 10]);

impl Mix {
    /// mdcallag's updated mix (his `FBWorkload.properties`), the default.
    pub const UPDATED: Mix = Mix([
        5.35038, 0.98401, 4.75589, 4.27898, 12.14725, 22.57039, 43.9869, 2.61198, 3.06256, 0.25166,
    ]);
    /// LinkBench's original 2011 mix (`mix = "2011"`).
    pub const Y2011: Mix = Mix([
        8.9886601, 2.9907664, 8.0122125, 4.8863567, 0.5261142, 50.7119145, 12.9326683, 2.5732789,
        7.366437, 1.0115914,
    ]);

    /// The operation a uniform draw `u` in [0, 1) picks.
    fn pick(&self, u: f64) -> usize {
        let total: f64 = self.0.iter().sum();
        let mut at = u * total;
        for (i, p) in self.0.iter().enumerate() {
            if at < *p {
                return i;
            }
            at -= p;
        }
        // Rounding at the top end: the last operation with a share.
        self.0.iter().rposition(|p| *p > 0.0).unwrap_or(0)
    }
}

/// 64 well-mixed bits of `x` (splitmix64's finaliser).
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The out-degree of node `id`: a pure function of the id, drawn from [`DEGREES`].
pub fn degree(id: u64) -> u32 {
    let h = mix64(id ^ 0x6c69_6e6b_6265_6e63);
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    let i = DEGREES
        .partition_point(|(_, c)| *c <= u)
        .min(DEGREES.len() - 1);
    let lo = if i == 0 { 0 } else { DEGREES[i - 1].0 + 1 };
    let hi = DEGREES[i].0;
    if lo == hi {
        return lo;
    }
    // Density ∝ 1/d² on [lo, hi + 1), by inversion: power-law tails put more nodes at a
    // bucket's low end (the real shares within buckets fall about that fast).
    let v = (mix64(h) >> 11) as f64 / (1u64 << 53) as f64;
    let (a, b) = (f64::from(lo.max(1)), f64::from(hi) + 1.0);
    let d = 1.0 / (1.0 / a - v * (1.0 / a - 1.0 / b));
    (d.floor() as u32).clamp(lo, hi)
}

/// Links of type index `t` (0 or 1) of a node with `deg` links: the first type gets the odd
/// one.
pub fn type_links(deg: u32, t: u64) -> u64 {
    (u64::from(deg) + LINK_TYPES - 1 - t) / LINK_TYPES
}

/// The link type of type index `t`.
fn link_type(t: u64) -> i64 {
    lsql::LINK_TYPE_BASE + t as i64
}

/// Counttable rows of a node with `deg` links: one per link type that has links.
fn count_rows(deg: u32) -> u64 {
    u64::from(deg).min(LINK_TYPES)
}

/// The suite's settings after `--quick` scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Node ids 1..=maxid1 (LinkBench's `maxid1` is one past the last id; here it is the last).
    pub maxid1: u64,
    pub loaders: u32,
    /// One request step per count.
    pub requesters: Vec<u32>,
    pub request: Duration,
    /// `linkbench.warm`'s length (0: no warm step).
    pub warmup: Duration,
    pub mix: Mix,
    /// Median `data` bytes of a node and of a link.
    pub node_bytes: u32,
    pub link_bytes: u32,
    /// Rows per load statement (LinkBench's 1024).
    pub batch: u32,
    /// MySQL: `PARTITION BY KEY(id1)` partitions of linktable (0: none).
    pub partitions: u32,
    /// Tests: each requester stops after this many requests instead of at a deadline.
    pub request_quota: Option<u64>,
}

/// What a step of the suite does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Load,
    Index,
    /// Requests with this many requesters; `warm`: the warm-up step.
    Request {
        requesters: u32,
        warm: bool,
    },
    Check,
}

/// The id range loader `l` of `loaders` writes: `[first, last]`, contiguous, in id order.
pub fn loader_range(maxid1: u64, loaders: u32, l: u32) -> (u64, u64) {
    let n = u64::from(loaders);
    let first = maxid1 * u64::from(l) / n + 1;
    let last = maxid1 * (u64::from(l) + 1) / n;
    (first, last)
}

/// Rows a range of node ids loads: (nodes, links, counts).
pub fn range_rows(first: u64, last: u64) -> (u64, u64, u64) {
    let (mut links, mut counts) = (0u64, 0u64);
    for id in first..=last {
        let d = degree(id);
        links += u64::from(d);
        counts += count_rows(d);
    }
    (last + 1 - first, links, counts)
}

impl Settings {
    /// `maxid1` nodes and `requesters` with the lab's defaults for everything else (1 loader,
    /// 600 s requests after a 60 s warm-up, the updated mix, 168/23-byte payloads, 1024 rows
    /// per load statement, no partitions).
    pub fn with_defaults(maxid1: u64, requesters: Vec<u32>) -> Settings {
        Settings {
            maxid1,
            loaders: 1,
            requesters,
            request: Duration::from_secs(600),
            warmup: Duration::from_secs(60),
            mix: Mix::UPDATED,
            node_bytes: 168,
            link_bytes: 23,
            batch: 1024,
            partitions: 0,
            request_quota: None,
        }
    }

    /// The steps in run order: label and kind.
    pub fn steps(&self) -> Vec<(String, Kind)> {
        let mut out = vec![
            ("linkbench.load".to_string(), Kind::Load),
            ("linkbench.index".to_string(), Kind::Index),
        ];
        if !self.warmup.is_zero() {
            let requesters = self.requesters.first().copied().unwrap_or(1);
            let warm = Kind::Request {
                requesters,
                warm: true,
            };
            out.push(("linkbench.warm".to_string(), warm));
        }
        for &n in &self.requesters {
            let kind = Kind::Request {
                requesters: n,
                warm: false,
            };
            out.push((format!("linkbench.request.P{n}"), kind));
        }
        out.push(("linkbench.check".to_string(), Kind::Check));
        out
    }

    /// Statements each loader runs: a nodes statement per `batch` nodes, links and counts
    /// packed `batch` rows per statement, the last of each partial. Reads every id's degree:
    /// for tests and checks, never for planning (see [`Settings::load_statement_bound`]).
    pub fn load_statements(&self) -> Vec<u64> {
        let b = u64::from(self.batch);
        (0..self.loaders)
            .map(|l| {
                let (first, last) = loader_range(self.maxid1, self.loaders, l);
                let (n, links, counts) = range_rows(first, last);
                n.div_ceil(b) + links.div_ceil(b) + counts.div_ceil(b)
            })
            .collect()
    }

    /// At least as many statements as any loader runs, in constant time: every node at the
    /// largest degree. The load role's quota: a loader ends when its range is written
    /// (`Executor::finished`), so the quota only has to be reached never before that; the
    /// exact count ([`Settings::load_statements`]) reads every id, minutes at a billion nodes,
    /// and a plan or `--dry-run` must not wait for it.
    pub fn load_statement_bound(&self) -> u64 {
        let b = u64::from(self.batch);
        let n = self.maxid1.div_ceil(u64::from(self.loaders.max(1)));
        let most = u64::from(DEGREES[DEGREES.len() - 1].0);
        n.div_ceil(b) + (n * most).div_ceil(b) + (n * LINK_TYPES).div_ceil(b)
    }

    fn roles(&self, kind: Kind, index: u32) -> Vec<Role> {
        match kind {
            Kind::Load => vec![Role {
                name: "loader",
                pacer: Pacer::Closed,
                // Each loader finishes once its own range is written (`Executor::finished`);
                // the quota is a bound no loader reaches first.
                quota: Some(self.load_statement_bound()),
                ops: vec!["nodes", "links", "counts"],
                executor: Arc::new(LoadFactory {
                    settings: self.clone(),
                }),
            }],
            Kind::Index => vec![Role {
                name: "indexer",
                pacer: Pacer::Closed,
                quota: Some(1),
                ops: vec!["index"],
                executor: Arc::new(IndexFactory),
            }],
            Kind::Request { .. } => vec![Role {
                name: "requester",
                pacer: Pacer::Closed,
                quota: self.request_quota,
                ops: OPS.to_vec(),
                executor: Arc::new(RequestFactory {
                    settings: self.clone(),
                    index,
                }),
            }],
            Kind::Check => vec![Role {
                name: "checker",
                pacer: Pacer::Closed,
                quota: Some(1),
                ops: vec!["check"],
                executor: Arc::new(CheckFactory),
            }],
        }
    }

    /// Step `label` as the runner runs it.
    pub fn step_plan(&self, index: u32, label: &str, kind: Kind) -> StepPlan {
        let (group, clients, warm, measure, unit) = match kind {
            Kind::Load => (LOAD_GROUP, self.loaders, false, None, "rows/s"),
            Kind::Index => (LOAD_GROUP, 1, false, None, "links/s"),
            Kind::Request { requesters, warm } => {
                let len = if warm { self.warmup } else { self.request };
                let measure = self.request_quota.is_none().then_some(len);
                (REQUEST_GROUP, requesters, warm, measure, "requests/s")
            }
            Kind::Check => (LOAD_GROUP, 1, true, None, "checks/s"),
        };
        StepPlan {
            suite: SUITE,
            label: label.to_string(),
            index,
            group: group.to_string(),
            warm,
            clients: Some(clients),
            roles: self.roles(kind, index),
            counted: Counted { role: 0, op: None },
            rate_unit: unit,
            statements_per_event: 1,
            event_shape: vec![1],
            scan_rows: None,
            warmup: Duration::ZERO,
            measure,
            expected: measure.unwrap_or(Duration::ZERO),
            stop_rule: None,
            postwrite_after: kind == Kind::Index,
        }
    }
}

/// The suite: `linktable`, `counttable`, `nodetable`, created empty (its first step is its
/// load).
#[derive(Debug, Clone)]
pub struct LinkBench {
    pub settings: Settings,
}

impl LinkBench {
    /// The steps whose labels `chosen` accepts (with whether the step is a warm one), as
    /// runnable steps in run order. The check runs whenever a request step does.
    pub fn plan(&self, chosen: impl Fn(&str, bool) -> bool) -> Vec<StepPlan> {
        let mut requests = false;
        let mut out = Vec::new();
        for (i, (label, kind)) in self.settings.steps().into_iter().enumerate() {
            let take = match kind {
                Kind::Check => requests,
                Kind::Request { warm, .. } => chosen(&label, warm),
                _ => chosen(&label, false),
            };
            requests |= take && matches!(kind, Kind::Request { warm: false, .. });
            if take {
                out.push(self.settings.step_plan(i as u32, &label, kind));
            }
        }
        out
    }
}

pub const TABLES: [&str; 3] = ["linktable", "counttable", "nodetable"];

impl Suite for LinkBench {
    fn id(&self) -> &'static str {
        SUITE
    }

    fn scale(&self, _clients: u32) -> Scale {
        Scale {
            tables: 3,
            rows: self.settings.maxid1,
        }
    }

    fn tables(&self, _clients: u32) -> Vec<String> {
        TABLES.iter().map(|t| t.to_string()).collect()
    }

    fn fill(
        &self,
        session: &mut dyn Session,
        dialect: Dialect,
        ddl: &TableDdl,
        _clients: u32,
    ) -> anyhow::Result<()> {
        for sql in lsql::create_tables(dialect, ddl, self.settings.partitions) {
            session
                .execute_sql(&sql)
                .with_context(|| format!("creating LinkBench's tables: {sql}"))?;
        }
        Ok(())
    }
}

/// Fills `out` with `len` payload bytes: the first `random` share random letters and digits,
/// the rest a repeated motif (so the value compresses about as well as its share says).
fn payload(rng: &mut SmallRng, out: &mut Vec<u8>, len: usize, random: f64) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const MOTIF: &[u8] = b"linkbench:";
    let r = (len as f64 * random).round() as usize;
    for i in 0..len {
        out.push(if i < r {
            ALPHABET[rng.random_range(0..64usize)]
        } else {
            MOTIF[i % MOTIF.len()]
        });
    }
}

/// A payload length with median `median`: uniform on [median/2, 3·median/2], at least 1.
fn payload_len(rng: &mut SmallRng, median: u32, max: usize) -> usize {
    let m = median.max(1) as usize;
    rng.random_range(m / 2..=m + m / 2).clamp(1, max)
}

/// `linkbench.index`: `id1_type`, one operation whose units are the links indexed.
struct IndexFactory;

impl ExecutorFactory for IndexFactory {
    /// The index is built once.
    fn repeatable(&self) -> bool {
        false
    }

    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        // The links present, counted before the step's clock starts.
        let v = session.query_strings(&lsql::count_rows("linktable"))?;
        let links = v.first().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        Ok(Box::new(IndexExec {
            statements: lsql::create_index(at.dialect, at.ddl),
            links,
            rows_touched: [0],
        }))
    }
}

struct IndexExec {
    statements: Vec<String>,
    links: u64,
    rows_touched: [u64; 1],
}

impl Executor for IndexExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        for sql in &self.statements {
            session.execute_sql(sql)?;
        }
        self.rows_touched[0] += self.links;
        Ok(Done {
            op: 0,
            units: self.links,
            rows: self.links,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

/// `linkbench.check`: counttable against the visible links (docs/workloads.md, LinkBench).
struct CheckFactory;

impl ExecutorFactory for CheckFactory {
    /// The check runs once, after the requests.
    fn repeatable(&self) -> bool {
        false
    }

    fn open(&self, _: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        Ok(Box::new(CheckExec {
            sql: lsql::count_mismatches(at.dialect, CHECK_KEYS),
            rows_touched: [0],
        }))
    }
}

struct CheckExec {
    sql: String,
    rows_touched: [u64; 1],
}

/// The check's error: the first differing keys as `(id, link_type): count C, visible links V`.
pub fn mismatch_error(rows: &[String]) -> DbError {
    let keys: Vec<String> = rows
        .iter()
        .map(|r| {
            let f: Vec<&str> = r.split(',').collect();
            match f.as_slice() {
                [id, lt, c, n] => {
                    format!("(id={id}, link_type={lt}): count {c}, visible links {n}")
                }
                _ => r.clone(),
            }
        })
        .collect();
    DbError::fatal(format!(
        "consistency check failed: counttable disagrees with linktable's visible links at {}{}",
        keys.join("; "),
        if rows.len() as u32 >= CHECK_KEYS {
            " (and maybe more)"
        } else {
            ""
        }
    ))
}

impl Executor for CheckExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let rows = session.query_strings(&self.sql)?;
        if !rows.is_empty() {
            return Err(mismatch_error(&rows));
        }
        Ok(Done {
            op: 0,
            units: 1,
            rows: 0,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

use load::LoadFactory;
pub use request::{IdDraw, RequestFactory};

#[path = "load.rs"]
mod load;

#[path = "request.rs"]
mod request;

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
