//! The counting glue of the perf path: `perf stat` attached to a counting pass's threads (each
//! client thread's and the server task serving it) between the connect barrier and `go`, and
//! switched off when every thread stopped. Must not: count anything itself or run outside a
//! counting pass.

use std::sync::atomic::{AtomicU32, Ordering};

use super::PerfCounts;
use super::phases::{Live, Shared};

/// `perf stat` over a pass's threads: the client threads and the server tasks serving them,
/// as they noted them in [`Live`].
pub(super) struct PerfPass {
    stat: crate::counter::PerfStat,
    server: Vec<u32>,
    client: Vec<u32>,
}

impl PerfPass {
    /// Attach and switch counting on (perf's ack: on before any thread passes `go`). On
    /// failure the threads are told to stop at once, and the step fails with the reason.
    pub(super) fn start(event: &str, shared: &Shared) -> anyhow::Result<PerfPass> {
        let ids = |f: fn(&Live) -> &AtomicU32| -> Vec<u32> {
            (shared.live.iter())
                .map(|l| f(l).load(Ordering::Relaxed))
                .filter(|&id| id != 0)
                .collect()
        };
        let (server, client) = (ids(|l| &l.task), ids(|l| &l.tid));
        let all: Vec<u32> = server.iter().chain(&client).copied().collect();
        let started = crate::counter::PerfStat::start(event, &all).and_then(|mut stat| {
            stat.enable()?;
            Ok(stat)
        });
        match started {
            Ok(stat) => Ok(PerfPass {
                stat,
                server,
                client,
            }),
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                Err(e.context("counting the pass with perf stat"))
            }
        }
    }

    pub(super) fn off(mut self) -> anyhow::Result<PerfPass> {
        self.stat.disable()?;
        Ok(self)
    }

    /// Stop perf and sum its counts: the server tasks' and the client threads'.
    pub(super) fn counts(self) -> anyhow::Result<PerfCounts> {
        let per_thread = self.stat.stop()?;
        let sum = |ids: &[u32]| -> u64 {
            (per_thread.iter())
                .filter(|(tid, _)| ids.contains(tid))
                .map(|(_, n)| n)
                .sum()
        };
        Ok(PerfCounts {
            server: sum(&self.server),
            client: sum(&self.client),
            tasks: self.server.len() as u32,
        })
    }
}
