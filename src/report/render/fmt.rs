//! Number and word formatting shared by the report's modules: ratios with two decimals, percents,
//! plurals.
//!
//! A leaf: it imports nothing of the report (so the model builder and the renderers can both use
//! it without importing each other). It must not read the model or decide anything.

/// `0.97`: the two-decimal form every relative number is printed with.
pub fn two(v: f64) -> String {
    format!("{v:.2}")
}

/// A cost ratio as a signed percent change: `1.04` → `+4%`, `0.97` → `-3%`.
pub fn signed_percent(ratio: f64) -> String {
    let p = ((ratio - 1.0) * 100.0).round();
    if p == 0.0 {
        "+0%".to_string()
    } else {
        format!("{p:+.0}%")
    }
}

/// `decided 7 of 8`: how many of some steps got a decision (a change or `unchanged`).
pub fn decided(decided: u32, steps: u32) -> String {
    format!("decided {}", of(decided, steps))
}

/// `7 of 8`.
pub fn of(part: u32, whole: u32) -> String {
    format!("{part} of {whole}")
}

/// `1 step`, `2 steps`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `2%`, `0.5%`: a fraction as a percent with as few decimals as it needs.
/// A percentage to two significant digits (`12%`, `4.4%`, `0.85%`), for estimates such as the
/// detectable change, where more digits would claim precision the noise does not have.
pub fn rough_percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    let digits = if p >= 10.0 {
        0
    } else if p >= 1.0 {
        1
    } else {
        2
    };
    format!("{p:.digits$}%")
}

pub fn percent(fraction: f64) -> String {
    let p = format!("{:.2}", fraction * 100.0);
    let p = p.trim_end_matches('0').trim_end_matches('.');
    format!("{p}%")
}

/// `0.88–0.94`; a bound beyond 100× either way shows as `<0.01` or `>100` (with 2 repeats the
/// adjusted interval can span dozens of orders of magnitude, which says only "unbounded").
pub fn interval(ci: [f64; 2]) -> String {
    let bound = |x: f64| {
        if x < 0.01 {
            "<0.01".to_string()
        } else if x > 100.0 {
            ">100".to_string()
        } else {
            two(x)
        }
    };
    format!("{}–{}", bound(ci[0]), bound(ci[1]))
}
