//! Remote targets in one place: a target whose `host` is another machine gets its server
//! there, run by dbdelta itself as an agent over SSH.
//!
//! - [`ssh`]: the system `ssh` as a control master, and commands over it.
//! - [`protocol`]: the typed requests and replies between this side and the agent.
//! - [`server`]: deploying the agent, the link to it, [`server::RemoteServer`] (a `Server`
//!   whose every call is a request) and the clients run there (`client = "remote"`).
//! - [`agent`]: `dbdelta agent`, the other end, which starts the server with the engine
//!   families and runs the runner's load and steps there.
//!
//! [`start`] is the factory the runner is handed: which server a target gets (a local engine
//! family's, or one on another host) is decided here, above the engines, which never know about
//! remote hosts. Must not: time database work (the runner's code does, on either side).

pub mod agent;
pub mod protocol;
pub mod server;
pub mod ssh;

use std::path::Path;

use anyhow::Result;

use crate::engine::{self, TargetSpec};
use crate::runner::{ClientsThere, TargetServer};

/// Start `target`'s server: on its host when it has one (`host = "ssh://…"`; its clients there
/// too with `client = "remote"`), otherwise the engine family's here, in the fresh directory
/// `data_dir`. ssh's, the agent's or the server's messages go to `log`.
pub fn start(target: &TargetSpec, data_dir: &Path, log: &Path) -> Result<TargetServer> {
    let Some(remote) = &target.remote else {
        return Ok(TargetServer {
            server: engine::start(target, data_dir, log)?,
            clients_there: None,
        });
    };
    let server = server::RemoteServer::start(target, log)?;
    let clients_there = remote
        .client_remote
        .then(|| Box::new(server.clients_there()) as Box<dyn ClientsThere>);
    Ok(TargetServer {
        server: Box::new(server),
        clients_there,
    })
}
