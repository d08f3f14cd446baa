//! Before the query rounds: the load comparison (`sysbench prepare` against dbdelta's load,
//! interleaved, with its table and goal) and the cache prewarm. It must not run the query rounds.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use dbdelta::engine::{Dialect, Session};
use dbdelta::progress::thousands;
use dbdelta::runner::timed_load;

use crate::bench::{Bench, met};
use crate::procs::{Affinity, run_child, self_cpu_us};
use crate::stats::{median, spread};
use crate::target::{Target, server_delta};

/// What the load rounds measured, per round: rows/s and client CPU seconds of each side, and
/// dbdelta's rows/s without the index build.
#[derive(Default)]
struct Loads {
    sb: Vec<f64>,
    db: Vec<f64>,
    sb_cpu: Vec<f64>,
    db_cpu: Vec<f64>,
    db_split: Vec<f64>,
}

impl Bench<'_> {
    /// Rows/s of `sysbench prepare` and of dbdelta's load, interleaved; leaves dbdelta's table.
    pub(crate) fn load(&mut self, t: &Target) -> Result<()> {
        let rows = self.args.rows;
        let rounds = self.args.load_rounds.max(1);
        let driver = t.server.driver();
        let mut session = driver.connect().context("connecting for the load")?;
        let mut loads = Loads::default();
        self.say(&format!(
            "load: 1 table × {} rows, {rounds} rounds interleaved (A = sysbench prepare, B = dbdelta load)",
            thousands(rows as f64)
        ));
        self.say("  rows/s = rows / (table load + secondary index build) wall seconds, for both (sysbench prepare builds k_1 too)");
        for round in 1..=rounds {
            self.check_interrupt()?;
            self.sysbench_prepare(t, round, &mut loads)?;
            session
                .execute_sql("DROP TABLE sbtest1")
                .context("dropping sysbench's table")?;

            self.dbdelta_load(t, round, session.as_mut(), driver.dialect(), &mut loads)?;
            if round < rounds {
                session
                    .execute_sql("DROP TABLE sbtest1")
                    .context("dropping dbdelta's table")?;
            }
        }
        self.load_table(t, &loads);
        Ok(())
    }

    /// One round of `sysbench prepare` (it leaves its table).
    fn sysbench_prepare(&mut self, t: &Target, round: u32, loads: &mut Loads) -> Result<()> {
        let rows = self.args.rows;
        let mut c = self.command(Path::new("sysbench"));
        c.arg("oltp_point_select")
            .args(t.endpoint.sysbench_args())
            .arg("--tables=1")
            .arg(format!("--table-size={rows}"))
            .arg("prepare");
        let a = t.probe.snapshot();
        let run = run_child(c, t.work, "sysbench-prepare")?;
        let b = t.probe.snapshot();
        let rps = rows as f64 / run.secs;
        self.say(&format!(
            "  round {round} sysbench prepare: {:.2} s, {} rows/s, client CPU {:.2} s, server CPU {:.2} s",
            run.secs,
            thousands(rps),
            run.usage.cpu_us() / 1e6,
            server_delta(&a, &b) / 1e6
        ));
        loads.sb.push(rps);
        loads.sb_cpu.push(run.usage.cpu_us() / 1e6);
        Ok(())
    }

    /// One round of dbdelta's load in this process (it leaves its table).
    fn dbdelta_load(
        &mut self,
        t: &Target,
        round: u32,
        session: &mut dyn Session,
        dialect: Dialect,
        loads: &mut Loads,
    ) -> Result<()> {
        let rows = self.args.rows;
        let a = t.probe.snapshot();
        let me_a = self_cpu_us();
        let started = Instant::now();
        let (load_secs, index_secs) = {
            let _pin = Affinity::pin(self.client_cpus.as_deref())?;
            timed_load(&self.suite(), session, dialect, &Default::default(), 1)?
        };
        let secs = started.elapsed().as_secs_f64();
        let me = self_cpu_us() - me_a;
        let b = t.probe.snapshot();
        let rps = rows as f64 / secs;
        self.say(&format!(
            "  round {round} dbdelta load:     {secs:.2} s (load {load_secs:.2} s + index {index_secs:.2} s), {} rows/s, client CPU {:.2} s, server CPU {:.2} s",
            thousands(rps),
            me / 1e6,
            server_delta(&a, &b) / 1e6
        ));
        loads.db.push(rps);
        loads.db_cpu.push(me / 1e6);
        loads.db_split.push(rows as f64 / load_secs);
        Ok(())
    }

    /// The load's medians, its ratio against sysbench and its goal.
    fn load_table(&mut self, t: &Target, loads: &Loads) {
        let Loads {
            sb,
            db,
            sb_cpu,
            db_cpu,
            db_split,
        } = loads;
        let ratio = median(db) / median(sb);
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16} {:>10}",
            "load", "median rows/s", "min–max", "client CPU s", "× sysbench"
        ));
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16.2} {:>10.2}",
            "sysbench prepare",
            thousands(median(sb)),
            spread(sb, 0),
            median(sb_cpu),
            1.0
        ));
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16.2} {:>10.2}",
            "dbdelta load",
            thousands(median(db)),
            spread(db, 0),
            median(db_cpu),
            ratio
        ));
        self.say(&format!(
            "  (dbdelta without the index build: median {} rows/s)",
            thousands(median(db_split))
        ));
        let goal = format!(
            "GOAL {} load rows/s ≥ 2× sysbench prepare: {} ({ratio:.2}×)",
            t.kind.name(),
            met(ratio >= 2.0)
        );
        self.say(&goal);
        self.goals.push(goal);
    }

    /// Warm the caches so every client sees the table in memory.
    pub(crate) fn prewarm(&mut self, t: &Target) -> Result<()> {
        let mut s = t.server.driver().connect()?;
        let what = match t.kind.name() {
            "postgres" => {
                s.execute_sql("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                    .context("pg_prewarm")?;
                s.query_strings("SELECT pg_prewarm('sbtest1')")?;
                s.query_strings("SELECT pg_prewarm('sbtest1_pkey')")?;
                "pg_prewarm of sbtest1 and its primary key"
            }
            _ => {
                s.query_strings("SELECT COUNT(*) FROM sbtest1 FORCE INDEX (PRIMARY)")?;
                "a full scan of sbtest1's primary key"
            }
        };
        self.say(&format!("prewarm: {what}"));
        Ok(())
    }
}
