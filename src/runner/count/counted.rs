//! The counted processes of a counting cell (the server under callgrind, or nothing counted
//! apart when the engine is embedded) and taking their counts between passes: switching the
//! server's instrumentation, dumping, reading and splitting each pass's instructions. A count
//! that was not written is an error, never a number: a counted pass whose counted side wrote
//! no dump, a dump that is not whole (empty or cut short; [`counter::take_split_functions`]),
//! a forked process that exited without writing its dump whole; each names a full file
//! system under the dumps when statvfs finds one (callgrind says nothing when a write fails).
//!
//! Must not: plan passes or decide what a pass's counts mean (`passes` does).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};

use super::{EXIT_WAIT, FULL_BELOW};
use crate::counter;
use crate::plan::preflight::{free_bytes, human};

/// Where a take adds the server's and the client's per-function costs, when it does.
pub(super) type FunctionsOf<'a> = (
    Option<&'a mut counter::SplitFunctions>,
    Option<&'a mut counter::SplitFunctions>,
);

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
    /// The build counted ([`super::sink::build_of`]): its targets share their pass sizes.
    pub(super) build: String,
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
        self.take_dumps((server_fns, client_fns), false)
    }

    /// [`Counted::take_functions`]; with `pass` (after a counted pass), each side counted under
    /// callgrind (the server when wrapped, the client unless perf counts) must have written a
    /// dump: the client dumps its own before it answers, and the server was asked to.
    pub(super) fn take_dumps(
        &self,
        (server_fns, client_fns): FunctionsOf<'_>,
        pass: bool,
    ) -> Result<(counter::Split, u64)> {
        if let Some(pid) = &self.server {
            counter::command(*pid, &self.out, "dump")?;
        }
        let take = |tag, by, main, fns| {
            counter::take_split_functions(&self.out, tag, by, main, fns).map_err(|e| self.cause(e))
        };
        let (server, server_files) = take("server", self.by, self.server, server_fns)?;
        let all = counter::Attribution::All;
        let (client, client_files) = take("client", all, None, client_fns)?;
        let callgrind = self.counter == counter::Counter::Callgrind;
        for (tag, files, counted) in [
            ("server", server_files, self.server.is_some()),
            ("client", client_files, callgrind),
        ] {
            if pass && counted && files == 0 {
                let e = anyhow!(
                    "the {tag} wrote no callgrind dump in {}",
                    self.out.display()
                );
                return Err(self.cause(e));
            }
        }
        Ok((server, client.foreground))
    }

    /// `e`, led by its likely cause when the file system of the dumps is full: callgrind
    /// writes nothing about a dump it could not write (its file stays empty or cut short, and
    /// the count would read 0), so statvfs of the dump directory says it.
    pub(super) fn cause(&self, e: anyhow::Error) -> anyhow::Error {
        match free_bytes(&self.out) {
            Ok((_, free)) if free < FULL_BELOW => e.context(format!(
                "no space left on device in {} ({} free)",
                self.out.display(),
                human(free)
            )),
            _ => e,
        }
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
            let writing: Vec<String> = match running {
                true => Vec::new(),
                false => (counter::unfinished(&self.out, "server")?.into_iter())
                    .filter(|f| !unfinished.contains(f))
                    .collect(),
            };
            if !running && writing.is_empty() {
                return Ok(());
            }
            // Its process gone, a dump that is not whole never will be.
            let exited = |f: &&String| counter::dump_pid(f, "server").is_some_and(counter::exited);
            if let Some(f) = writing.iter().find(exited) {
                let e = anyhow!(
                    "callgrind's dump {} is not whole, and its process has exited",
                    self.out.join(f).display()
                );
                return Err(self.cause(e));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's counted processes: `server` under callgrind, dumps in `out`.
    fn counted(server: Option<u32>, out: &std::path::Path) -> Counted {
        Counted {
            server,
            out: out.to_path_buf(),
            embedded: server.is_none(),
            by: counter::Attribution::All,
            drop_first: false,
            counter: counter::Counter::Callgrind,
            functions: std::cell::Cell::new(false),
            build: String::new(),
        }
    }

    #[test]
    fn a_forked_process_gone_without_its_whole_dump_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited (and been reaped): its exit dump stays empty for good.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        std::fs::write(dir.path().join(format!("server.{pid}")), "").unwrap();
        let started = Instant::now();
        let e = counted(Some(std::process::id()), dir.path())
            .settle(&[], &[])
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains(&format!("server.{pid} is not whole")), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "waited for it: {e}"
        );
    }

    #[test]
    fn a_counted_pass_without_its_clients_dump_fails() {
        let dir = tempfile::tempdir().unwrap();
        let c = counted(None, dir.path());
        assert_eq!(
            c.take_dumps((None, None), false).unwrap(),
            (Default::default(), 0)
        );
        let e = format!("{:#}", c.take_dumps((None, None), true).unwrap_err());
        assert!(e.contains("the client wrote no callgrind dump"), "{e}");
    }
}
