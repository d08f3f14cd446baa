//! Statistics shared by the runner and the reports: means, medians, ratios, the repeat-level
//! confidence interval used for verdicts, and the precision of a per-second series (adaptive
//! step length, within-step noise).
//!
//! A leaf: owns only arithmetic on `f64`/`Option<f64>`. It must not know about targets, steps,
//! formats or the results records, and must not do any I/O.

/// Arithmetic mean of the known values; `None` when none is known.
pub fn mean_known<I: IntoIterator<Item = Option<f64>>>(values: I) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .flatten()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Median of `values` (mean of the two middle values for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Min, max, mean and median of `values`; `None` when empty.
pub fn summary(values: &[f64]) -> Option<(f64, f64, f64, f64)> {
    let med = median(values)?;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avg = values.iter().sum::<f64>() / values.len() as f64;
    Some((min, max, avg, med))
}

/// `target / base` with the report rules: missing on either side is `None`, `0/0 = 1`,
/// `x/0 = None` (no infinity), and non-finite results are `None`.
pub fn ratio(target: Option<f64>, base: Option<f64>) -> Option<f64> {
    let (t, b) = (target?, base?);
    if b == 0.0 {
        return (t == 0.0).then_some(1.0);
    }
    let r = t / b;
    r.is_finite().then_some(r)
}

/// Two-sided 95% critical value of Student's t for `df` degrees of freedom (1.96 beyond 30).
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => 1.96,
    }
}

/// The `p` quantile of Student's t distribution with `df` (> 0, not necessarily whole) degrees
/// of freedom; NaN for `df <= 0` or `p` outside (0, 1).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !(df > 0.0 && p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// What repeat-level ratios say about a change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Geometric mean of the ratios.
    pub geo_mean: f64,
    /// 95% confidence interval of the geometric mean.
    pub ci95: [f64; 2],
    /// `regression`, `improvement` or `within noise`.
    pub verdict: &'static str,
    /// The repeats disagree by more than the effect (see [`noise`]).
    pub unstable: bool,
}

/// Spread of the ratios below which a step is never called unstable.
pub const UNSTABLE_FLOOR: f64 = 0.05;

/// Confidence interval and verdict from per-repeat ratios `r_i = qps_target_i / qps_base_i`.
///
/// Method: `l_i = ln r_i`; mean `m` and sample standard deviation `s` (n−1) of the `l_i`;
/// CI = `exp(m ± t(0.975, n−1) · s / √n)`. Verdict: `regression` when the CI's upper bound
/// is < 1, `improvement` when its lower bound is > 1, else `within noise`. Unstable when the
/// spread `max r − min r` exceeds both `|exp(m) − 1|` and [`UNSTABLE_FLOOR`].
/// Needs at least two positive finite ratios; otherwise `None`.
pub fn noise(ratios: &[f64]) -> Option<Noise> {
    if ratios.len() < 2 || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return None;
    }
    let n = ratios.len() as f64;
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let m = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|l| (l - m).powi(2)).sum::<f64>() / (n - 1.0);
    let half = t95(ratios.len() - 1) * var.sqrt() / n.sqrt();
    let ci95 = [(m - half).exp(), (m + half).exp()];
    let verdict = if ci95[1] < 1.0 {
        "regression"
    } else if ci95[0] > 1.0 {
        "improvement"
    } else {
        "within noise"
    };
    let geo_mean = m.exp();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(*r), hi.max(*r))
        });
    let spread = hi - lo;
    let unstable = spread > (geo_mean - 1.0).abs() && spread > UNSTABLE_FLOOR;
    Some(Noise {
        geo_mean,
        ci95,
        verdict,
        unstable,
    })
}

/// How precisely a per-second series pins down its mean: the within-step statistics behind
/// adaptive step length and the "too short / too noisy" flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesPrecision {
    /// Number of samples (whole seconds).
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub sd: f64,
    /// Coefficient of variation: `sd / mean`.
    pub cv: f64,
    /// Lag-1 autocorrelation of the series (can be negative).
    pub rho1: f64,
    /// Effective number of independent samples: `n (1 − ρ) / (1 + ρ)` with `ρ = max(0, rho1)`,
    /// the AR(1) approximation of the variance of a mean of correlated samples.
    pub n_eff: f64,
    /// Half-width of the 95% confidence interval of the mean, relative to the mean:
    /// `t(0.975, n_eff − 1) · sd / √n_eff / mean`; infinite when `n_eff < 2`.
    pub half_width: f64,
}

/// [`SeriesPrecision`] of `xs`; `None` with fewer than 3 samples or a mean that is not positive.
///
/// Per-second throughput is autocorrelated (a slow second tends to follow a slow second), so
/// the plain `t · s / √n` interval would be too narrow; the AR(1) correction shrinks `n` to the
/// number of effectively independent seconds. Negative autocorrelation is not credited (ρ is
/// clamped at 0), so the interval is never narrower than the independent-samples one.
pub fn series_precision(xs: &[f64]) -> Option<SeriesPrecision> {
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    if !(mean > 0.0 && mean.is_finite()) {
        return None;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    let sd = (ss / (nf - 1.0)).sqrt();
    let rho1 = if ss > 0.0 {
        xs.windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / ss
    } else {
        0.0
    };
    let rho = rho1.clamp(0.0, 0.99);
    let n_eff = nf * (1.0 - rho) / (1.0 + rho);
    let half_width = if n_eff < 2.0 {
        f64::INFINITY
    } else {
        t_quantile(0.975, n_eff - 1.0) * sd / n_eff.sqrt() / mean
    };
    Some(SeriesPrecision {
        n,
        mean,
        sd,
        cv: sd / mean,
        rho1,
        n_eff,
        half_width,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_rules() {
        assert_eq!(ratio(Some(0.0), Some(0.0)), Some(1.0));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
        assert_eq!(ratio(Some(2.0), None), None);
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(0.0), Some(2.0)), Some(0.0));
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn summary_stats() {
        assert_eq!(summary(&[0.9, 1.1, 1.0, 1.2]), Some((0.9, 1.2, 1.05, 1.05)));
        assert_eq!(summary(&[]), None);
    }

    #[test]
    fn mean_ignores_none() {
        assert_eq!(mean_known([Some(1.0), None, Some(3.0)]), Some(2.0));
        assert_eq!(mean_known([None, None]), None);
    }

    #[test]
    fn t_table_edges() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(2), 4.303);
        assert_eq!(t95(30), 2.042);
        assert_eq!(t95(31), 1.96);
    }

    #[test]
    fn hand_computed_regression() {
        // ln 0.90, ln 0.92, ln 0.91: mean -0.0943509, s = 0.0109895, se = 0.0063448,
        // t(2) = 4.303, half width 0.027302 -> CI [0.88546, 0.93515].
        let n = noise(&[0.90, 0.92, 0.91]).unwrap();
        assert!((n.geo_mean - 0.909967).abs() < 1e-5, "{n:?}");
        assert!((n.ci95[0] - 0.88546).abs() < 1e-4, "{n:?}");
        assert!((n.ci95[1] - 0.93515).abs() < 1e-4, "{n:?}");
        assert_eq!(n.verdict, "regression");
        assert!(!n.unstable);
    }

    #[test]
    fn improvement_noise_and_unstable() {
        assert_eq!(noise(&[1.10, 1.12, 1.11]).unwrap().verdict, "improvement");
        let wide = noise(&[0.80, 1.25]).unwrap();
        assert_eq!(wide.verdict, "within noise");
        assert!(wide.unstable);
        let flat = noise(&[1.0, 1.01, 0.99]).unwrap();
        assert_eq!(flat.verdict, "within noise");
        assert!(!flat.unstable, "spread under the floor is not unstable");
    }

    #[test]
    fn one_repeat_has_no_verdict() {
        assert_eq!(noise(&[0.9]), None);
        assert_eq!(noise(&[]), None);
        assert_eq!(noise(&[0.9, 0.0]), None);
    }

    #[test]
    fn t_quantiles_match_scipy() {
        // scipy.stats.t.ppf(p, df)
        for (p, df, want) in [
            (0.975, 4.0, 2.7764451052),
            (0.975, 7.3, 2.3450667365),
            (0.999, 2.5, 13.8221931109),
        ] {
            let got = t_quantile(p, df);
            assert!(
                (got - want).abs() < 1e-6,
                "t({p}, {df}) = {got}, scipy {want}"
            );
        }
        assert!(t_quantile(0.975, 0.0).is_nan());
        assert!(
            (t_quantile(0.975, 4.0) - t95(4)).abs() < 1e-3,
            "the table agrees"
        );
    }

    #[test]
    fn series_precision_matches_numpy_scipy_and_statsmodels() {
        // Independently: numpy mean/std(ddof=1), statsmodels acf(nlags=1) for rho1,
        // scipy.stats.t.ppf(0.975, n_eff - 1) for the quantile.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-8 * b.abs().max(1.0);
        let anti =
            series_precision(&[100.0, 102.0, 98.0, 101.0, 99.0, 103.0, 97.0, 100.0]).unwrap();
        assert_eq!(anti.n, 8);
        assert!(close(anti.mean, 100.0) && close(anti.sd, 2.0) && close(anti.cv, 0.02));
        assert!(close(anti.rho1, -0.6785714286), "{anti:?}");
        assert!(
            close(anti.n_eff, 8.0),
            "negative autocorrelation is not credited"
        );
        assert!(close(anti.half_width, 0.01672041843), "{anti:?}");
        let xs = [
            100.0, 101.0, 103.0, 104.0, 102.0, 99.0, 98.0, 97.0, 99.0, 101.0, 104.0, 106.0,
        ];
        let pos = series_precision(&xs).unwrap();
        assert!(
            close(pos.mean, 101.1666667) && close(pos.sd, 2.724746305),
            "{pos:?}"
        );
        assert!(
            close(pos.cv, 0.02693324189) && close(pos.rho1, 0.5914965986),
            "{pos:?}"
        );
        assert!(close(pos.n_eff, 3.08014533), "{pos:?}");
        assert!((pos.half_width - 0.06365069598).abs() < 1e-7, "{pos:?}");
    }

    #[test]
    fn series_precision_edges() {
        assert_eq!(series_precision(&[1.0, 2.0]), None, "too few samples");
        assert_eq!(series_precision(&[0.0, 0.0, 0.0]), None, "no throughput");
        let flat = series_precision(&[5.0; 4]).unwrap();
        assert_eq!(
            (flat.sd, flat.rho1, flat.n_eff, flat.half_width),
            (0.0, 0.0, 4.0, 0.0)
        );
        // Strong positive autocorrelation leaves fewer than 2 effective samples.
        let step = [1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0, 9.0];
        let trend = series_precision(&step).unwrap();
        assert!((trend.rho1 - 0.7).abs() < 1e-12, "{trend:?}");
        assert!(
            trend.n_eff < 2.0 && trend.half_width.is_infinite(),
            "{trend:?}"
        );
    }
}
