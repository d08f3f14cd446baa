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

/// A set of settings (indices into the carried list) and what it explains per step.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub settings: Vec<usize>,
    /// Per step, `ln(target / twin with these settings at the base's values)`.
    pub effect: Vec<f64>,
}

/// Whether `effect` reaches `threshold` on some step.
pub fn explains(effect: &[f64], threshold: f64) -> bool {
    effect.iter().any(|e| e.abs() >= threshold)
}

/// Narrow `set` (which explains `effect`) down to the settings that explain it; `count(half)`
/// counts a twin with `half`'s settings at the base's values and returns its effect.
pub fn narrow<E>(
    set: &[usize],
    effect: Vec<f64>,
    threshold: f64,
    count: &mut impl FnMut(&[usize]) -> Result<Vec<f64>, E>,
) -> Result<Vec<Found>, E> {
    if set.len() <= 1 {
        return Ok(vec![Found {
            settings: set.to_vec(),
            effect,
        }]);
    }
    let (a, b) = set.split_at(set.len() / 2);
    let ea = count(a)?;
    let eb: Vec<f64> = effect.iter().zip(&ea).map(|(w, a)| w - a).collect();
    let mut out = Vec::new();
    if explains(&ea, threshold) {
        out.extend(narrow(a, ea, threshold, count)?);
    }
    if explains(&eb, threshold) {
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
        let mut count = |half: &[usize]| -> Result<Vec<f64>, ()> {
            twins += 1;
            Ok(vec![if half.contains(&culprit) {
                1.6f64.ln()
            } else {
                0.0
            }])
        };
        let set: Vec<usize> = (0..n).collect();
        let found = narrow(&set, vec![1.6f64.ln()], 1.02f64.ln(), &mut count).unwrap();
        (found, twins)
    }

    #[test]
    fn one_setting_is_found_in_log2_n_twins() {
        for n in [1, 2, 3, 7, 8, 100, 333] {
            for culprit in [0, n / 2, n - 1] {
                let (found, twins) = one_culprit(n, culprit);
                assert_eq!(found.len(), 1);
                assert_eq!(found[0].settings, [culprit], "n={n}");
                assert!((found[0].effect[0] - 1.6f64.ln()).abs() < 1e-12);
                let log2 = (n as f64).log2().ceil() as usize;
                assert!(twins <= log2, "n={n}: {twins} twins > {log2}");
            }
        }
    }

    #[test]
    fn two_settings_that_act_together_are_one_answer_and_each_of_two_is_found() {
        // Each of two explains a part under the threshold, together over it: the pair is the
        // answer.
        let mut count = |half: &[usize]| -> Result<Vec<f64>, ()> {
            Ok(vec![if half.contains(&0) { 0.015 } else { 0.0 }])
        };
        let found = narrow(&[0, 1], vec![0.025], 0.02, &mut count).unwrap();
        assert_eq!(found[0].settings, [0, 1]);
        // Two independent ones, on two steps: both found, each with its own step.
        let mut count = |half: &[usize]| -> Result<Vec<f64>, ()> {
            Ok(vec![
                if half.contains(&1) { 0.3 } else { 0.0 },
                if half.contains(&6) { -0.2 } else { 0.0 },
            ])
        };
        let set: Vec<usize> = (0..8).collect();
        let found = narrow(&set, vec![0.3, -0.2], 0.02, &mut count).unwrap();
        let sets: Vec<&[usize]> = found.iter().map(|f| f.settings.as_slice()).collect();
        assert_eq!(sets, [&[1][..], &[6][..]]);
    }
}
