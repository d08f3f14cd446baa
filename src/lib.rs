//! dbdelta: find the performance delta between database versions, builds and configurations.
//!
//! The binary (`src/main.rs`) only parses arguments and maps errors to exit codes; everything
//! else lives here so tests can call it in-process. The pipeline is
//! lab file → [`plan`] → [`runner`] (engines × workloads, timed by the runner only) →
//! [`store`] (after every step) → [`report`] (pure renderers).
//! See `ARCHITECTURE.md` for the code map and the invariants.

pub mod calibrate;
pub mod changepoint;
pub mod cli;
pub mod console;
pub mod counter;
pub mod cpus;
pub mod engine;
pub mod error;
pub mod explain;
pub mod history;
pub mod host;
pub mod output;
pub mod plan;
pub mod profiler;
pub mod progress;
pub mod provision;
pub mod range;
pub mod remote;
pub mod report;
pub mod results;
pub mod runner;
pub mod sampler;
pub mod serve;
pub mod signals;
pub mod stats;
pub mod store;
pub mod suggest;
pub mod suites;
pub mod sys;
pub mod workload;
