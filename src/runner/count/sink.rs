//! Where counted values go: what one counted part stores, the sink that takes it (the store,
//! or the thread owning it), and the pass sizes shared by one run's counting cells (each
//! build's the same for all its targets, and the widening of a step to more pairs).
//!
//! Must not: run passes or start processes.

use std::collections::HashMap;

use anyhow::Result;

use crate::engine::TargetSpec;
use crate::results::{InstructionPairs, Metric, OpInstructions, StepFunctions};
use crate::store::{CellKey, Store};

/// What one counted part of a step stores.
#[derive(Debug, Clone)]
pub enum Count {
    /// The step's own count: its metric values and pairs of passes.
    Step {
        values: Vec<(Metric, Option<f64>)>,
        pairs: InstructionPairs,
        functions: Option<StepFunctions>,
    },
    /// An operation type counted on its own, for the step's (role, type) operation row.
    Op {
        role: &'static str,
        op: &'static str,
        counts: OpInstructions,
    },
    /// The counting server's version, for a target no timed cell recorded (counted only).
    Server { version: String },
}

/// Where a counted step's values go: the store (stored on the target's first repeat), or, when
/// cells count in parallel, the thread that owns it. Returns whether a timed row held them.
pub trait CountSink {
    fn counted(&mut self, key: &CellKey, run_id: &str, step: &str, count: &Count) -> Result<bool>;
}

impl CountSink for Store {
    fn counted(&mut self, key: &CellKey, run_id: &str, step: &str, count: &Count) -> Result<bool> {
        match count {
            Count::Step {
                values,
                pairs,
                functions,
            } => {
                let stored = self.set_counted(key, run_id, step, values, Some(pairs))?;
                if let (true, Some(f)) = (stored, functions) {
                    self.set_functions(key, run_id, step, f)?;
                }
                Ok(stored)
            }
            Count::Op { role, op, counts } => {
                self.set_counted_op(key, run_id, step, (role, op), counts)
            }
            Count::Server { version } => {
                self.set_target_version_if_unknown(run_id, &key.target, version)?;
                Ok(true)
            }
        }
    }
}

/// The events of each part's short pass, shared by the counting cells of one run: the first
/// cell to size a part sets its n; every other target of a build that already ran the part
/// runs that build's n, and a target of a new build runs the first n when its own is within a
/// factor of [`SHARED_WITHIN`] of it, so that their k-th pairs of passes touch the same rows
/// and the report can pair them. Each cell sizing alone on a 1-2-5 grid still put near costs
/// on either side of a grid line: PostgreSQL 16 vs 17 ran 5 of 32 steps, MySQL 5.6 vs 8.0 11 of
/// 32, with different n (e.g. 500 and 200 events), and those could not be paired. Targets of
/// one build always pair, whatever their settings cost: at 16 clients, two targets of one
/// SQLite build were sized 16 and 500 events, further apart than the factor, when one's
/// sizing took the noise of its connections' cost for the cost of its events.
#[derive(Debug, Default)]
pub struct Sizes(std::sync::Mutex<HashMap<String, PartSizes>>);

/// One part's shared sizes: the first n, each build's, whether some cell widened it, and what
/// each server start's cells settled (wide or not, by start number).
#[derive(Debug)]
struct PartSizes {
    first: u64,
    builds: HashMap<String, u64>,
    wide: bool,
    settled: HashMap<u32, bool>,
}

/// How far a target's own n may be from the shared one and still run it.
const SHARED_WITHIN: f64 = 4.0;

impl Sizes {
    /// The n to run for `key`, given this cell's own and its `build` ([`build_of`]).
    pub(super) fn agree(&self, key: String, build: &str, own: u64) -> u64 {
        let mut sizes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let part = sizes.entry(key).or_insert_with(|| PartSizes {
            first: own,
            builds: HashMap::new(),
            wide: false,
            settled: HashMap::new(),
        });
        if let Some(&n) = part.builds.get(build) {
            return n;
        }
        let apart = (part.first as f64 / own.max(1) as f64).ln().abs();
        let n = if apart <= SHARED_WITHIN.ln() {
            part.first
        } else {
            own
        };
        part.builds.insert(build.to_string(), n);
        n
    }

    /// Whether start `start`'s cells count `key` widened, as far as it is settled when a cell
    /// begins the part: `Some` when a cell of that start number settled it, or when a cell of
    /// another start widened it (then settled wide for this start now: a start with one pair
    /// of its own cannot see a spread, and PostgreSQL 16 vs 17's `update-index` counted seeds
    /// 1, 3, 5, 7 on the first start and only 2 on the second before); `None`: the cell settles
    /// it from its own pairs ([`Sizes::settle`]).
    pub(super) fn begin(&self, key: &str, start: u32) -> Option<bool> {
        let mut sizes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let part = sizes.get_mut(key)?;
        if let Some(&wide) = part.settled.get(&start) {
            return Some(wide);
        }
        part.wide.then(|| {
            part.settled.insert(start, true);
            true
        })
    }

    /// Settle whether start `start`'s cells count `key` widened, from a cell whose own pairs
    /// say `disagree`: what a cell of that start settled first stands, so that every target's
    /// cell of one start counts the same seeds of every step. Writes change the tables: a
    /// target that counted more pairs of a step than another on the same start left its
    /// tables further along, and their later steps' pairs no longer touched the same state
    /// (PostgreSQL 16 vs 17: 17's first start counted four pairs of `update-zipf` against 16's
    /// two, and `write-only`'s pairs there then read 0.91–0.92 against 1.03 on the second start
    /// and 0.98 on a run with one start).
    pub(super) fn settle(&self, key: &str, start: u32, disagree: bool) -> bool {
        let mut sizes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(part) = sizes.get_mut(key) else {
            return disagree;
        };
        let wide = *part.settled.entry(start).or_insert(disagree);
        part.wide |= wide;
        wide
    }
}

/// What makes targets one build for [`Sizes`]: the engine, its binaries (`bin`: a fetched or
/// built version's directory; none: Debian's install), SQLite's library, the version fetched
/// and the tables' storage engine (MyRocks or InnoDB in one binary), not the settings.
pub(super) fn build_of(spec: &TargetSpec) -> String {
    format!(
        "{} {:?} {:?} {:?} {:?}",
        spec.engine.name(),
        spec.bin,
        spec.library,
        spec.version,
        spec.tables.engine
    )
}
