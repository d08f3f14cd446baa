//! What the sampler can see of a server: which processes hold its cost ([`Observed`]), and,
//! for a server on another host, the handle through which something there reads them for us
//! ([`RemoteProbe`], asked for a [`ProbeWhat`], answering [`Probed`]).
//!
//! The sampler owns these types: an engine hands the sampler an `Observed`; the sampler does
//! not import engines, nor the remote side (which implements [`RemoteProbe`] over its link).
//! Must not: read anything itself (that is [`super::Probe`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{CpuUse, Memory, Snapshot};

/// Which processes hold the engine's cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The engine runs inside dbdelta (SQLite): measure our own process.
    SelfProcess,
    /// A server: this PID and every process descending from it.
    Tree(u32),
    /// A running server (`connect`) whose processes are not to be found on this host: why.
    /// Its CPU, context switches, process IO and memory are not measured.
    Unobserved(String),
    /// A server on another host: the agent there samples its processes.
    Remote(Elsewhere),
}

/// What the sampler asks of a server's host when the server is not on this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeWhat {
    /// [`super::Probe::snapshot`].
    Snapshot,
    /// [`super::Probe::memory_with`].
    Memory { pss: bool },
    /// [`super::Probe::cpus`].
    Cpus,
}

/// The answer to a [`ProbeWhat`], one variant each.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probed {
    Snapshot(Snapshot),
    Memory(Option<Memory>),
    Cpus(CpuUse),
}

/// Reads a server's processes on the host it runs on, for a sampler on another one.
pub trait RemoteProbe: Send + Sync {
    /// Ask for `what`; the answer is the [`Probed`] variant of the same name.
    fn probe(&self, what: ProbeWhat) -> anyhow::Result<Probed>;
    /// Where the server runs, for messages.
    fn describe(&self) -> String;
}

/// A shared [`RemoteProbe`], compared by identity (two handles on the same link are equal).
#[derive(Clone)]
pub struct Elsewhere(pub Arc<dyn RemoteProbe>);

impl Elsewhere {
    pub fn snapshot(&self) -> Option<Snapshot> {
        match self.0.probe(ProbeWhat::Snapshot).ok()? {
            Probed::Snapshot(s) => Some(s),
            _ => None,
        }
    }

    pub fn memory(&self, pss: bool) -> Option<Memory> {
        match self.0.probe(ProbeWhat::Memory { pss }).ok()? {
            Probed::Memory(m) => m,
            _ => None,
        }
    }

    pub fn cpus(&self) -> Option<CpuUse> {
        match self.0.probe(ProbeWhat::Cpus).ok()? {
            Probed::Cpus(c) => Some(c),
            _ => None,
        }
    }
}

impl PartialEq for Elsewhere {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Elsewhere {}

impl fmt::Debug for Elsewhere {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteProbe({})", self.0.describe())
    }
}
