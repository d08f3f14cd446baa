//! Server starts as a unit of replication: a target's pairs of passes are spread over
//! `instruction_starts` starts of its server (each a fresh data directory and load), so that
//! what differs between two starts of one server (statistics sampled at load, page and memory
//! layout) is in the pairs' spread and not only what differs between two passes. Which pairs
//! a start counts, and the order in which the targets' starts are counted (A B B A: each
//! target counted early and late).
//!
//! Must not: count, store or judge.

/// The `number`-th (from 1) of `of` starts of a target's counting server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerStart {
    pub number: u32,
    pub of: u32,
}

impl ServerStart {
    /// The only start, where pairs are not spread.
    pub const ONLY: ServerStart = ServerStart { number: 1, of: 1 };

    /// The starts a run counts with `passes` kept pairs per step and `starts` asked for: at
    /// most one per pair (a start counts at least one).
    pub fn all(starts: u32, passes: u32) -> Vec<ServerStart> {
        let of = starts.clamp(1, passes.max(1));
        (1..=of).map(|number| ServerStart { number, of }).collect()
    }

    /// The seeds (k, from 1) of the kept pairs this start counts of the first `pairs`: every
    /// `of`-th, from its number, so that the starts share the pairs out evenly and a widened
    /// step's further pairs too.
    pub fn seeds(self, pairs: u32) -> Vec<u32> {
        (1..=pairs)
            .filter(|k| (k - 1) % self.of.max(1) == self.number - 1)
            .collect()
    }

    /// `start s/S` for progress lines, nothing for the only start.
    pub fn label(self) -> String {
        match self.of {
            0 | 1 => String::new(),
            of => format!(" start {}/{of}", self.number),
        }
    }
}

/// The order in which `targets` (by index) are counted over `starts`: odd starts in the
/// targets' order, even starts in reverse (A1 B1 B2 A2), so that no target is always counted
/// first or last.
pub fn order(targets: &[usize], starts: &[ServerStart]) -> Vec<(usize, ServerStart)> {
    let mut out = Vec::new();
    for s in starts {
        let mut ts: Vec<usize> = targets.to_vec();
        if s.number % 2 == 0 {
            ts.reverse();
        }
        out.extend(ts.into_iter().map(|t| (t, *s)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_share_the_pairs_out_evenly() {
        let s = ServerStart::all(2, 3);
        assert_eq!(s[0].seeds(3), vec![1, 3]);
        assert_eq!(s[1].seeds(3), vec![2]);
        // Widened to seven: each start counts on where it stood.
        assert_eq!(s[0].seeds(7), vec![1, 3, 5, 7]);
        assert_eq!(s[1].seeds(7), vec![2, 4, 6]);
        assert_eq!(ServerStart::all(2, 1), vec![ServerStart::ONLY]);
        assert_eq!(ServerStart::ONLY.seeds(3), vec![1, 2, 3]);
    }

    #[test]
    fn targets_are_counted_a_b_b_a() {
        let order = order(&[0, 1], &ServerStart::all(2, 3));
        let seq: Vec<(usize, u32)> = order.iter().map(|(t, s)| (*t, s.number)).collect();
        assert_eq!(seq, vec![(0, 1), (1, 1), (1, 2), (0, 2)]);
    }
}
