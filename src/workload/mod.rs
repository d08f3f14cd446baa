//! Workloads as the runner sees them: what every suite hands it, whatever the suite.
//!
//! Owns the runtime face of a suite ([`Suite`]: tables, load; [`SuitePlan`]: a suite with its
//! planned steps), the shape of a step as the runner executes it ([`StepPlan`]: roles with
//! pacers, operation types and executors), why a step is in a catalog ([`StepKind`]), the
//! scale, step seeds and the Zipf sampler (what every suite's SQL shares, placeholders and a
//! target's table options, is `engine::dialect`'s). Each suite's catalog, executors and SQL live
//! in its folder under `crate::suites`. Must not: know a particular suite, time anything,
//! count QPS, or sleep; the runner calls [`Executor::run`] and does all of that around it.

pub mod role;
pub mod suite;

pub use role::{Counted, Done, Executor, ExecutorFactory, Opening, Pacer, Role, StepPlan};
pub use suite::{Suite, SuitePlan};

use crate::engine::Param;

/// Why a step is in the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Warms caches; runs with its duration rule, is stored with `warm = 1`, never reported.
    Warm,
    /// A `.pre` read step: runs only with `pre = true`, before the writes.
    Pre,
    /// One of the 32 reported steps.
    Main,
}

/// The scale a suite runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub tables: u32,
    pub rows: u64,
}

/// Base seed of a step's clients. Its low 32 bits are zero: the step runner gives client `i`
/// the seed `base + i`, and sysbench's `EventExecutor::new` reads the client index back from those bits
/// (the scan's table is `(client % tables) + 1`).
pub fn step_seed(step_index: u32, repeat: u32) -> u64 {
    (0x0db0_de17u64 ^ (u64::from(step_index) << 16) ^ u64::from(repeat)) << 32
}

/// Zipfian integers in 1..=n with P(k) ∝ 1/k^e: `rand_distr`'s rejection-inversion sampler
/// (Hörmann and Derflinger 1996), the method sysbench uses for `--rand-type=zipfian`.
#[derive(Debug, Clone, Copy)]
pub struct Zipf(rand_distr::Zipf<f64>);

impl Zipf {
    pub fn new(n: u64, e: f64) -> Zipf {
        Zipf(rand_distr::Zipf::new(n.max(1) as f64, e).expect("n >= 1 and e >= 0"))
    }

    /// One draw.
    pub fn sample(&self, rng: &mut impl rand::Rng) -> u64 {
        use rand_distr::Distribution;
        self.0.sample(rng) as u64
    }
}

/// Reuse a parameter vector's allocation for parameters borrowing something else. The
/// in-place `collect` keeps the buffer because the element layout is identical.
pub(crate) fn recycle<'b>(mut v: Vec<Param<'_>>) -> Vec<Param<'b>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("cleared")).collect()
}
