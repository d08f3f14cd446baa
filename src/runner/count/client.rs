//! The count client process: `dbdelta count-client`, spawned by the cell, one JSON line per
//! request and per answer; its side opens the suite on the server and runs each pass.
//!
//! Must not: count (the counter does, outside it) or store.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::plan::pass_step;
use super::{Done, Init, Pass};
use crate::counter;
use crate::engine::Server;
use crate::workload::SuitePlan;

/// The counting client: `dbdelta count-client` under callgrind, one JSON line per request and
/// per answer.
pub(super) struct CountClient {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: BufReader<ChildStdout>,
}

impl CountClient {
    /// Start it, under callgrind when `callgrind` (on the perf path it runs plainly).
    pub(super) fn spawn(out: &Path, log: &Path, callgrind: bool) -> Result<CountClient> {
        let exe = std::env::current_exe().context("finding dbdelta's own executable")?;
        let mut cmd = match callgrind {
            true => {
                let wrap = counter::wrap(out, "client", counter::Attribution::All);
                let mut cmd = Command::new(&wrap[0]);
                cmd.args(&wrap[1..]).arg(exe);
                cmd
            }
            false => Command::new(exe),
        };
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(log)?;
        let mut child = cmd
            .arg("count-client")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .context("starting the counting client")?;
        let stdin = child.stdin.take().context("the counting client's stdin")?;
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .context("the counting client's stdout")?,
        );
        Ok(CountClient {
            child,
            stdin,
            stdout,
        })
    }

    pub(super) fn ask<T: Serialize>(&mut self, request: &T) -> Result<Done> {
        let line = serde_json::to_string(request)?;
        writeln!(self.stdin, "{line}").context("writing to the counting client")?;
        self.stdin.flush()?;
        let mut answer = String::new();
        self.stdout.read_line(&mut answer)?;
        if answer.is_empty() {
            bail!("the counting client exited (its messages are in the target's log)");
        }
        Ok(serde_json::from_str(&answer)?)
    }

    pub(super) fn init(&mut self, init: &Init) -> Result<()> {
        match self.ask(init)?.error {
            Some(e) => bail!("the counting client: {e}"),
            None => Ok(()),
        }
    }

    pub(super) fn pass(&mut self, pass: &Pass) -> Result<Done> {
        self.ask(pass)
    }

    /// Close its stdin (it exits) and wait for it.
    pub(super) fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// `dbdelta count-client`: the counting pass's client, under callgrind. Reads [`Init`], opens
/// the target, then runs each [`Pass`] it is sent with the runner's `step::run` and answers
/// [`Done`]; exits when its stdin closes.
pub fn client_main() -> Result<()> {
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut out = std::io::stdout().lock();
    let Some(first) = next_line(&mut input)? else {
        return Ok(());
    };
    let init: Init = serde_json::from_str(&first).context("the counting client's first line")?;
    let (server, suite) = match open(&init) {
        Ok(o) => {
            // Counting on from here; what came before goes into a first dump, taken away.
            crate::counter::count_self();
            crate::counter::dump_self();
            answer(&mut out, &Done::default())?;
            o
        }
        Err(e) => {
            let error = Some(format!("{e:#}"));
            return answer(
                &mut out,
                &Done {
                    error,
                    ..Default::default()
                },
            );
        }
    };
    let probe = crate::sampler::Probe::own_only();
    while let Some(line) = next_line(&mut input)? {
        let pass: Pass = serde_json::from_str(&line).context("a counting pass request")?;
        let done =
            run_pass(&init, &suite, server.as_ref(), &probe, &pass).unwrap_or_else(|e| Done {
                error: Some(format!("{e:#}")),
                ..Default::default()
            });
        // The pass's counts are in their file before the answer leaves.
        crate::counter::dump_self();
        answer(&mut out, &done)?;
    }
    Ok(())
}

/// The next request line; `None` once the other side closed the pipe. Under valgrind, `vgdb`
/// interrupting a blocked read can make it return nothing while the pipe is still open: only a
/// hung-up pipe ends the input.
fn next_line(input: &mut impl BufRead) -> Result<Option<String>> {
    let mut line = String::new();
    loop {
        if input.read_line(&mut line)? > 0 && line.ends_with('\n') {
            return Ok(Some(line));
        }
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) reads and writes only `fd`, one valid pollfd for the call's length.
        let ready = unsafe { libc::poll(&mut fd, 1, 1000) };
        let hung_up = ready > 0
            && fd.revents & (libc::POLLHUP | libc::POLLERR) != 0
            && fd.revents & libc::POLLIN == 0;
        if hung_up {
            return Ok(None);
        }
    }
}

pub(super) fn answer(out: &mut impl Write, done: &Done) -> Result<()> {
    writeln!(out, "{}", serde_json::to_string(done)?)?;
    out.flush()?;
    Ok(())
}

/// The target's server (attached by URL, or SQLite's file opened) and the suite's plan.
fn open(init: &Init) -> Result<(Box<dyn Server>, SuitePlan)> {
    let here = std::env::current_dir()?;
    let lab = crate::plan::lab::parse(&init.lab, "the lab sent to the counting client", &here)?;
    let opts = crate::plan::RunOptions {
        quick: init.quick,
        ..Default::default()
    };
    let plan = crate::plan::plan(lab, &opts)?;
    let suite = (plan.suites.into_iter())
        .find(|s| s.suite.id() == init.suite)
        .with_context(|| format!("the lab has no suite {}", init.suite))?;
    let mut spec = init.spec.clone();
    spec.wrap.clear();
    if let Some(url) = &init.url {
        let url = crate::engine::connect::ConnectUrl::parse(url).map_err(anyhow::Error::msg)?;
        spec.connect = Some(url);
    }
    let log = init.data_dir.with_extension("count-client.log");
    let server = crate::engine::start(&spec, &init.data_dir, &log)?;
    Ok((server, suite))
}

fn run_pass(
    init: &Init,
    suite: &SuitePlan,
    server: &dyn Server,
    probe: &crate::sampler::Probe,
    pass: &Pass,
) -> Result<Done> {
    let step = (suite.steps.iter())
        .find(|s| s.label == pass.step)
        .with_context(|| format!("the suite has no step {}", pass.step))?;
    let clients = step.clients_at(init.clients);
    let counted = pass_step(step, pass.part.as_ref(), pass.events, clients)?;
    let spec = crate::runner::step::StepSpec {
        step: &counted,
        clients,
        seed: crate::workload::step_seed(step.index, pass.seed_repeat),
        client_cpus: None,
        ddl: &init.spec.tables,
        profile: None,
        counting: true,
    };
    let run = match &init.perf_event {
        Some(event) => crate::runner::step::run_counting(&spec, &server.driver(), probe, event)?,
        None => crate::runner::step::run_unattended(&spec, &server.driver(), probe)?,
    };
    Ok(Done {
        units: run.merged.units,
        events: run.merged.events,
        errors: run.merged.errors.total(),
        error: run.fatal,
        perf: run.perf_counts,
    })
}
