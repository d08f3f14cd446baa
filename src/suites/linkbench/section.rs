//! The `[suite.linkbench]` section: its keys, their defaults and their checks, and the
//! operation mix (`mix = "updated" | "2011"` or a table of percentages).
//!
//! Owns turning the lab's table into a [`LinkbenchConfig`]. Must not: apply `--quick` or
//! choose steps (that is the suite's `plan`).

use serde::Deserialize;
use toml::Spanned;

use crate::error::InputError;
use crate::range;
use crate::suites::Section;

mod defaults {
    /// Node ids (about 1 GB on InnoDB per million).
    pub fn maxid1() -> i64 {
        1_000_000
    }
    pub fn one() -> i64 {
        1
    }
    pub fn requesters() -> Vec<i64> {
        vec![1]
    }
    pub fn request_secs() -> f64 {
        600.0
    }
    pub fn lb_warmup_secs() -> f64 {
        60.0
    }
    /// mdcallag's medians (LinkBench's own: 128 and 8).
    pub fn node_bytes() -> i64 {
        168
    }
    pub fn link_bytes() -> i64 {
        23
    }
    pub fn batch() -> i64 {
        1024
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLinkbench {
    #[serde(default = "defaults::maxid1")]
    maxid1: i64,
    #[serde(default = "defaults::one")]
    loaders: i64,
    #[serde(default = "defaults::requesters")]
    requesters: Vec<i64>,
    #[serde(default = "defaults::request_secs")]
    request_secs: f64,
    #[serde(default = "defaults::lb_warmup_secs")]
    warmup_secs: f64,
    #[serde(default)]
    mix: Option<RawMix>,
    #[serde(default = "defaults::node_bytes")]
    node_bytes: i64,
    #[serde(default = "defaults::link_bytes")]
    link_bytes: i64,
    #[serde(default = "defaults::batch")]
    batch: i64,
    #[serde(default)]
    partitions: i64,
    #[serde(default)]
    postwrite_secs: Option<f64>,
    #[serde(default = "crate::suites::yes")]
    prepared: bool,
}

/// `mix = "updated" | "2011"`, or `[suite.linkbench.mix]` with a percentage per operation.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawMix {
    Name(String),
    Shares(std::collections::BTreeMap<String, f64>),
}

/// The `[suite.linkbench]` section (LinkBench: docs/workloads.md, LinkBench).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkbenchConfig {
    /// Node ids 1..=maxid1.
    pub maxid1: u64,
    /// Load connections, over disjoint id ranges.
    pub loaders: u32,
    /// One request step per count.
    pub requesters: Vec<u32>,
    pub request_secs: f64,
    /// `linkbench.warm`'s length (0: none).
    pub warmup_secs: f64,
    /// Percentages of the ten operations (`crate::suites::linkbench::steps::OPS` order).
    pub mix: [f64; 10],
    pub node_bytes: u32,
    pub link_bytes: u32,
    /// Rows per load statement.
    pub batch: u32,
    /// MySQL: linktable `PARTITION BY KEY(id1)` partitions (0: none).
    pub partitions: u32,
    pub postwrite_secs: Option<f64>,
    pub prepared: bool,
}

/// The `[suite.linkbench]` section.
pub(super) fn linkbench(
    src: &Section<'_>,
    raw: Spanned<RawLinkbench>,
) -> Result<LinkbenchConfig, InputError> {
    let s = raw.into_inner();
    let [maxid1, loaders, node_bytes, link_bytes, batch, partitions] =
        linkbench_counts(&s).map_err(|(key, what)| src.key_error(key, what))?;
    if s.requesters.is_empty() || s.requesters.iter().any(|r| !range::CLIENTS.contains(*r)) {
        return Err(src.key_error(
            "requesters",
            format!(
                "requesters must be a non-empty list of connection counts {}, e.g. [1, 4]",
                range::CLIENTS.words()
            ),
        ));
    }
    src.check_secs(&[
        ("request_secs", Some(s.request_secs), range::STEP_SECS),
        ("warmup_secs", Some(s.warmup_secs), range::WAIT_SECS),
        ("postwrite_secs", s.postwrite_secs, range::WAIT_SECS),
    ])?;
    Ok(LinkbenchConfig {
        maxid1: maxid1 as u64,
        loaders: loaders as u32,
        requesters: s.requesters.iter().map(|r| *r as u32).collect(),
        request_secs: s.request_secs,
        warmup_secs: s.warmup_secs,
        mix: mix(s.mix).map_err(|e| src.key_error("mix", e))?,
        node_bytes: node_bytes as u32,
        link_bytes: link_bytes as u32,
        batch: batch as u32,
        partitions: partitions as u32,
        postwrite_secs: s.postwrite_secs,
        prepared: s.prepared,
    })
}

/// `maxid1`, `loaders`, `node_bytes`, `link_bytes`, `batch`, `partitions`, each within its
/// range; else the first that is not and what is wrong with it.
fn linkbench_counts(s: &RawLinkbench) -> Result<[i64; 6], (&'static str, &'static str)> {
    let checks: [(i64, i64, i64, &'static str); 6] = [
        (
            s.maxid1,
            1,
            1_000_000_000,
            "maxid1 must be a node count from 1 to 1000000000, e.g. 1000000",
        ),
        (
            s.loaders,
            1,
            1024,
            "loaders must be a connection count from 1 to 1024",
        ),
        (
            s.node_bytes,
            1,
            16_000_000,
            "node_bytes must be from 1 to 16000000",
        ),
        (
            s.link_bytes,
            1,
            255,
            "link_bytes must be from 1 to 255 (linktable.data is a VARCHAR(255))",
        ),
        (
            s.batch,
            1,
            4096,
            "batch must be from 1 to 4096 rows per load statement",
        ),
        (
            s.partitions,
            0,
            1024,
            "partitions must be from 0 (none) to 1024",
        ),
    ];
    let mut out = [0; 6];
    for (o, (v, lo, hi, what)) in out.iter_mut().zip(checks) {
        if !(lo..=hi).contains(&v) {
            // Each message starts with its key.
            return Err((what.split(' ').next().unwrap_or(what), what));
        }
        *o = v;
    }
    Ok(out)
}

/// `mix`: a named mix, or percentages per operation (the rest 0) that sum to 100.
fn mix(raw: Option<RawMix>) -> Result<[f64; 10], String> {
    use crate::suites::linkbench::steps::{Mix, OPS};
    match raw {
        None => Ok(Mix::UPDATED.0),
        Some(RawMix::Name(n)) => match n.as_str() {
            "updated" | "default" => Ok(Mix::UPDATED.0),
            "2011" => Ok(Mix::Y2011.0),
            _ => Err(format!(
                "mix = \"{n}\": expected \"updated\" (the default), \"2011\", or a table of percentages per operation"
            )),
        },
        Some(RawMix::Shares(map)) => {
            let mut out = [0.0; 10];
            for (k, v) in &map {
                let i = OPS.iter().position(|o| o == k).ok_or_else(|| {
                    format!(
                        "mix: unknown operation `{k}`; the operations are {}",
                        OPS.join(", ")
                    )
                })?;
                if !(v.is_finite() && *v >= 0.0) {
                    return Err(format!("mix: {k} = {v} is not a percentage"));
                }
                out[i] = *v;
            }
            let sum: f64 = out.iter().sum();
            if (sum - 100.0).abs() > 0.01 {
                return Err(format!("mix: the percentages sum to {sum}, not 100"));
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::lab::parse;
    use crate::suites::sysbench::SysbenchConfig;

    fn err(text: &str) -> String {
        parse(text, "lab.toml", Path::new(".")).unwrap_err().0
    }

    const LINKBENCH: &str = r#"
[lab]
name = "t"

[[target]]
name = "a"
engine = "sqlite"

[suite.linkbench]
maxid1 = 5000
requesters = [1, 4]
"#;

    #[test]
    fn linkbench_suite_alone_with_its_mix() {
        let lab = parse(LINKBENCH, "lab.toml", Path::new(".")).unwrap();
        assert!(
            lab.suite::<SysbenchConfig>().is_none(),
            "a LinkBench lab runs only LinkBench"
        );
        let lb = lab.suite::<LinkbenchConfig>().cloned().unwrap();
        assert_eq!((lb.maxid1, lb.requesters.clone()), (5000, vec![1, 4]));
        assert_eq!(lb.mix, crate::suites::linkbench::steps::Mix::UPDATED.0);
        let y = parse(
            &LINKBENCH.replace("maxid1 = 5000", "mix = \"2011\""),
            "lab.toml",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(
            y.suite::<LinkbenchConfig>().cloned().unwrap().mix,
            crate::suites::linkbench::steps::Mix::Y2011.0
        );
        let table = format!("{LINKBENCH}\n[suite.linkbench.mix]\ngetnode = 60\ngetlinklist = 40\n");
        let t = parse(&table, "lab.toml", Path::new(".")).unwrap();
        let mix = t.suite::<LinkbenchConfig>().cloned().unwrap().mix;
        assert_eq!((mix[6], mix[5], mix[0]), (60.0, 40.0, 0.0));
    }

    #[test]
    fn linkbench_bad_input_is_named() {
        let e = err(&LINKBENCH.replace("maxid1 = 5000", "maxidl = 5000"));
        assert!(
            e.contains("[suite.linkbench] unknown field `maxidl`"),
            "{e}"
        );
        let e = err(&LINKBENCH.replace("[1, 4]", "[]"));
        assert!(e.contains("requesters must be a non-empty list"), "{e}");
        let e = err(&LINKBENCH.replace("maxid1 = 5000", "mix = \"2012\""));
        assert!(e.contains("mix = \"2012\": expected \"updated\""), "{e}");
        let e = err(&format!(
            "{LINKBENCH}\n[suite.linkbench.mix]\ngetnode = 60\n"
        ));
        assert!(e.contains("the percentages sum to 60, not 100"), "{e}");
        let e = err(&format!(
            "{LINKBENCH}\n[suite.linkbench.mix]\ngetnodes = 100\n"
        ));
        assert!(e.contains("mix: unknown operation `getnodes`"), "{e}");
        let e = err(&LINKBENCH.replace("maxid1 = 5000", "link_bytes = 300"));
        assert!(e.contains("link_bytes must be from 1 to 255"), "{e}");
    }
}
