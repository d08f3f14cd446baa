//! The counting plan: how the counting cell treats each step (skipped, once, or part by part)
//! and the step a counting pass runs of a part.
//!
//! Must not: run anything, count, or store.

use std::time::Duration;

use anyhow::{Context, Result};

use super::{CountPlan, Part};
use crate::workload::{Pacer, StepPlan};

/// How the counting cell treats `step`. A role's work counts per event when it runs alone and
/// closed-loop (a paced role's work follows the clock, so each role is counted on its own).
pub fn count_plan(step: &StepPlan) -> CountPlan {
    if step.warm {
        return CountPlan::Skip;
    }
    if step.roles.iter().any(|r| !r.executor.repeatable()) {
        return CountPlan::Once;
    }
    let refill = |role: usize| match step.roles[role].pacer {
        Pacer::Follow { leader, .. } => Some(leader),
        _ => None,
    };
    let c = step.counted;
    let mut parts = vec![Part {
        role: c.role,
        op: c.op,
        only: false,
        refill: refill(c.role),
    }];
    for (i, role) in step.roles.iter().enumerate() {
        if i != c.role {
            parts.push(Part {
                role: i,
                op: None,
                only: false,
                refill: refill(i),
            });
        }
        if role.ops.len() < 2 {
            continue;
        }
        for k in (0..role.ops.len()).filter(|&k| role.executor.only(k).is_some()) {
            parts.push(Part {
                role: i,
                op: Some(k),
                only: true,
                refill: refill(i),
            });
        }
    }
    CountPlan::Parts(parts)
}

impl Part {
    /// Whether this is the step's own count (stored on its measurement row).
    pub(super) fn is_step(&self, step: &StepPlan) -> bool {
        self.role == step.counted.role && self.op == step.counted.op && !self.only
    }

    /// The (role, operation type) names of the operation row an apart count is stored in: the
    /// role's first type when it counts all of them.
    pub(super) fn names(&self, step: &StepPlan) -> (&'static str, &'static str) {
        let role = &step.roles[self.role];
        (role.name, role.ops[self.op.unwrap_or(0)])
    }

    /// `update-index`, `qr100 deleter`, `linkbench.c1 get_node`.
    pub(super) fn label(&self, step: &StepPlan) -> String {
        match (self.is_step(step), self.only) {
            (true, _) => step.label.clone(),
            (false, true) => format!("{} {}", step.label, self.names(step).1),
            (false, false) => format!("{} {}", step.label, self.names(step).0),
        }
    }
}

/// `step` as a counting pass runs `part` of it: that role alone, closed-loop, `events` events
/// over `clients` connections, no warm-up, no deadline; without a part, the step as planned
/// (no warm-up).
pub(super) fn pass_step(
    step: &StepPlan,
    part: Option<&Part>,
    events: u64,
    clients: u32,
) -> Result<StepPlan> {
    let mut s = step.clone();
    s.warmup = Duration::ZERO;
    let Some(part) = part else {
        return Ok(s);
    };
    s.measure = None;
    s.stop_rule = None;
    s.expected = Duration::ZERO;
    let mut role = (step.roles.get(part.role).cloned())
        .with_context(|| format!("{} has no role {}", step.label, part.role))?;
    if part.only {
        role.executor = (part.op.and_then(|k| role.executor.only(k)))
            .with_context(|| format!("{}'s {} cannot run one type alone", step.label, role.name))?;
    }
    role.pacer = Pacer::Closed;
    let per_connection = events.div_ceil(u64::from(clients.max(1)));
    role.quota = Some(per_connection.max(1));
    s.roles = vec![role];
    s.counted = crate::workload::Counted {
        role: 0,
        op: part.op,
    };
    Ok(s)
}
