//! The query rounds and their output table: the clients interleaved per round at each client
//! count, one line per run, then the medians, the ratios against sysbench and the goals. It must
//! not measure a client itself (that is `clients.rs`).

use std::fmt::Write as _;

use anyhow::Result;

use dbdelta::engine::common::wire::Wait;
use dbdelta::progress::thousands;

use crate::bench::{Bench, met};
use crate::stats::{median, spread};
use crate::target::{Client, Sample, Target};

impl Bench<'_> {
    pub(crate) fn rounds(&mut self, t: &Target) -> Result<()> {
        let mut order = vec![Client::Sysbench];
        if t.kind.name() == "postgres" {
            order.push(Client::Pgbench);
        }
        order.push(Client::Dbdelta);
        if t.kind.name() == "postgres" {
            order.push(Client::Floor);
            order.push(Client::FloorRecv);
        }
        let names: Vec<&str> = order.iter().map(|c| c.name()).collect();
        for &clients in &self.args.clients.clone() {
            self.say("");
            self.say(&format!(
                "point select, {clients} client(s), {} s per run, {} rounds, order per round: {}",
                self.args.secs,
                self.args.rounds,
                names.join(" ")
            ));
            let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); order.len()];
            for round in 1..=self.args.rounds {
                for (i, &client) in order.iter().enumerate() {
                    self.check_interrupt()?;
                    let s = match client {
                        Client::Dbdelta => self.dbdelta(t, clients)?,
                        Client::Floor => self.floor(t, clients, Wait::Poll)?,
                        Client::FloorRecv => self.floor(t, clients, Wait::Read)?,
                        _ => self.external(t, client, clients)?,
                    };
                    let mut line = format!(
                        "  round {round} {:<9} {:>9} qps  client {:>6.2} µs/q (sys {:>5.2}, {:.2} cs/q, {:.2} preempted)  server {:>6.2} µs/q  queries {:>9}  other load {:.2} cores",
                        client.name(),
                        thousands(s.qps),
                        s.client_us,
                        s.client_sys_us,
                        s.client_cs,
                        s.client_ics,
                        s.server_us,
                        s.queries,
                        s.other_cores
                    );
                    if client == Client::Dbdelta {
                        let _ = write!(
                            line,
                            "  (window: client {:.2}, server {:.2} µs/q)",
                            s.window_client_us, s.window_server_us
                        );
                    }
                    self.say(&line);
                    samples[i].push(s);
                }
            }
            self.summary(t, clients, &order, &samples);
        }
        Ok(())
    }

    fn summary(&mut self, t: &Target, clients: u32, order: &[Client], samples: &[Vec<Sample>]) {
        let col = |i: usize, f: fn(&Sample) -> f64| samples[i].iter().map(f).collect::<Vec<f64>>();
        let base_qps = median(&col(0, |s| s.qps));
        let base_cpu = median(&col(0, |s| s.client_us));
        self.say(&format!(
            "  {:<9} {:>10} {:>17} {:>11} {:>13} {:>8} {:>6} {:>11} {:>13} {:>8} {:>11}",
            "median",
            "QPS",
            "min–max",
            "client µs/q",
            "min–max",
            "sys µs/q",
            "cs/q",
            "server µs/q",
            "min–max",
            "QPS ×sb",
            "client ×sb"
        ));
        let mut med = Vec::new();
        for (i, client) in order.iter().enumerate() {
            let qps = col(i, |s| s.qps);
            let cpu = col(i, |s| s.client_us);
            let srv = col(i, |s| s.server_us);
            let (mq, mc) = (median(&qps), median(&cpu));
            med.push((*client, mq, mc));
            self.say(&format!(
                "  {:<9} {:>10} {:>17} {:>11.2} {:>13} {:>8.2} {:>6.2} {:>11.2} {:>13} {:>8.2} {:>11.2}",
                client.name(),
                thousands(mq),
                spread(&qps, 0),
                mc,
                spread(&cpu, 2),
                median(&col(i, |s| s.client_sys_us)),
                median(&col(i, |s| s.client_cs)),
                median(&srv),
                spread(&srv, 2),
                mq / base_qps,
                mc / base_cpu
            ));
        }
        if let Some(i) = order.iter().position(|c| *c == Client::Dbdelta) {
            self.say(&format!(
                "  dbdelta, measured window only (its own accounting, excludes connect, prepare, warm-up): client {:.2} µs/q, server {:.2} µs/q",
                median(&col(i, |s| s.window_client_us)),
                median(&col(i, |s| s.window_server_us))
            ));
        }
        let get = |c: Client| medians_of(&med, c);
        for floor in [Client::Floor, Client::FloorRecv] {
            if let (Some((_, dc)), Some((_, fc))) = (get(Client::Dbdelta), get(floor)) {
                self.say(&format!(
                    "  dbdelta's client CPU is {:.2}× {}'s (the runner, workload, recording and wait choice: {:+.2} µs/q)",
                    dc / fc,
                    floor.name(),
                    dc - fc
                ));
            }
        }
        self.point_goals(t, clients, &med);
    }

    /// The goals of issue #4 at one client count, from the medians (client, QPS, client µs/q).
    fn point_goals(&mut self, t: &Target, clients: u32, med: &[(Client, f64, f64)]) {
        let get = |c: Client| medians_of(med, c);
        let engine = t.kind.name();
        let mut goals = Vec::new();
        if let (Some((dq, dc)), Some((sq, sc))) = (get(Client::Dbdelta), get(Client::Sysbench)) {
            goals.push(format!(
                "GOAL {engine} c={clients} dbdelta client CPU ≤ 0.7× sysbench: {} ({:.2}×)",
                met(dc <= 0.7 * sc),
                dc / sc
            ));
            if let Some((_, pc)) = get(Client::Pgbench) {
                goals.push(format!(
                    "GOAL {engine} c={clients} dbdelta client CPU ≤ pgbench: {} ({:.2}×)",
                    met(dc <= pc),
                    dc / pc
                ));
            }
            goals.push(format!(
                "GOAL {engine} c={clients} dbdelta QPS ≥ 1.05× sysbench: {} ({:.2}×)",
                met(dq >= 1.05 * sq),
                dq / sq
            ));
        }
        for g in goals {
            self.say(&g);
            self.goals.push(g);
        }
    }
}

/// The medians of `client` (QPS, client µs/q) among the rows of the table.
fn medians_of(med: &[(Client, f64, f64)], client: Client) -> Option<(f64, f64)> {
    med.iter().find(|m| m.0 == client).map(|m| (m.1, m.2))
}
