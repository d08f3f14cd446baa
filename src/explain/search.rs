//! The search for the settings that explain a change: halving the set of carried settings,
//! each half judged by one twin counted with the base's values of that half only.
//!
//! Effects are natural logarithms of instructions/op ratios (target / twin), one per step, and
//! the search takes the two halves of a set to explain, between them, what the whole set
//! explains (the first half's effect is counted, the second's is the whole's less it: settings
//! in different halves are assumed not to act only together; one that does is credited to the
//! second half). A half is searched further when it explains at least `threshold`
//! (`ln(1 + min_effect)`) on some step; a set whose halves each explain less while the whole
//! does is an answer of its own (its settings add up). One setting that explains the change is
//! found in ⌈log2 n⌉ twins.
//! Must not: count anything itself (the caller's `count` does) or format.

/// What a set of settings explains, per step: `ln(target / twin with these settings at the
/// base's values)`, and the noise of that logarithm (the counts' relative half ranges added).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Effect {
    pub log: Vec<f64>,
    pub noise: Vec<f64>,
}

impl Effect {
    /// An effect known exactly (no noise), for tests and sets with no twin.
    pub fn exact(log: Vec<f64>) -> Effect {
        let noise = vec![0.0; log.len()];
        Effect { log, noise }
    }

    /// Whether step `i`'s effect reaches `threshold` and stands out of its noise.
    pub fn explains_step(&self, i: usize, threshold: f64) -> bool {
        let e = self.log[i].abs();
        e >= threshold && e > self.noise[i]
    }

    /// Whether some step's effect reaches `threshold` and stands out of its noise.
    pub fn explains(&self, threshold: f64) -> bool {
        (0..self.log.len()).any(|i| self.explains_step(i, threshold))
    }

    /// `self − other`: what the rest of a set explains when `other` is one half of it.
    fn less(&self, other: &Effect) -> Effect {
        let pairs = |a: &[f64], b: &[f64], f: fn(f64, f64) -> f64| -> Vec<f64> {
            a.iter().zip(b).map(|(a, b)| f(*a, *b)).collect()
        };
        Effect {
            log: pairs(&self.log, &other.log, |a, b| a - b),
            noise: pairs(&self.noise, &other.noise, |a, b| a + b),
        }
    }
}

/// A set of settings (indices into the carried list) and what it explains per step.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub settings: Vec<usize>,
    pub effect: Effect,
}

/// Narrow `set` (which explains `effect`) down to the settings that explain it; `count(half)`
/// counts a twin with `half`'s settings at the base's values and returns its effect.
pub fn narrow<E>(
    set: &[usize],
    effect: Effect,
    threshold: f64,
    count: &mut impl FnMut(&[usize]) -> Result<Effect, E>,
) -> Result<Vec<Found>, E> {
    if set.len() <= 1 {
        return Ok(vec![Found {
            settings: set.to_vec(),
            effect,
        }]);
    }
    let (a, b) = set.split_at(set.len() / 2);
    let ea = count(a)?;
    let eb = effect.less(&ea);
    let mut out = Vec::new();
    if ea.explains(threshold) {
        out.extend(narrow(a, ea, threshold, count)?);
    }
    if eb.explains(threshold) {
        out.extend(narrow(b, eb, threshold, count)?);
    }
    if out.is_empty() {
        out.push(Found {
            settings: set.to_vec(),
            effect,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A twin's effect when setting `culprit` alone moves instructions by `ln 1.6`, on one step.
    fn one_culprit(n: usize, culprit: usize) -> (Vec<Found>, usize) {
        let mut twins = 0;
        let mut count = |half: &[usize]| -> Result<Effect, ()> {
            twins += 1;
            Ok(Effect::exact(vec![if half.contains(&culprit) {
                1.6f64.ln()
            } else {
                0.0
            }]))
        };
        let set: Vec<usize> = (0..n).collect();
        let whole = Effect::exact(vec![1.6f64.ln()]);
        let found = narrow(&set, whole, 1.02f64.ln(), &mut count).unwrap();
        (found, twins)
    }

    #[test]
    fn one_setting_is_found_in_log2_n_twins() {
        for n in [1, 2, 3, 7, 8, 100, 333] {
            for culprit in [0, n / 2, n - 1] {
                let (found, twins) = one_culprit(n, culprit);
                assert_eq!(found.len(), 1);
                assert_eq!(found[0].settings, [culprit], "n={n}");
                assert!((found[0].effect.log[0] - 1.6f64.ln()).abs() < 1e-12);
                let log2 = (n as f64).log2().ceil() as usize;
                assert!(twins <= log2, "n={n}: {twins} twins > {log2}");
            }
        }
    }

    #[test]
    fn two_settings_that_act_together_are_one_answer_and_each_of_two_is_found() {
        // Each of two explains a part under the threshold, together over it: the pair is the
        // answer.
        let mut count = |half: &[usize]| -> Result<Effect, ()> {
            Ok(Effect::exact(vec![if half.contains(&0) {
                0.015
            } else {
                0.0
            }]))
        };
        let found = narrow(&[0, 1], Effect::exact(vec![0.025]), 0.02, &mut count).unwrap();
        assert_eq!(found[0].settings, [0, 1]);
        // Two independent ones, on two steps: both found, each with its own step.
        let mut count = |half: &[usize]| -> Result<Effect, ()> {
            Ok(Effect::exact(vec![
                if half.contains(&1) { 0.3 } else { 0.0 },
                if half.contains(&6) { -0.2 } else { 0.0 },
            ]))
        };
        let set: Vec<usize> = (0..8).collect();
        let whole = Effect::exact(vec![0.3, -0.2]);
        let found = narrow(&set, whole, 0.02, &mut count).unwrap();
        let sets: Vec<&[usize]> = found.iter().map(|f| f.settings.as_slice()).collect();
        assert_eq!(sets, [&[1][..], &[6][..]]);
    }

    #[test]
    fn an_effect_within_its_noise_is_not_followed() {
        // Every twin counts step 0 25% apart from the target whatever it carries, with pairs
        // spread ±25% (a count that follows something other than the settings): no half is
        // followed on it. Setting 2 moves step 1 by 1.5× with a spread of 0.1%: found, in two
        // twins.
        let mut twins = 0;
        let mut count = |half: &[usize]| -> Result<Effect, ()> {
            twins += 1;
            let s1 = if half.contains(&2) { 1.5f64.ln() } else { 0.0 };
            Ok(Effect {
                log: vec![1.25f64.ln(), s1],
                noise: vec![0.25 + 0.001, 0.002],
            })
        };
        let whole = Effect {
            log: vec![1.25f64.ln(), 1.5f64.ln()],
            noise: vec![0.251, 0.002],
        };
        assert!(whole.explains_step(1, 0.02) && !whole.explains_step(0, 0.02));
        let set: Vec<usize> = (0..4).collect();
        let found = narrow(&set, whole, 0.02, &mut count).unwrap();
        let sets: Vec<&[usize]> = found.iter().map(|f| f.settings.as_slice()).collect();
        assert_eq!(sets, [&[2][..]]);
        assert_eq!(twins, 2);
        // Without the noise the first half (settings 0 and 1) would be followed on step 0.
        let noisy = Effect {
            log: vec![1.25f64.ln(), 0.0],
            noise: vec![0.0, 0.0],
        };
        assert!(noisy.explains(0.02));
    }
}
