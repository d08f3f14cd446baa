//! The two figures the output table takes over the rounds: the median and the min–max spread.
//! Pure arithmetic and formatting of numbers; it must not print or measure.

use dbdelta::progress::thousands;

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub(crate) fn spread(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if digits == 0 {
        format!("{}–{}", thousands(min), thousands(max))
    } else {
        format!("{min:.digits$}–{max:.digits$}")
    }
}
