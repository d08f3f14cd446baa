//! The counted processes of a counting cell (the server under callgrind, or nothing counted
//! apart when the engine is embedded) and taking their counts between passes: switching the
//! server's instrumentation, dumping, reading and splitting each pass's instructions.
//!
//! Must not: plan passes or decide what a pass's counts mean (`passes` does).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::EXIT_WAIT;
use crate::counter;

/// The counted processes of a cell and where their counts go.
pub(super) struct Counted {
    /// The server's main process when it runs under callgrind.
    pub(super) server: Option<u32>,
    pub(super) out: PathBuf,
    pub(super) embedded: bool,
    /// How the server's counts split into the pass's statements and background work.
    pub(super) by: counter::Attribution,
    /// Run one pair of passes before the kept ones ([`crate::engine::EngineKind::drops_first_pair`]).
    pub(super) drop_first: bool,
    /// Callgrind, or perf (the client answers each pass's counts).
    pub(super) counter: counter::Counter,
    /// Whether a pass's per-function costs are read (only the pairs' passes need them).
    pub(super) functions: std::cell::Cell<bool>,
}

impl Counted {
    /// Switch the server's counting on or off (the client switches its own on, and is idle
    /// while the server's is off).
    pub(super) fn switch(&self, on: bool) -> Result<()> {
        let what = if on {
            "instrumentation on"
        } else {
            "instrumentation off"
        };
        if let Some(pid) = &self.server {
            counter::command(*pid, &self.out, what)?;
        }
        Ok(())
    }

    /// Dump the server's process that stays, then take (server, client) instructions since
    /// the last take: the server's forked processes of the pass must have exited by then, and
    /// the client dumps its own before it answers.
    pub(super) fn take(&self) -> Result<(counter::Split, u64)> {
        self.take_functions(None, None)
    }

    /// [`Counted::take`], the server's and the client's per-function costs added to
    /// `server_fns` and `client_fns` when given.
    pub(super) fn take_functions(
        &self,
        server_fns: Option<&mut counter::SplitFunctions>,
        client_fns: Option<&mut counter::SplitFunctions>,
    ) -> Result<(counter::Split, u64)> {
        if let Some(pid) = &self.server {
            counter::command(*pid, &self.out, "dump")?;
        }
        let (server, _) =
            counter::take_split_functions(&self.out, "server", self.by, self.server, server_fns)?;
        let all = counter::Attribution::All;
        let (client, _) =
            counter::take_split_functions(&self.out, "client", all, None, client_fns)?;
        Ok((server, client.foreground))
    }

    /// Wait until the server's processes forked since `before` (a pass's backends) exited and
    /// wrote their counts: none of them is a child any more, and no dump file but those
    /// `unfinished` before the pass (the long-lived processes') is empty or half written. The
    /// files are the sure sign: `/proc`'s list of children can miss a child while it changes.
    pub(super) fn settle(&self, before: &[u32], unfinished: &[String]) -> Result<()> {
        let Some(pid) = self.server else {
            return Ok(());
        };
        let deadline = Instant::now() + EXIT_WAIT;
        loop {
            let running = counter::children(pid).iter().any(|c| !before.contains(c));
            let writing = !running
                && (counter::unfinished(&self.out, "server")?.iter())
                    .any(|f| !unfinished.contains(f));
            if !running && !writing {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "the server's processes of the pass did not exit and write their counts within {} s",
                    EXIT_WAIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The server's dump files that are not whole (see [`counter::unfinished`]).
    pub(super) fn unfinished(&self) -> Result<Vec<String>> {
        match self.server {
            Some(_) => counter::unfinished(&self.out, "server"),
            None => Ok(Vec::new()),
        }
    }

    pub(super) fn children(&self) -> Vec<u32> {
        self.server.map(counter::children).unwrap_or_default()
    }
}
