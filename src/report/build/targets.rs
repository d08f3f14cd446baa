//! Per-target summaries: the engine label, each target's summary against the base, the
//! load summaries and the series.
//!
//! Must not: aggregate measurements, judge, or do any I/O.

use super::notes::{config_lines, diff_maps};
use crate::report::model::*;
use crate::report::settings;
use crate::results::{RunData, TargetInfo};
use crate::stats::{self, mean_known};

/// `t` with its differences from `base` (none when `base` is `None`: `t` is a base or not
/// compared). `is_base`, `relative_to` and `run_id` are the caller's to set.
/// The engine as a reader names it: the product its family names from the stored record
/// ([`crate::results::EngineFacts::product`]; `mariadb (myrocks)`), else the stored family.
pub fn engine_label(t: &TargetInfo) -> String {
    match t.facts.product.is_empty() {
        true => t.engine.clone(),
        false => t.facts.product.clone(),
    }
}

pub(super) fn target_summary(t: &TargetInfo, base: Option<&TargetInfo>) -> TargetSummary {
    let (config_diff, settings_diff, env_diff) = match base {
        None => (Vec::new(), Vec::new(), Vec::new()),
        Some(base) => {
            let (bl, tl) = (
                config_lines(&base.config_text),
                config_lines(&t.config_text),
            );
            let mut config: Vec<String> = tl
                .iter()
                .filter(|l| !bl.contains(l))
                .map(|l| format!("+ {l}"))
                .collect();
            config.extend(
                bl.iter()
                    .filter(|l| !tl.contains(l))
                    .map(|l| format!("- {l}")),
            );
            let mut settings =
                if t.engine == base.engine && !t.settings.is_empty() && !base.settings.is_empty() {
                    diff_maps(&base.settings, &t.settings)
                } else {
                    Vec::new()
                };
            let set = settings::keys_set(&format!("{}\n{}", base.config_text, t.config_text));
            settings::order(&mut settings, &set);
            (config, settings, diff_maps(&base.env, &t.env))
        }
    };
    TargetSummary {
        name: t.name.clone(),
        engine: engine_label(t),
        engine_title: t.facts.title.clone(),
        in_process: t.facts.embedded,
        server_version: t.server_version.clone(),
        provenance: t.provenance.clone(),
        config_name: t.config_name.clone(),
        failed: t.failed,
        error: t.error.clone(),
        log_path: t.log_path.clone(),
        is_base: base.is_none(),
        relative_to: None,
        run_id: String::new(),
        env: t.env.clone(),
        config_diff,
        settings_diff,
        env_diff,
        placement: if t.placement.is_empty() {
            "os".into()
        } else {
            t.placement.clone()
        },
        server_cpus: t.server_cpus.clone(),
        client_cpus: t.client_cpus.clone(),
        build: t.build.clone(),
        connect: t.connect.clone(),
        unobserved: t.unobserved.clone(),
        sweep: t.sweep.clone(),
    }
}

/// The loads per target × suite × clients, averaged over repeats; loads copied from a saved
/// one (`reuse_load`) are a row of their own: a copy's seconds are not a load's.
pub(super) fn loads(data: &RunData) -> Vec<LoadSummary> {
    let mut keys: Vec<(&str, &str, u32, bool)> = Vec::new();
    for l in &data.loads {
        let k = (
            l.target.as_str(),
            l.suite.as_str(),
            l.clients,
            l.reused.is_some(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(target, suite, clients, reused)| {
            let ls: Vec<_> = (data.loads.iter())
                .filter(|l| l.target == target && l.suite == suite && l.clients == clients)
                .filter(|l| l.reused.is_some() == reused)
                .collect();
            let n = ls.len() as f64;
            LoadSummary {
                target: target.to_string(),
                suite: suite.to_string(),
                clients,
                repeats: ls.len() as u32,
                tables: ls[0].tables,
                rows_per_table: ls[0].rows_per_table,
                load_secs: ls.iter().map(|l| l.load_secs).sum::<f64>() / n,
                rows_per_sec: mean_known(ls.iter().map(|l| l.rows_per_sec)),
                index_secs: ls.iter().map(|l| l.index_secs).sum::<f64>() / n,
                db_size_bytes: mean_known(ls.iter().map(|l| l.db_size_bytes.map(|b| b as f64)))
                    .map(|b| b.round() as u64),
                reused: ls[0].reused.clone(),
            }
        })
        .collect()
}

pub(super) fn series(data: &RunData) -> Vec<SeriesSummary> {
    let mut keys: Vec<(&str, &str, u32, u32)> = Vec::new();
    for s in &data.series {
        let k = (s.target.as_str(), s.step.as_str(), s.clients, s.repeat);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(target, step, clients, repeat)| {
            let ss: Vec<_> = data
                .series
                .iter()
                .filter(|s| {
                    s.target == target
                        && s.step == step
                        && s.clients == clients
                        && s.repeat == repeat
                })
                .collect();
            let ops: Vec<f64> = ss.iter().map(|s| s.ops as f64).collect();
            let (min, max, _, median) = stats::summary(&ops).expect("at least one sample");
            SeriesSummary {
                target: target.to_string(),
                step: step.to_string(),
                clients,
                repeat,
                seconds: ss.len() as u32,
                ops_per_sec_min: min,
                ops_per_sec_median: median,
                ops_per_sec_max: max,
                p99_us_max: ss.iter().filter_map(|s| s.p99_us).reduce(f64::max),
                ops_per_sec: {
                    let mut points: Vec<(u32, f64)> =
                        ss.iter().map(|s| (s.second, s.ops as f64)).collect();
                    points.sort_by_key(|p| p.0);
                    points
                },
            }
        })
        .collect()
}
