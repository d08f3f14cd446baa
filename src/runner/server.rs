//! A cell's server as the runner sees it: what [`StartServer`] hands back for a target — the
//! [`Server`], and, when the target's clients run on the server's own host
//! (`client = "remote"`), [`ClientsThere`], which runs the load and the steps there.
//!
//! The runner is handed the `StartServer` by its caller (`crate::remote::start`, which picks a
//! local engine family or a server on another host), so it knows no remote host itself.
//! Must not: start anything (the factory does) or time database work (`step` does, here or, for
//! `ClientsThere`, on the other host).

use std::path::Path;

use anyhow::Result;

use super::step::StepRun;
use crate::engine::{Server, TableDdl, TargetSpec};

/// Starts `target`'s server in the fresh directory `data_dir`, its messages to `log`.
pub type StartServer = fn(target: &TargetSpec, data_dir: &Path, log: &Path) -> Result<TargetServer>;

/// A started server, and where its clients run when that is not here.
pub struct TargetServer {
    pub server: Box<dyn Server>,
    /// `client = "remote"`: the load and the steps run with their clients on the server's
    /// host; `None`: they run here.
    pub clients_there: Option<Box<dyn ClientsThere>>,
}

/// The load and the steps of a cell, run with their clients on the server's host by the
/// runner's own code there.
pub trait ClientsThere {
    /// Plan the suites there from `lab` (the text `lab::for_agent` made for the target).
    fn plan(&self, lab: String, quick: bool) -> Result<()>;
    /// Create and fill `suite`'s tables; (load seconds, index seconds).
    fn load(&self, suite: &str, clients: u32, ddl: &TableDdl) -> Result<(f64, f64)>;
    /// Run step `step` of `suite` with its clients.
    fn step(
        &self,
        suite: &str,
        step: &str,
        clients: u32,
        repeat: u32,
        ddl: &TableDdl,
    ) -> Result<StepRun>;
}
