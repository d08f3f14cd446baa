//! One measured run of each client at the point select: sysbench and pgbench as child processes,
//! dbdelta's `point-query` step in this process, and the bare wire-client floor. Each returns a
//! `Sample`; it must not print, interleave rounds or start a server.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use dbdelta::engine::common::pgwire::PgConn;
use dbdelta::engine::common::wire::Wait;
use dbdelta::engine::{self, Param};
use dbdelta::progress::{Mode, Progress};
use dbdelta::results::Metric;
use dbdelta::runner::step;
use dbdelta::suites::sysbench::steps as sysbench;

use crate::bench::Bench;
use crate::parse::{parse_pgbench, parse_sysbench};
use crate::procs::{Affinity, run_child, self_cpu_us, self_usage};
use crate::target::{Client, Endpoint, SETTLE, Sample, Target, server_delta};

impl Bench<'_> {
    pub(crate) fn sysbench_cmd(&self, t: &Target, clients: u32, secs: u64) -> Command {
        let mut c = self.command(Path::new("sysbench"));
        c.arg("oltp_point_select")
            .args(t.endpoint.sysbench_args())
            .arg("--tables=1")
            .arg(format!("--table-size={}", self.args.rows))
            .arg("--rand-type=uniform")
            .arg("--skip-trx=on")
            .arg("--db-ps-mode=auto")
            .arg(format!("--threads={clients}"))
            .arg(format!("--time={secs}"))
            .arg("--report-interval=0")
            .arg("run");
        c
    }

    pub(crate) fn pgbench_cmd(&self, t: &Target, clients: u32, secs: u64) -> Result<Command> {
        let (
            Some(pgbench),
            Endpoint::Pg {
                dir,
                port,
                password,
                ..
            },
        ) = (&self.pgbench, &t.endpoint)
        else {
            bail!("pgbench needs PostgreSQL and Debian's pgbench");
        };
        let mut c = self.command(pgbench);
        c.env("PGPASSWORD", password)
            .arg("-h")
            .arg(dir)
            .arg("-p")
            .arg(port.to_string())
            .args(["-U", "postgres", "-n", "-M", "prepared"])
            .arg(format!("-c{clients}"))
            .arg(format!("-j{clients}"))
            .arg(format!("-T{secs}"))
            .arg("-f")
            .arg(&t.script)
            .arg("postgres");
        Ok(c)
    }

    pub(crate) fn external(&self, t: &Target, client: Client, clients: u32) -> Result<Sample> {
        let secs = self.args.secs;
        let cmd = match client {
            Client::Sysbench => self.sysbench_cmd(t, clients, secs),
            Client::Pgbench => self.pgbench_cmd(t, clients, secs)?,
            Client::Dbdelta | Client::Floor | Client::FloorRecv => {
                unreachable!("dbdelta runs in-process")
            }
        };
        let a = t.probe.snapshot();
        let me_a = self_cpu_us();
        let run = run_child(cmd, t.work, client.name())?;
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let me = self_cpu_us() - me_a;
        let parsed = match client {
            Client::Sysbench => parse_sysbench(&run.stdout),
            _ => parse_pgbench(&run.stdout),
        };
        let Some((queries, qps)) = parsed.filter(|(q, _)| *q > 0) else {
            bail!(
                "{}: cannot read the query count from its output:\n{}",
                client.name(),
                run.stdout
            );
        };
        let server = server_delta(&a, &b);
        let wall_us = (run.secs + SETTLE.as_secs_f64()) * 1e6;
        let host = b.host_busy_us - a.host_busy_us;
        Ok(Sample {
            qps,
            queries,
            client_us: run.usage.cpu_us() / queries as f64,
            client_sys_us: run.usage.sys_us / queries as f64,
            client_cs: run.usage.cs / queries as f64,
            client_ics: run.usage.ics / queries as f64,
            server_us: server / queries as f64,
            other_cores: ((host - server - run.usage.cpu_us() - me) / wall_us).max(0.0),
            ..Default::default()
        })
    }

    pub(crate) fn dbdelta_step(
        &self,
        t: &Target,
        clients: u32,
        warmup: Duration,
        measure: Duration,
    ) -> Result<step::StepRun> {
        let point_query = sysbench::step_plan(
            sysbench::find("point-query").context("point-query is in the catalog")?,
            self.scale(),
            warmup,
            measure,
        );
        let spec = step::StepSpec {
            step: &point_query,
            clients,
            seed: 0xc11e_c057 ^ u64::from(clients),
            // Pinned by inheritance from this thread (`Affinity::pin` below).
            client_cpus: None,
            ddl: &Default::default(),
            profile: None,
            counting: false,
        };
        let quiet = Progress {
            mode: Mode::Quiet,
            verbose: false,
            interval: None,
        };
        let bar = quiet.step("point-query", warmup + measure);
        let _pin = Affinity::pin(self.client_cpus.as_deref())?;
        let run = step::run(&spec, &t.server.driver(), &t.probe, &bar, &self.interrupt)?;
        if let Some(e) = &run.fatal {
            bail!("dbdelta point-query: {e}");
        }
        Ok(run)
    }

    pub(crate) fn dbdelta(&self, t: &Target, clients: u32) -> Result<Sample> {
        let a = t.probe.snapshot();
        let me_a = self_usage();
        let started = Instant::now();
        let run = self.dbdelta_step(
            t,
            clients,
            Duration::from_secs(1),
            Duration::from_secs(self.args.secs),
        )?;
        let secs = started.elapsed().as_secs_f64();
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let usage = self_usage().since(me_a);
        self.check_interrupt()?;
        let events = run.merged.events;
        // The process CPU covers connect, prepare and the warm-up too, so divide by every query
        // run (one statement per event), as for the external clients.
        let all = run.events_all;
        // Every measured point select returns its one row.
        let rows = run.rows_touched.first().copied().unwrap_or(0);
        if events == 0 || all < events || rows != events {
            bail!(
                "dbdelta point-query: {events} measured queries returned {rows} rows ({all} queries in all)"
            );
        }
        let window = run.costs.per_op(events);
        Ok(Sample {
            window_client_us: window.get(Metric::ClientCpu).unwrap_or(f64::NAN),
            window_server_us: window.get(Metric::ServerCpu).unwrap_or(f64::NAN),
            ..Sample::in_process(events as f64 / run.seconds, all, usage, (&a, &b), secs)
        })
    }

    /// The floor: N threads of dbdelta's wire client, each preparing the point select and
    /// executing it in a bare loop (ids from an xorshift, a clock read every 256 queries, no
    /// histogram, no runner). Accounted like dbdelta: `getrusage(RUSAGE_SELF)` around it all.
    pub(crate) fn floor(&self, t: &Target, clients: u32, wait: Wait) -> Result<Sample> {
        let Endpoint::Pg {
            dir,
            port,
            password,
            ..
        } = &t.endpoint
        else {
            bail!("the wire floor is measured on PostgreSQL only");
        };
        let rows = self.args.rows.max(1);
        let a = t.probe.snapshot();
        let me_a = self_usage();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(self.args.secs);
        let _pin = Affinity::pin(self.client_cpus.as_deref())?;
        let counts: Vec<Result<u64, engine::DbError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..clients)
                .map(|i| {
                    s.spawn(move || {
                        let mut c =
                            PgConn::connect(dir, *port, "postgres", "postgres", Some(password))?;
                        c.set_wait(wait);
                        c.prepare("floor", "SELECT c FROM sbtest1 WHERE id = $1")?;
                        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (u64::from(i) + 1);
                        let mut n = 0u64;
                        while !n.is_multiple_of(256) || Instant::now() < deadline {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let id = (x % rows) as i64 + 1;
                            if c.execute("floor", &[Param::Int(id)])? != 1 {
                                return Err(engine::DbError::fatal(
                                    "the point select lost its row",
                                ));
                            }
                            n += 1;
                        }
                        Ok(n)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("floor thread"))
                .collect()
        });
        drop(_pin);
        let secs = started.elapsed().as_secs_f64();
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let usage = self_usage().since(me_a);
        self.check_interrupt()?;
        let mut all = 0;
        for c in counts {
            all += c.context("wire floor")?;
        }
        Ok(Sample::in_process(
            all as f64 / secs,
            all,
            usage,
            (&a, &b),
            secs,
        ))
    }
}
