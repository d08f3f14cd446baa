//! A counted step's pairs of passes as the store keeps them: each pair's instructions/op, the
//! seed it ran (the k-th pair of every target runs the same rows) and the server start that
//! counted it, and how the pairs of a step's starts come together into one row.
//!
//! Plain data and arithmetic only: nothing here counts, stores or judges.

use serde::{Deserialize, Serialize};

use super::{Metric, OpInstructions};

/// A counted step's foreground instructions/op per pair of passes, in seed order, and the
/// events of each pair's short pass. Every target's k-th pair of a step is seeded alike: with
/// the same events it ran the same rows as the base's k-th, and the report pairs them by seed.
/// The pairs of one step are spread over server starts (`starts`: which start counted each),
/// so that what differs between two starts of one server is in their spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct InstructionPairs {
    pub events: u64,
    pub per_op: Vec<f64>,
    /// What counted them (`callgrind`, `perf stat -e instructions:u`); `None`: stored before
    /// dbdelta recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    /// Each pair's seed (k, from 1); empty: stored before seeds were kept, the k-th value is
    /// the k-th pair.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<u32>,
    /// The server start (from 1) that counted each pair; empty: one start counted them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starts: Vec<u32>,
    /// Each pair's background instructions/op (empty: none counted apart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<f64>,
    /// Each pair's client instructions/op (empty: counted with the engine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client: Vec<f64>,
}

/// One pair of passes as [`InstructionPairs::merged_with`] handles it.
struct Pair {
    seed: u32,
    start: u32,
    value: f64,
    background: Option<f64>,
    client: Option<f64>,
}

/// (mean, half the range) of `values`; `None` when there are none or one is not finite.
pub fn summary(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let (lo, hi) = (values.iter()).fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    Some((mean, (hi - lo) / 2.0))
}

impl InstructionPairs {
    /// The seed of the `i`-th pair (its position + 1 where seeds were not kept).
    pub fn seed(&self, i: usize) -> u32 {
        self.seeds.get(i).copied().unwrap_or(i as u32 + 1)
    }

    /// The start of the `i`-th pair (1 where starts were not kept).
    pub fn start(&self, i: usize) -> u32 {
        self.starts.get(i).copied().unwrap_or(1)
    }

    /// The value of the pair seeded `seed`, if counted.
    pub fn by_seed(&self, seed: u32) -> Option<f64> {
        (0..self.per_op.len())
            .find(|&i| self.seed(i) == seed)
            .map(|i| self.per_op[i])
    }

    /// The distinct starts that counted pairs, in order.
    pub fn start_numbers(&self) -> Vec<u32> {
        let mut s: Vec<u32> = (0..self.per_op.len()).map(|i| self.start(i)).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// These pairs (one start's) with `stored`'s of the other starts, in seed order: a start
    /// counted again (a resumed cell) replaces what it counted before. Per-pair columns that
    /// either side lacks are dropped from the result rather than misaligned.
    pub fn merged_with(&self, stored: Option<&InstructionPairs>) -> InstructionPairs {
        let Some(old) = stored.filter(|o| o.events == self.events && !o.starts.is_empty()) else {
            return self.clone();
        };
        let mine = self.start_numbers();
        // Mine first: the sort is stable and the dedup keeps the first of a seed.
        let mut rows: Vec<Pair> = (0..self.per_op.len()).map(|i| self.pair(i)).collect();
        rows.extend(
            (0..old.per_op.len())
                .filter(|&i| !mine.contains(&old.start(i)))
                .map(|i| old.pair(i)),
        );
        rows.sort_by_key(|r| r.seed);
        rows.dedup_by_key(|r| r.seed);
        let all = |f: fn(&Pair) -> Option<f64>| {
            (rows.iter().map(f))
                .collect::<Option<Vec<f64>>>()
                .unwrap_or_default()
        };
        InstructionPairs {
            events: self.events,
            per_op: rows.iter().map(|r| r.value).collect(),
            counter: self.counter.clone(),
            seeds: rows.iter().map(|r| r.seed).collect(),
            starts: rows.iter().map(|r| r.start).collect(),
            background: all(|r| r.background),
            client: all(|r| r.client),
        }
    }

    /// The `i`-th pair with its seed, start and per-pair columns.
    fn pair(&self, i: usize) -> Pair {
        Pair {
            seed: self.seed(i),
            start: self.start(i),
            value: self.per_op[i],
            background: self.background.get(i).copied(),
            client: self.client.get(i).copied(),
        }
    }

    /// The step's stored values from its pairs: foreground instructions/op and half their
    /// range, the background's, and the client's mean (`None` where a column is empty).
    pub fn metric_values(&self) -> Vec<(Metric, Option<f64>)> {
        let (server, bg, client) = (
            summary(&self.per_op),
            summary(&self.background),
            summary(&self.client),
        );
        vec![
            (Metric::ServerInstr, server.map(|s| s.0)),
            (Metric::ServerInstrSpread, server.map(|s| s.1)),
            (Metric::ServerBgInstr, bg.map(|s| s.0)),
            (Metric::ServerBgInstrSpread, bg.map(|s| s.1)),
            (Metric::ClientInstr, client.map(|s| s.0)),
        ]
    }

    /// Per start (in order): the mean of its pairs' foreground values.
    pub fn start_means(&self) -> Vec<(u32, f64)> {
        (self.start_numbers().into_iter())
            .filter_map(|s| {
                let v: Vec<f64> = (0..self.per_op.len())
                    .filter(|&i| self.start(i) == s)
                    .map(|i| self.per_op[i])
                    .collect();
                summary(&v).map(|(m, _)| (s, m))
            })
            .collect()
    }
}

impl OpInstructions {
    /// These counts (one start's) with `stored`'s of the other starts (see
    /// [`InstructionPairs::merged_with`]), their values taken again from the merged pairs.
    pub fn merged_with(&self, stored: Option<&OpInstructions>) -> OpInstructions {
        let pairs = self.pairs.merged_with(stored.map(|s| &s.pairs));
        if pairs == self.pairs {
            return self.clone();
        }
        let (server, bg, client) = (
            summary(&pairs.per_op),
            summary(&pairs.background),
            summary(&pairs.client),
        );
        let (server, spread) = server.unwrap_or((self.server, self.spread));
        OpInstructions {
            server,
            spread,
            background: bg.map(|b| b.0),
            background_spread: bg.map(|b| b.1),
            client: client.map(|c| c.0),
            pairs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(s: u32, seeds: &[u32], values: &[f64]) -> InstructionPairs {
        InstructionPairs {
            events: 100,
            per_op: values.to_vec(),
            counter: None,
            seeds: seeds.to_vec(),
            starts: vec![s; seeds.len()],
            background: values.iter().map(|v| v / 10.0).collect(),
            client: Vec::new(),
        }
    }

    #[test]
    fn the_starts_pairs_come_together_in_seed_order() {
        let one = start(1, &[1, 3], &[10.0, 30.0]);
        let two = start(2, &[2], &[20.0]);
        let m = two.merged_with(Some(&one));
        assert_eq!(m.seeds, vec![1, 2, 3]);
        assert_eq!(m.starts, vec![1, 2, 1]);
        assert_eq!(m.per_op, vec![10.0, 20.0, 30.0]);
        assert_eq!(m.background, vec![1.0, 2.0, 3.0]);
        assert!(m.client.is_empty());
        assert_eq!(m.start_means(), vec![(1, 20.0), (2, 20.0)]);
        assert_eq!(m.by_seed(3), Some(30.0));
    }

    #[test]
    fn a_start_counted_again_replaces_its_pairs() {
        let stored =
            start(2, &[2], &[20.0]).merged_with(Some(&start(1, &[1, 3, 5], &[1.0, 3.0, 5.0])));
        let again = start(1, &[1, 3], &[10.0, 30.0]).merged_with(Some(&stored));
        assert_eq!(again.seeds, vec![1, 2, 3]);
        assert_eq!(again.per_op, vec![10.0, 20.0, 30.0]);
    }

    #[test]
    fn pairs_of_other_sizes_or_without_starts_are_not_merged() {
        let mut old = start(1, &[1], &[1.0]);
        old.events = 50;
        let two = start(2, &[2], &[2.0]);
        assert_eq!(two.merged_with(Some(&old)), two);
        let legacy = InstructionPairs {
            events: 100,
            per_op: vec![5.0],
            ..Default::default()
        };
        assert_eq!(two.merged_with(Some(&legacy)), two);
        assert_eq!(legacy.seed(0), 1);
        assert_eq!(legacy.start_numbers(), vec![1]);
    }
}
