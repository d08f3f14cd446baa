//! Passes and pairs: running a pass and taking its counts, sizing a part's short pass, the
//! 1-2-5 grid, and a step's pairs of n and 3n events (widened where they disagree). A counted
//! pass that counted nothing (no dump, 0 instructions) fails, and so does a sizing that finds
//! no cost per event within [`SIZING_LAST`] events: a count is never taken as 0.
//!
//! Must not: start processes (the cell does) or store (the sink does).

use anyhow::{Result, anyhow, bail};

use super::client::CountClient;
use super::counted::Counted;
use super::functions::{PairFunctions, step_functions};
use super::sink::Sizes;
use super::starts::ServerStart;
use super::{
    Counts, FIXED_SHARE, MAX_EVENTS, MIN_EVENTS, MIX_MIN_EVENTS, Part, Pass, SIZING_EVENTS,
    SIZING_LAST, StepCount,
};
use crate::counter::{self, Counting};
use crate::progress::thousands;
use crate::results::StepFunctions;
use crate::workload::StepPlan;

/// Run `pass` with the server's counting off, and take away what the client counted
/// meanwhile.
pub(super) fn uncounted(counted: &Counted, client: &mut CountClient, pass: &Pass) -> Result<()> {
    counted.switch(false)?;
    let done = run_and_take(counted, client, pass, false);
    counted.switch(true)?;
    done.map(|_| ())
}

/// One pass of `events` events of `part`: what it counted, never 0 instructions (that is a
/// count that was not written). A part that follows another role (a deleter) gets as many
/// events of that role first, uncounted.
pub(super) fn pass(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    events: u64,
    seed_repeat: u32,
) -> Result<Counts> {
    let mut pass = Pass {
        step: step.label.clone(),
        part: None,
        events,
        seed_repeat,
    };
    if let Some(leader) = part.refill {
        pass.part = Some(Part {
            role: leader,
            op: None,
            only: false,
            refill: None,
        });
        uncounted(counted, client, &pass)?;
    }
    pass.part = Some(*part);
    let c = run_and_take(counted, client, &pass, true)?;
    let nothing = match (c.server, c.client) {
        (0, _) if counted.embedded => Some("the engine's statements (in the client)"),
        (0, _) => Some("the server's statements"),
        (_, 0) if !counted.embedded => Some("the client"),
        _ => None,
    };
    if let Some(what) = nothing {
        let e = anyhow!(
            "a pass of {} events counted 0 instructions for {what}",
            c.events
        );
        return Err(counted.cause(e));
    }
    Ok(c)
}

/// Run a pass and take what it counted; after a `kept` pass (one whose counts are used)
/// every side counted under callgrind must have written a dump.
fn run_and_take(
    counted: &Counted,
    client: &mut CountClient,
    pass: &Pass,
    kept: bool,
) -> Result<Counts> {
    let before = counted.children();
    let unfinished = counted.unfinished()?;
    let done = client.pass(pass)?;
    counted.settle(&before, &unfinished)?;
    let mut fns = counter::SplitFunctions::default();
    let (server, client_instr) = match (counted.functions.get(), counted.embedded) {
        (false, _) => counted.take_dumps((None, None), kept)?,
        (true, true) => counted.take_dumps((None, Some(&mut fns)), kept)?,
        (true, false) => counted.take_dumps((Some(&mut fns), None), kept)?,
    };
    if let Some(e) = done.error {
        bail!("{e}");
    }
    if done.errors > 0 {
        bail!("{} of the pass's events failed", done.errors);
    }
    let (server, client_instr) = match done.perf {
        Some(p) if p.tasks == 0 && !counted.embedded => {
            bail!("perf stat: the server named no task serving the pass's connections")
        }
        Some(p) => (
            counter::Split {
                foreground: p.server,
                background: 0,
            },
            p.client,
        ),
        None if counted.counter != counter::Counter::Callgrind => {
            bail!("the counting client counted nothing with perf stat")
        }
        None => (server, client_instr),
    };
    let (server, background, client_instr) = match counted.embedded {
        // In-process: the engine's instructions are the client process's.
        true => (client_instr, 0, 0),
        false => (server.foreground, server.background, client_instr),
    };
    Ok(Counts {
        units: done.units,
        events: done.events,
        server,
        background,
        client: client_instr,
        functions: fns,
    })
}

/// The marginal instructions of one event of `step`, from sizing rounds of two small passes
/// of k and 3k events ([`per_event`]); they also warm the caches. k starts at
/// [`SIZING_EVENTS`] per connection and grows eightfold, so that every connection runs events
/// in both passes and a pass's fixed cost (its connections: 307 million instructions over 16
/// of SQLite's) cancels in their difference: from 4 and 12 events over 16 connections, both
/// passes ran one event a connection, and the difference was only that cost's noise. Without
/// a cost per event by [`SIZING_LAST`] events a pass would need more than [`MAX_EVENTS`]: an
/// error.
pub(super) fn size(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    (clients, budget): (u32, u64),
) -> Result<f64> {
    let mut k = SIZING_EVENTS * u64::from(step.clients_at(clients).max(1));
    loop {
        let a = pass(counted, client, step, part, k, 998)?;
        let b = pass(counted, client, step, part, 3 * k, 999)?;
        if let Some(v) = per_event((&a, &b), k, budget) {
            return Ok(v);
        }
        if k >= SIZING_LAST {
            let e = anyhow!(
                "sizing the passes: {} events counted {} instructions more than {} (at least {} \
                 were needed), so a pass would need more than {} events",
                b.events,
                thousands(total(&b) - total(&a)),
                a.events,
                thousands(budget as f64 / 20.0),
                thousands(MAX_EVENTS as f64)
            );
            return Err(counted.cause(e));
        }
        k *= 8;
    }
}

/// The statements' own work and the client's in a pass: the background's, which follows the
/// clock, would size the same step of two identical targets differently.
fn total(c: &Counts) -> f64 {
    (c.server + c.client) as f64
}

/// The instructions of one event from a sizing round of `a` (k events) and `b` (3k): their
/// difference over the events between them, once it is a twentieth of `budget` and, before
/// the last round, a [`FIXED_SHARE`]th of `a`'s count; `None`: a larger round is needed.
pub(super) fn per_event((a, b): (&Counts, &Counts), k: u64, budget: u64) -> Option<f64> {
    let diff = total(b) - total(a);
    let events = b.events.saturating_sub(a.events);
    let measured = diff >= budget as f64 / 20.0 && events > 0;
    let over_fixed = diff >= total(a) / FIXED_SHARE || k >= SIZING_LAST;
    (measured && over_fixed).then(|| diff / events as f64)
}

/// The events of `part`'s short pass: sized ([`size`]) to the budget, on the 1-2-5 grid, at
/// least a mix's share ([`MIX_MIN_EVENTS`]) and one per connection, then agreed with the run's
/// other targets ([`Sizes::agree`]). More than [`MAX_EVENTS`] is an error, not the maximum.
fn short_events(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    (clients, budget): (u32, u64),
    (sizes, key): (&Sizes, String),
) -> Result<u64> {
    let per_event = size(counted, client, step, part, (clients, budget))?;
    let n = (budget as f64 / per_event.max(1.0)) as u64;
    if n > MAX_EVENTS {
        let e = anyhow!(
            "sizing the passes: an event counted {per_event:.1} instructions, so a pass would \
             need {} events, more than {}",
            thousands(n as f64),
            thousands(MAX_EVENTS as f64)
        );
        return Err(counted.cause(e));
    }
    let mix = part.op.is_none() && step.roles[part.role].ops.len() > 1;
    let least = if mix { MIX_MIN_EVENTS } else { MIN_EVENTS };
    let own = on_grid(n.max(MIN_EVENTS))
        .max(least)
        .max(u64::from(clients));
    Ok(sizes.agree(key, &counted.build, own))
}

/// `n` rounded down to 1, 2 or 5 times a power of ten: targets whose events cost within about
/// a factor of two of each other run the same numbers of events, so their k-th pairs of passes
/// touch the same rows and the report can pair them.
pub(super) fn on_grid(n: u64) -> u64 {
    let mut scale = 1;
    while scale * 10 <= n {
        scale *= 10;
    }
    [5, 2, 1]
        .into_iter()
        .map(|m| m * scale)
        .find(|&g| g <= n)
        .unwrap_or(n.max(1))
}

/// The kept pairs counted when the first `passes` disagree by more than [`SPREAD_GOAL`].
pub const WIDE_PAIRS: u32 = 7;
/// The spread (half the range over the mean) of a step's pairs beyond which more are counted.
const SPREAD_GOAL: f64 = 0.01;

/// How many kept pairs a step counts, given its first `passes` pairs' foreground values:
/// [`WIDE_PAIRS`] where they disagree by more than [`SPREAD_GOAL`] (a write's cost follows
/// the rows its pair touched: MySQL's `update-zipf` and `insert` spread ±5–17% over three
/// pairs, the same in two runs), so that the report can judge by an interval over them.
pub(super) fn widened(values: &[f64], passes: u32) -> u32 {
    match StepCount::summary(values) {
        Some((mean, half)) if passes >= 2 && mean > 0.0 && half / mean > SPREAD_GOAL => {
            widened_to(passes)
        }
        _ => passes,
    }
}

/// The kept pairs of a widened step of `passes` pairs.
fn widened_to(passes: u32) -> u32 {
    passes.max(WIDE_PAIRS)
}

/// Size the passes, then this server start's share of `passes` pairs of n and 3n events
/// ([`WIDE_PAIRS`] where its pairs disagree by more than [`SPREAD_GOAL`], as the first cell of
/// this start number to settle it found, or where a cell of another start widened the part:
/// [`Sizes::begin`], [`Sizes::settle`]; see [`ServerStart::seeds`]); where the engine says so, one pair more first, dropped: it differs from the ones after it, which agree. MySQL 5.6.24 and 8.0.31, 1 × 100,000 rows,
/// `update-index`: 54,555 then 89,084 and 88,683 instructions/op (5.6), 91,550 then 105,969 and
/// 107,526 (8.0); the Insert Benchmark's `qp100` on 5.6: 121,107 then 165,155 and 165,282. An
/// uncounted pass of n events before the first pair did not change that.
pub(super) fn count_step(
    counted: &Counted,
    client: &mut CountClient,
    step: &StepPlan,
    part: &Part,
    (clients, start): (u32, ServerStart),
    counting: Counting,
    (sizes, key): (&Sizes, String),
) -> Result<StepCount> {
    let n = short_events(
        counted,
        client,
        step,
        part,
        (clients, counting.budget),
        (sizes, key.clone()),
    )?;
    let mut out = StepCount {
        server: Vec::new(),
        background: Vec::new(),
        client: Vec::new(),
        seeds: Vec::new(),
        events: n,
        functions: StepFunctions::default(),
    };
    let mut functions = Vec::new();
    if counted.drop_first {
        // The dropped pair's dumps are not read function by function: nothing keeps them.
        counted.functions.set(false);
        pass(counted, client, step, part, n, 1001)?;
        pass(counted, client, step, part, 3 * n, 1002)?;
    }
    // Settled for this start by another cell (or widened on another start): this cell counts
    // its share of as many pairs; otherwise its own first pairs settle it.
    let settled = sizes.begin(&key, start.number);
    let mut seeds = start.seeds(match settled {
        Some(true) => widened_to(counting.passes),
        _ => counting.passes,
    });
    let mut may_widen = settled.is_none();
    let mut i = 0;
    while let Some(&k) = seeds.get(i) {
        counted.functions.set(true);
        let short = pass(counted, client, step, part, n, 1001 + 2 * k)?;
        let long = pass(counted, client, step, part, 3 * n, 1002 + 2 * k)?;
        i += 1;
        let units = long.units as f64 - short.units as f64;
        if units <= 0.0 {
            bail!("the long pass counted no more operations than the short one");
        }
        out.seeds.push(k);
        out.server
            .push((long.server as f64 - short.server as f64) / units);
        // The long pass's own: background work follows the clock, not the events, so a
        // difference of two passes' went below zero whenever it fell in the short one.
        out.background
            .push(long.background as f64 / (long.units as f64).max(1.0));
        out.client
            .push((long.client as f64 - short.client as f64) / units);
        functions.push(PairFunctions {
            units,
            long_units: long.units as f64,
            short: short.functions,
            long: long.functions,
        });
        if i == seeds.len() && may_widen {
            may_widen = false;
            let disagree = widened(&out.server, counting.passes) > counting.passes;
            if sizes.settle(&key, start.number, disagree) {
                seeds = start.seeds(widened_to(counting.passes));
            }
        }
    }
    counted.functions.set(false);
    out.functions = step_functions(&functions, counted.embedded);
    Ok(out)
}
