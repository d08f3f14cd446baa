//! The `[suite.sysbench]` section: its keys, their defaults and their checks.
//!
//! Owns turning the lab's table into a [`SysbenchConfig`] (step lengths, fixed or adaptive).
//! Must not: apply `--quick` or choose steps (that is the suite's `plan`).

use serde::Deserialize;
use toml::Spanned;

use crate::error::InputError;
use crate::range;
use crate::suites::Section;

mod defaults {
    pub fn tables() -> u32 {
        1
    }
    pub fn rows() -> u64 {
        1_000_000
    }
    pub fn read_secs() -> f64 {
        60.0
    }
    pub fn write_secs() -> f64 {
        90.0
    }
    pub fn warmup_secs() -> f64 {
        5.0
    }
    /// Adaptive steps: target relative half-width of the 95% CI of the per-second mean QPS.
    /// ±2%: on PG 15 here (docs/lab.md, Adaptive step length) ±1% was reached within 20 s by 6 of
    /// 32 steps, ±2% by 13 (all within 8 s), and the QPS stayed closer to fixed steps than two
    /// fixed runs were to each other; it also matches the default minimum effect size.
    pub const PRECISION: f64 = 0.02;
    /// Adaptive steps: the fewest measured seconds.
    pub const MIN_SECS: f64 = 10.0;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSysbench {
    #[serde(default = "defaults::tables")]
    tables: u32,
    #[serde(default = "defaults::rows")]
    rows: u64,
    #[serde(default = "defaults::read_secs")]
    read_secs: f64,
    #[serde(default = "defaults::write_secs")]
    write_secs: f64,
    #[serde(default = "defaults::warmup_secs")]
    warmup_secs: f64,
    #[serde(default = "crate::suites::yes")]
    prepared: bool,
    #[serde(default)]
    pre: bool,
    #[serde(default)]
    postwrite_secs: Option<f64>,
    #[serde(default)]
    duration: Option<Spanned<String>>,
    #[serde(default)]
    precision: Option<Spanned<f64>>,
    #[serde(default)]
    min_secs: Option<Spanned<f64>>,
    #[serde(default)]
    max_secs: Option<Spanned<f64>>,
}

/// How long a measured step runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepLength {
    /// `read_secs` / `write_secs`.
    Fixed,
    /// Until the 95% interval of the per-second mean QPS is within ±`precision` (relative),
    /// but at least `min_secs` and at most `max_secs` (default: the step's fixed length).
    Adaptive {
        precision: f64,
        min_secs: f64,
        max_secs: Option<f64>,
    },
}

/// The `[suite.sysbench]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct SysbenchConfig {
    pub tables: u32,
    pub rows: u64,
    pub read_secs: f64,
    pub write_secs: f64,
    pub warmup_secs: f64,
    pub prepared: bool,
    /// Overrides the postwrite budget (docs/workloads.md, The postwrite cleanup).
    pub postwrite_secs: Option<f64>,
    /// Run the 15 `.pre` read steps before the writes and report 5 groups.
    pub pre: bool,
    /// `duration = "fixed" | "adaptive"` with its `precision`, `min_secs`, `max_secs`.
    pub length: StepLength,
}

/// The `[suite.sysbench]` section (`None`: all defaults).
pub(super) fn sysbench(
    src: &Section<'_>,
    raw: Option<Spanned<RawSysbench>>,
) -> Result<SysbenchConfig, InputError> {
    let sysbench = match raw {
        None => RawSysbench {
            tables: defaults::tables(),
            rows: defaults::rows(),
            read_secs: defaults::read_secs(),
            write_secs: defaults::write_secs(),
            warmup_secs: defaults::warmup_secs(),
            prepared: crate::suites::yes(),
            pre: false,
            postwrite_secs: None,
            duration: None,
            precision: None,
            min_secs: None,
            max_secs: None,
        },
        Some(s) => {
            let s = s.into_inner();
            check_scale(src, &s)?;
            s
        }
    };
    let length = step_length(src, &sysbench)?;
    Ok(SysbenchConfig {
        tables: sysbench.tables,
        rows: sysbench.rows,
        read_secs: sysbench.read_secs,
        write_secs: sysbench.write_secs,
        warmup_secs: sysbench.warmup_secs,
        prepared: sysbench.prepared,
        postwrite_secs: sysbench.postwrite_secs,
        pre: sysbench.pre,
        length,
    })
}

/// `tables`, `rows` and the step lengths, each within its range; an error names the key's line.
fn check_scale(src: &Section<'_>, s: &RawSysbench) -> Result<(), InputError> {
    if !range::TABLES.contains(s.tables.into()) {
        return Err(src.key_error(
            "tables",
            format!("tables must be {}, not {}", range::TABLES.words(), s.tables),
        ));
    }
    if i64::try_from(s.rows).map_or(true, |r| !range::ROWS.contains(r)) {
        return Err(src.key_error(
            "rows",
            format!(
                "rows must be {} (the hot-points and range steps need 200), not {}",
                range::ROWS.words(),
                s.rows
            ),
        ));
    }
    src.check_secs(&[
        ("read_secs", Some(s.read_secs), range::STEP_SECS),
        ("write_secs", Some(s.write_secs), range::STEP_SECS),
        ("warmup_secs", Some(s.warmup_secs), range::WAIT_SECS),
        ("postwrite_secs", s.postwrite_secs, range::WAIT_SECS),
    ])?;
    Ok(())
}

/// `duration` and the keys of adaptive steps.
fn step_length(src: &Section<'_>, s: &RawSysbench) -> Result<StepLength, InputError> {
    let value = |v: &Option<Spanned<f64>>| v.as_ref().map(|v| *v.get_ref());
    let adaptive = match &s.duration {
        None => false,
        Some(d) => match d.get_ref().as_str() {
            "fixed" => false,
            "adaptive" => true,
            other => {
                return Err(src.error_at(
                    d.span(),
                    format!("duration must be \"fixed\" or \"adaptive\", not \"{other}\""),
                ));
            }
        },
    };
    if !adaptive {
        if let Some(v) = [&s.precision, &s.min_secs, &s.max_secs]
            .into_iter()
            .flatten()
            .next()
        {
            return Err(src.error_at(
                v.span(),
                "applies to adaptive steps only; add duration = \"adaptive\" or remove it",
            ));
        }
        return Ok(StepLength::Fixed);
    }
    let precision = value(&s.precision).unwrap_or(defaults::PRECISION);
    if let Some(p) = &s.precision
        && !(precision > 0.0 && precision < 1.0)
    {
        return Err(src.error_at(
            p.span(),
            "precision must be a fraction between 0 and 1, e.g. 0.02 for ±2%",
        ));
    }
    let min_secs = value(&s.min_secs).unwrap_or(defaults::MIN_SECS);
    let most = range::STEP_SECS.max;
    if let Some(m) = &s.min_secs
        && !(min_secs >= 3.0 && range::STEP_SECS.contains(min_secs))
    {
        return Err(src.error_at(
            m.span(),
            format!(
                "min_secs must be from 3 (the precision of fewer seconds is unknown) to {most} (7 days), not {}",
                range::shown(min_secs)
            ),
        ));
    }
    if let Some(m) = &s.max_secs
        && !(*m.get_ref() >= min_secs && range::STEP_SECS.contains(*m.get_ref()))
    {
        return Err(src.error_at(
            m.span(),
            format!(
                "max_secs must be a number of seconds from min_secs ({min_secs}) to {most} (7 days), not {}",
                range::shown(*m.get_ref())
            ),
        ));
    }
    Ok(StepLength::Adaptive {
        precision,
        min_secs,
        max_secs: value(&s.max_secs),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::lab::parse;

    fn err(text: &str) -> String {
        parse(text, "lab.toml", Path::new(".")).unwrap_err().0
    }

    const OK: &str = r#"
[lab]
name = "t"

[[target]]
name = "a"
engine = "sqlite"
settings = ["synchronous = NORMAL"]

[suite.sysbench]
rows = 1000
read_secs = 0.5
"#;

    #[test]
    fn range_errors_name_the_keys_line_and_the_range() {
        // Line 11 is `rows = 1000`, 12 `read_secs = 0.5`; the section's header is line 10.
        let cases = [
            ("rows = 1000", "rows = 0", 11, "rows must be from 200"),
            (
                "rows = 1000",
                "rows = 1000\ntables = 0",
                12,
                "tables must be from 1 to 1000",
            ),
            (
                "read_secs = 0.5",
                "read_secs = -1",
                12,
                "read_secs must be a number of seconds above 0",
            ),
            (
                "read_secs = 0.5",
                "read_secs = 0.5\nwrite_secs = 1e20",
                13,
                "at most 604800 (7 days), not 1e20",
            ),
            (
                "read_secs = 0.5",
                "read_secs = 0.5\nwrite_secs = 1e12",
                13,
                "not 1e12",
            ),
            (
                "read_secs = 0.5",
                "read_secs = 0.5\nwarmup_secs = nan",
                13,
                "warmup_secs must be a number of seconds from 0",
            ),
            (
                "read_secs = 0.5",
                "read_secs = 0.5\npostwrite_secs = inf",
                13,
                "postwrite_secs must",
            ),
            (
                "rows = 1000",
                "rows = 1_000_000_000_001",
                11,
                "to 1000000000000",
            ),
        ];
        for (from, to, line, expected) in cases {
            let e = err(&OK.replace(from, to));
            let key = to.lines().last().unwrap().split(' ').next().unwrap();
            assert!(
                e.starts_with(&format!("lab.toml:{line}: [suite.sysbench] {key}: ")),
                "{to}: {e}"
            );
            assert!(e.contains(expected), "{to}: {e}");
        }
    }

    #[test]
    fn the_longest_steps_plan_without_overflow() {
        let most = "read_secs = 604800\nwrite_secs = 604800\nwarmup_secs = 604800\npostwrite_secs = 604800\nduration = \"adaptive\"\nmax_secs = 604800\nmin_secs = 604800";
        let lab = parse(
            &OK.replace("read_secs = 0.5", most),
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        let opts = crate::plan::RunOptions {
            repeats: Some(crate::range::REPEATS.max as u32),
            ..Default::default()
        };
        let plan = crate::plan::plan_on(lab, &opts, crate::cpus::Machine::simple(2)).unwrap();
        assert!(plan.estimated().as_secs() >= 1000 * 604_800);
        assert!(plan.describe().contains("reads 168 h, writes 168 h"));
    }

    #[test]
    fn adaptive_duration_keys() {
        let lab = parse(OK, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(
            lab.suite::<SysbenchConfig>().unwrap().length,
            StepLength::Fixed
        );
        let adaptive = OK.replace(
            "read_secs = 0.5",
            "read_secs = 0.5\nduration = \"adaptive\"",
        );
        let lab = parse(&adaptive, "lab.toml", Path::new(".")).unwrap();
        assert_eq!(
            lab.suite::<SysbenchConfig>().unwrap().length,
            StepLength::Adaptive {
                precision: 0.02,
                min_secs: 10.0,
                max_secs: None
            }
        );
        let lab = parse(
            &adaptive.replace(
                "adaptive\"",
                "adaptive\"\nprecision = 0.02\nmin_secs = 5\nmax_secs = 30",
            ),
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(
            lab.suite::<SysbenchConfig>().unwrap().length,
            StepLength::Adaptive {
                precision: 0.02,
                min_secs: 5.0,
                max_secs: Some(30.0)
            }
        );
        let e = err(&OK.replace("read_secs = 0.5", "read_secs = 0.5\nprecision = 0.02"));
        assert!(
            e.starts_with(
                "lab.toml:13: [suite.sysbench] precision: applies to adaptive steps only"
            ),
            "{e}"
        );
        let e = err(&adaptive.replace("adaptive\"", "adaptive\"\nmin_secs = 2"));
        assert!(e.contains("min_secs must be from 3 (the precision"), "{e}");
        let e = err(&adaptive.replace("adaptive\"", "adaptive\"\nmax_secs = 4"));
        assert!(
            e.contains("max_secs must be a number of seconds from min_secs (10) to 604800"),
            "{e}"
        );
        let e = err(&adaptive.replace("adaptive\"", "adaptive\"\nmax_secs = 1e20"));
        assert!(e.contains("to 604800 (7 days), not 1e20"), "{e}");
        let e = err(&adaptive.replace("adaptive\"", "adaptive\"\nprecision = 1.5"));
        assert!(
            e.contains("precision must be a fraction between 0 and 1"),
            "{e}"
        );
        let e = err(&OK.replace("read_secs = 0.5", "read_secs = 0.5\nduration = \"long\""));
        assert!(
            e.starts_with(
                "lab.toml:13: [suite.sysbench] duration: duration must be \"fixed\" or \"adaptive\""
            ),
            "{e}"
        );
    }
}
