//! Change points in a series of values (one value per run, in time order): E-divisive means
//! with a Student t-test, the method of Apache Otava (formerly Hunter) with the deliberate
//! departures docs/reports.md, History, lists (a candidate in every segment, ddof = 1, one
//! threshold, sides of at least [`MIN_SIDE`] runs).
//!
//! Owns the algorithm only: values in, change points out. Must not know runs, metrics or the
//! store (`history` feeds it one value per run).
//!
//! Method (Matteson & James 2014, "A nonparametric approach for multiple change point analysis
//! of multivariate data"; Fleming et al. 2023, "Hunter: Using change point detection to hunt
//! for performance regressions"):
//! 1. **Candidate**: within a segment, the split τ maximising the energy statistic
//!    Q(τ) = (m·k/(m+k)) · (2·E|X−Y| − E|X−X'| − E|Y−Y'|) with α = 1, X the m values before τ
//!    and Y the k values from τ on. It is a distance between the two sides' distributions, so a
//!    shift in level is found without assuming normal noise.
//! 2. **Test**: as Otava does, the candidate is kept when Student's two-sample t-test (pooled
//!    variance) of the two sides gives p ≤ `max_p` (default 0.001, Otava's) and the level moved
//!    by at least `min_magnitude` (|after/before − 1|). Pooled, not Welch's: with two values on
//!    one side, Welch's test trusts that side's own (often tiny) variance and finds changes in
//!    pure noise. Matteson & James (and MongoDB) use a permutation
//!    test instead; the t-test is deterministic (no seed, the same answer on every machine)
//!    and fast, and Fleming et al. found it as good on performance series.
//! 3. **Recursion**: every segment between kept points is searched again until no candidate
//!    passes; then, as Otava does, each kept point is tested again against its neighbours'
//!    segments and the weakest failing one is dropped, until all pass.
//!
//! Each side of a split needs [`MIN_SIDE`] values (one run apart is an outlier, not a level):
//! a series shorter than 2·`MIN_SIDE` is [`TooFew`], and a change at the last run shows once a
//! second run after it is stored.

use crate::stats;

/// Fewest values on each side of a change point.
pub const MIN_SIDE: usize = 2;

/// Otava's default largest p-value of a kept change point.
pub const MAX_P: f64 = 0.001;

/// What makes a candidate a change point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Largest p-value (Student's t-test of the two sides) of a change point.
    pub max_p: f64,
    /// Smallest |after mean / before mean − 1| of a change point (0.02 = 2%).
    pub min_magnitude: f64,
}

impl Default for Config {
    /// p ≤ 0.001 (Otava's default) and a move of at least the verdicts' default min effect (2%).
    fn default() -> Config {
        Config {
            max_p: MAX_P,
            min_magnitude: stats::MIN_EFFECT,
        }
    }
}

/// A change in level between two values of the series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The first value after the change.
    pub index: usize,
    /// Mean of the values from the previous change point (or the start) to `index`.
    pub before_mean: f64,
    /// Mean of the values from `index` to the next change point (or the end).
    pub after_mean: f64,
    /// Student's two-sided p-value of those two segments.
    pub p_value: f64,
}

impl ChangePoint {
    /// `after_mean / before_mean`; `None` when the level before is 0.
    pub fn ratio(&self) -> Option<f64> {
        stats::ratio(Some(self.after_mean), Some(self.before_mean))
    }
}

/// The series is too short to split: it has `n` values, a split needs `2 · MIN_SIDE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{n} value(s): change points need at least {} (two on each side)", 2 * MIN_SIDE)]
pub struct TooFew {
    pub n: usize,
}

/// The change points of `xs` (in order), or [`TooFew`] for a series under 2·[`MIN_SIDE`].
/// Non-finite values must be left out by the caller.
pub fn detect(xs: &[f64], cfg: &Config) -> Result<Vec<ChangePoint>, TooFew> {
    if xs.len() < 2 * MIN_SIDE {
        return Err(TooFew { n: xs.len() });
    }
    let mut cuts: Vec<usize> = Vec::new();
    loop {
        let mut found = Vec::new();
        let bounds = with_ends(&cuts, xs.len());
        for w in bounds.windows(2) {
            let seg = &xs[w[0]..w[1]];
            if let Some(tau) = best_split(seg) {
                let (l, r) = seg.split_at(tau);
                if passes(test(l, r), cfg) {
                    found.push(w[0] + tau);
                }
            }
        }
        if found.is_empty() {
            break;
        }
        cuts.extend(found);
        cuts.sort_unstable();
    }
    prune(xs, &mut cuts, cfg);
    Ok(points(xs, &cuts))
}

/// `0`, the cuts, `n`.
fn with_ends(cuts: &[usize], n: usize) -> Vec<usize> {
    let mut b = Vec::with_capacity(cuts.len() + 2);
    b.push(0);
    b.extend_from_slice(cuts);
    b.push(n);
    b
}

/// Drops, one at a time, the weakest cut whose neighbouring segments no longer pass.
fn prune(xs: &[f64], cuts: &mut Vec<usize>, cfg: &Config) {
    loop {
        let b = with_ends(cuts, xs.len());
        let weakest = (1..b.len() - 1)
            .map(|i| (i - 1, test(&xs[b[i - 1]..b[i]], &xs[b[i]..b[i + 1]])))
            .filter(|(_, t)| !passes(*t, cfg))
            .max_by(|a, b| a.1.0.total_cmp(&b.1.0));
        match weakest {
            Some((i, _)) => {
                cuts.remove(i);
            }
            None => return,
        }
    }
}

/// The change points of the kept cuts, each against its neighbouring segments.
fn points(xs: &[f64], cuts: &[usize]) -> Vec<ChangePoint> {
    let b = with_ends(cuts, xs.len());
    (1..b.len() - 1)
        .map(|i| {
            let (l, r) = (&xs[b[i - 1]..b[i]], &xs[b[i]..b[i + 1]]);
            ChangePoint {
                index: b[i],
                before_mean: mean(l),
                after_mean: mean(r),
                p_value: test(l, r).0,
            }
        })
        .collect()
}

/// A candidate passes: p ≤ `max_p` and the level moved by at least `min_magnitude`.
fn passes((p, magnitude): (f64, f64), cfg: &Config) -> bool {
    p <= cfg.max_p && magnitude >= cfg.min_magnitude
}

/// (Student's two-sided p-value, |mean(r)/mean(l) − 1|) of two sides.
fn test(l: &[f64], r: &[f64]) -> (f64, f64) {
    let (ml, mr) = (mean(l), mean(r));
    let magnitude = match stats::ratio(Some(mr), Some(ml)) {
        Some(q) => (q - 1.0).abs(),
        None => f64::INFINITY,
    };
    (student_p(l, r), magnitude)
}

/// Student's two-sided p-value of equal means (pooled variance, as Otava's t-test); two constant
/// sides give 0 when their levels differ, 1 when they do not.
pub fn student_p(l: &[f64], r: &[f64]) -> f64 {
    let (nl, nr) = (l.len() as f64, r.len() as f64);
    let df = nl + nr - 2.0;
    let pooled =
        ((nl - 1.0) * stats::sample_variance(l) + (nr - 1.0) * stats::sample_variance(r)) / df;
    let diff = mean(r) - mean(l);
    let se2 = pooled * (1.0 / nl + 1.0 / nr);
    if se2 <= 0.0 {
        return if diff == 0.0 { 1.0 } else { 0.0 };
    }
    stats::t_two_sided_p(diff / se2.sqrt(), df)
}

/// The split (1..len, each side at least [`MIN_SIDE`]) with the largest energy statistic;
/// `None` when the segment is too short.
fn best_split(seg: &[f64]) -> Option<usize> {
    let n = seg.len();
    if n < 2 * MIN_SIDE {
        return None;
    }
    // Sums of |xi − xj| within the left side, within the right side and across, kept as τ moves
    // right by one: O(n²) for the whole scan.
    let dist_to = |i: usize, range: std::ops::Range<usize>| -> f64 {
        range.map(|j| (seg[i] - seg[j]).abs()).sum()
    };
    let mut within_l = 0.0;
    let mut within_r: f64 = (0..n).map(|i| dist_to(i, i + 1..n)).sum();
    let mut across = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..=n - MIN_SIDE {
        // Move seg[tau - 1] from the right side to the left.
        let x = tau - 1;
        let to_left = dist_to(x, 0..x);
        let to_right = dist_to(x, x + 1..n);
        within_l += to_left;
        within_r -= to_right;
        across += to_right - to_left;
        if tau < MIN_SIDE || n - tau < MIN_SIDE {
            continue;
        }
        let (m, k) = (tau as f64, (n - tau) as f64);
        let q = (m * k / (m + k))
            * (2.0 * across / (m * k) - within_l / pairs(m) - within_r / pairs(k));
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best.map(|(tau, _)| tau)
}

/// Unordered pairs among `m` values (at least 1, so one value divides by 1 with a zero sum).
fn pairs(m: f64) -> f64 {
    (m * (m - 1.0) / 2.0).max(1.0)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise: a small LCG mapped to roughly normal values (sum of 12 uniforms).
    fn noise(seed: u64, n: usize, sd: f64) -> Vec<f64> {
        let mut s = seed;
        let mut uniform = move || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| sd * ((0..12).map(|_| uniform()).sum::<f64>() - 6.0))
            .collect()
    }

    fn levels(parts: &[(usize, f64)], seed: u64, sd: f64) -> Vec<f64> {
        let n = parts.iter().map(|p| p.0).sum();
        let e = noise(seed, n, sd);
        let mut out = Vec::new();
        for &(len, level) in parts {
            for _ in 0..len {
                out.push(level + e[out.len()]);
            }
        }
        out
    }

    #[test]
    fn one_step_found_at_its_index() {
        let xs = levels(&[(5, 1000.0), (5, 700.0)], 1, 10.0);
        let cps = detect(&xs, &Config::default()).unwrap();
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 5);
        assert!(cps[0].ratio().unwrap() < 0.75, "{cps:?}");
        assert!(cps[0].p_value <= MAX_P);
    }

    #[test]
    fn two_steps_found() {
        let xs = levels(&[(8, 100.0), (7, 130.0), (9, 90.0)], 2, 2.0);
        let cps = detect(&xs, &Config::default()).unwrap();
        let at: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![8, 15], "{cps:?}");
    }

    #[test]
    fn pure_noise_gives_none() {
        for seed in 1..=20 {
            let xs = levels(&[(40, 500.0)], seed, 25.0);
            let cps = detect(&xs, &Config::default()).unwrap();
            assert!(cps.is_empty(), "seed {seed}: {cps:?}");
        }
    }

    #[test]
    fn a_significant_but_small_move_is_not_a_change() {
        // 1% apart with almost no noise: the t-test passes, the magnitude rule does not.
        let xs = levels(&[(6, 100.0), (6, 101.0)], 3, 0.01);
        assert!(detect(&xs, &Config::default()).unwrap().is_empty());
        let any = Config {
            min_magnitude: 0.0,
            ..Config::default()
        };
        assert_eq!(detect(&xs, &any).unwrap()[0].index, 6);
    }

    #[test]
    fn short_series_are_too_few() {
        assert_eq!(
            detect(&[1.0, 2.0, 3.0], &Config::default()),
            Err(TooFew { n: 3 })
        );
        assert!(detect(&[1.0, 1.0, 5.0, 5.0], &Config::default()).is_ok());
    }

    #[test]
    fn constant_sides_are_handled() {
        let xs = [3.0, 3.0, 3.0, 6.0, 6.0, 6.0];
        let cps = detect(&xs, &Config::default()).unwrap();
        assert_eq!(cps.len(), 1);
        assert_eq!((cps[0].index, cps[0].p_value), (3, 0.0));
        assert!(detect(&[4.0; 8], &Config::default()).unwrap().is_empty());
        assert_eq!(student_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }

    #[test]
    fn energy_split_matches_a_direct_computation() {
        let xs = levels(&[(4, 10.0), (3, 14.0), (5, 11.0)], 4, 1.0);
        let direct = |tau: usize| {
            let (l, r) = xs.split_at(tau);
            let d = |a: &[f64], b: &[f64]| {
                let s: f64 = a
                    .iter()
                    .flat_map(|x| b.iter().map(move |y| (x - y).abs()))
                    .sum();
                s / (a.len() * b.len()) as f64
            };
            let (m, k) = (l.len() as f64, r.len() as f64);
            // E|X−X'| over distinct pairs: the full double sum counts each pair twice and the
            // diagonal (zeros) m times.
            let within =
                |a: &[f64]| d(a, a) * (a.len() * a.len()) as f64 / (a.len() * (a.len() - 1)) as f64;
            m * k / (m + k) * (2.0 * d(l, r) - within(l) - within(r))
        };
        let want = (MIN_SIDE..=xs.len() - MIN_SIDE)
            .max_by(|&a, &b| direct(a).total_cmp(&direct(b)))
            .unwrap();
        assert_eq!(best_split(&xs), Some(want));
    }
}
