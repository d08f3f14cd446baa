//! Reading one run back from the store as [`RunData`], in the order it was written.
//!
//! Owns the conversion of stored rows into the result records (JSON columns parsed, unsigned
//! counts restored, a latency present when its p50 is). Must not: write, or depend on a
//! backend: it reads through [`Db`] with the queries both backends run.

use std::collections::HashMap;

use anyhow::{Context, Result};

use super::sql::{Db, Row};
use crate::results::{
    ErrorCounts, HostInfo, Latency, LoadResult, Measurement, RunData, RunInfo, SecondSample,
    Settling, StepProfile, TargetInfo, Values, metrics::METRICS,
};

/// Everything stored about one run.
pub fn run(db: &mut dyn Db, run_id: &str) -> Result<RunData> {
    Ok(RunData {
        run: run_info(db, run_id)?,
        targets: targets_of(db, run_id)?,
        loads: loads_of(db, run_id)?,
        measurements: measurements_of(db, run_id)?,
        series: series_of(db, run_id)?,
        floors: Vec::new(),
    })
}

/// The rows of `sql` (one parameter: the run id), each converted by `f`.
fn rows_of<T>(
    db: &mut dyn Db,
    sql: &str,
    run_id: &str,
    f: impl Fn(&Row) -> Result<T>,
) -> Result<Vec<T>> {
    db.query(sql, &[run_id.into()])?.iter().map(f).collect()
}

/// A JSON column, or the type's default when it does not parse (as the store always read it).
fn json<T: serde::de::DeserializeOwned + Default>(r: &Row, name: &str) -> Result<T> {
    let text: Option<String> = r.col(name)?;
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

/// The run's own record.
fn run_info(db: &mut dyn Db, run_id: &str) -> Result<RunInfo> {
    let rows = rows_of(db, "SELECT * FROM runs WHERE id = ?1", run_id, |r| {
        Ok(RunInfo {
            id: r.col("id")?,
            lab: r.col("lab")?,
            lab_text: r.col("lab_text")?,
            started: r.col("started")?,
            finished: r.col("finished")?,
            complete: r.col("complete")?,
            quick: r.col("quick")?,
            host: HostInfo {
                cpu_model: r.col("host_cpu_model")?,
                cores: r.col("host_cores")?,
                memory_bytes: r.col("host_memory_bytes")?,
                kernel: r.col("host_kernel")?,
                online_cpus: r.col("host_online_cpus")?,
                usable_cpus: r.col("host_usable_cpus")?,
                cpu_topology: json(r, "host_cpu_topology_json")?,
            },
            dbdelta_version: r.col("dbdelta_version")?,
            min_effect: r.col("min_effect")?,
            looks: r.col("looks")?,
            profiling: json(r, "profiling_json")?,
            invocations: Vec::new(),
        })
    })?;
    rows.into_iter()
        .next()
        .with_context(|| format!("no run {run_id} in the store"))
}

/// The run's targets in lab order.
fn targets_of(db: &mut dyn Db, run_id: &str) -> Result<Vec<TargetInfo>> {
    let sql = "SELECT * FROM targets WHERE run_id = ?1 ORDER BY position";
    let mut targets = rows_of(db, sql, run_id, |r| {
        Ok(TargetInfo {
            name: r.col("name")?,
            engine: r.col("engine")?,
            server_version: r.col("server_version")?,
            config_name: r.col("config_name")?,
            config_text: r.col("config_text")?,
            env: json(r, "env_json")?,
            settings: json(r, "settings_json")?,
            failed: r.col("failed")?,
            error: r.col("error")?,
            log_path: r.col("log_path")?,
            placement: r.col("placement")?,
            server_cpus: r.col("server_cpus")?,
            client_cpus: r.col("client_cpus")?,
            build: json(r, "build_json")?,
            connect: r.col("connect")?,
            unobserved: r.col("unobserved")?,
            sweep: r.col("sweep")?,
            provenance: json(r, "provenance_json")?,
            facts: Default::default(),
        })
    })?;
    // What a reader needs of each engine, from its family (the report knows no engine).
    for t in &mut targets {
        t.facts = crate::engine::facts(t);
    }
    Ok(targets)
}

/// The run's loads in execution order.
fn loads_of(db: &mut dyn Db, run_id: &str) -> Result<Vec<LoadResult>> {
    let sql = "SELECT * FROM loads WHERE run_id = ?1 ORDER BY rowid";
    rows_of(db, sql, run_id, |r| {
        Ok(LoadResult {
            target: r.col("target")?,
            suite: r.col("suite")?,
            clients: r.col("clients")?,
            repeat: r.col("repeat")?,
            tables: r.col("tables")?,
            rows_per_table: r.col("rows_per_table")?,
            load_secs: r.col("load_secs")?,
            rows_per_sec: r.col("rows_per_sec")?,
            index_secs: r.col("index_secs")?,
            db_size_bytes: r.col("db_size_bytes")?,
            reused: r.col("reused")?,
        })
    })
}

/// The run's per-second series.
fn series_of(db: &mut dyn Db, run_id: &str) -> Result<Vec<SecondSample>> {
    let sql = "SELECT * FROM series WHERE run_id = ?1 ORDER BY rowid";
    rows_of(db, sql, run_id, |r| {
        Ok(SecondSample {
            target: r.col("target")?,
            step: r.col("step")?,
            clients: r.col("clients")?,
            repeat: r.col("repeat")?,
            second: r.col("second")?,
            ops: r.col("ops")?,
            p99_us: r.col("p99_us")?,
            max_us: r.col("max_us")?,
        })
    })
}

/// The run's measurements in execution order, each with its operation rows and profile.
fn measurements_of(db: &mut dyn Db, run_id: &str) -> Result<Vec<Measurement>> {
    let sql = "SELECT * FROM measurements WHERE run_id = ?1 ORDER BY rowid";
    let mut out = rows_of(db, sql, run_id, measurement)?;
    attach_operations(db, run_id, &mut out)?;
    attach_profiles(db, run_id, &mut out)?;
    attach_functions(db, run_id, &mut out)?;
    attach_explanations(db, run_id, &mut out)?;
    Ok(out)
}

fn measurement(r: &Row) -> Result<Measurement> {
    let latency_us = match r.col::<Option<f64>>("lat_p50_us")? {
        None => None,
        Some(p50) => Some(Latency {
            min: r.col("lat_min_us")?,
            p50,
            p90: r.col("lat_p90_us")?,
            p95: r.col("lat_p95_us")?,
            p99: r.col("lat_p99_us")?,
            p999: r.col("lat_p999_us")?,
            max: r.col("lat_max_us")?,
            mean: r.col("lat_mean_us")?,
        }),
    };
    Ok(Measurement {
        target: r.col("target")?,
        suite: r.col("suite")?,
        step: r.col("step")?,
        step_index: r.col("step_index")?,
        group: r.col("grp")?,
        statements_per_event: r.col("statements_per_event")?,
        clients: r.col("clients")?,
        repeat: r.col("repeat")?,
        tables: r.col("tables")?,
        rows_per_table: r.col("rows_per_table")?,
        seconds: r.col("seconds")?,
        ops: r.col("ops")?,
        events: r.col("events")?,
        errors: ErrorCounts {
            retryable: r.col("errors_retryable")?,
            reconnect: r.col("errors_reconnect")?,
            fatal: r.col("errors_fatal")?,
        },
        qps: r.col("qps")?,
        tps: r.col("tps")?,
        latency_us,
        ..costs(r)?
    })
}

/// A measurement's costs, placement evidence and step-length fields (the rest of its row).
fn costs(r: &Row) -> Result<Measurement> {
    Ok(Measurement {
        values: metric_values(r)?,
        client_bound: r.col("client_bound")?,
        failed: r.col("failed")?,
        error: r.col("error")?,
        warm: r.col("warm")?,
        rows_per_statement: json::<Option<Vec<f64>>>(r, "rows_per_statement")?,
        instruction_pairs: json(r, "server_instructions_pairs")?,
        server_cpus_seen: r.col("server_cpus_seen")?,
        server_cpus_allowed: r.col("server_cpus_allowed")?,
        client_cpus_seen: r.col("client_cpus_seen")?,
        client_cpus_allowed: r.col("client_cpus_allowed")?,
        wakeup_bound: r.col("wakeup_bound")?,
        duration_rule: r.col("duration_rule")?,
        precision_target: r.col("precision_target")?,
        precision_achieved: r.col("precision_achieved")?,
        stop_reason: r.col("stop_reason")?,
        settling: json::<Option<Settling>>(r, "settling_json")?,
        below_resolution: json::<Vec<String>>(r, "below_resolution")?,
        ..Default::default()
    })
}

/// A measurement's metrics, each from the column named by its id (whole numbers as integers).
fn metric_values(r: &Row) -> Result<Values> {
    let mut out = Values::default();
    for d in METRICS {
        let v = if d.integer() {
            r.col::<Option<u64>>(d.id)?.map(|v| v as f64)
        } else {
            r.col::<Option<f64>>(d.id)?
        };
        out.set(d.metric, v);
    }
    Ok(out)
}

/// (target, suite, step, clients, repeat): what identifies a measurement within a run.
type StepKey = (String, String, String, u32, u32);

fn step_key(m: &Measurement) -> StepKey {
    (
        m.target.clone(),
        m.suite.clone(),
        m.step.clone(),
        m.clients,
        m.repeat,
    )
}

fn row_key(r: &Row) -> Result<StepKey> {
    Ok((
        r.col("target")?,
        r.col("suite")?,
        r.col("step")?,
        r.col("clients")?,
        r.col("repeat")?,
    ))
}

/// Each measurement's role × operation rows (measurement v2), in their stored order.
fn attach_operations(db: &mut dyn Db, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
    let sql = "SELECT target, suite, step, clients, repeat, op_json FROM step_ops
               WHERE run_id = ?1 ORDER BY target, suite, step, clients, repeat, position";
    let mut by_key: HashMap<StepKey, Vec<_>> = HashMap::new();
    for r in db.query(sql, &[run_id.into()])? {
        let json: String = r.col("op_json")?;
        let op = serde_json::from_str(&json).context("a stored operation row")?;
        by_key.entry(row_key(&r)?).or_default().push(op);
    }
    for m in ms {
        m.operations = by_key.remove(&step_key(m)).unwrap_or_default();
    }
    Ok(())
}

/// Each counted step's per-function instructions/op, on the row that holds its count.
fn attach_functions(db: &mut dyn Db, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
    let by_key = json_by_step(db, run_id, ("step_functions", "functions_json"))?;
    attach(ms, by_key, |m, f| m.functions = f);
    Ok(())
}

/// Each explained step's split into code and configuration (`dbdelta explain`), on the row
/// that holds its count.
fn attach_explanations(db: &mut dyn Db, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
    let by_key = json_by_step(db, run_id, ("explanations", "explanation_json"))?;
    attach(ms, by_key, |m, e| m.explanation = e);
    Ok(())
}

/// `table`'s JSON `column` of run `run_id`, parsed, by the step it is keyed as.
fn json_by_step<T: serde::de::DeserializeOwned + Default>(
    db: &mut dyn Db,
    run_id: &str,
    (table, column): (&str, &str),
) -> Result<HashMap<StepKey, T>> {
    let sql = format!("SELECT * FROM {table} WHERE run_id = ?1");
    let mut by_key = HashMap::new();
    for r in db.query(&sql, &[run_id.into()])? {
        by_key.insert(row_key(&r)?, json(&r, column)?);
    }
    Ok(by_key)
}

/// Give each measurement its value of `by_key` (`None` where there is none).
fn attach<T>(
    ms: &mut [Measurement],
    mut by_key: HashMap<StepKey, T>,
    set: impl Fn(&mut Measurement, Option<T>),
) {
    for m in ms {
        let v = by_key.remove(&step_key(m));
        set(m, v);
    }
}

/// Each profiled measurement's folded profile.
fn attach_profiles(db: &mut dyn Db, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
    let sql = "SELECT * FROM profiles WHERE run_id = ?1";
    let mut by_key: HashMap<StepKey, StepProfile> = HashMap::new();
    for r in db.query(sql, &[run_id.into()])? {
        let profile = StepProfile {
            samples: r.col("samples")?,
            unresolved: r.col("unresolved_samples")?,
            unresolved_modules: json(&r, "unresolved_modules_json")?,
            folded: r.col("folded")?,
            error: r.col("error")?,
        };
        by_key.insert(row_key(&r)?, profile);
    }
    for m in ms {
        m.profile = by_key.remove(&step_key(m));
    }
    Ok(())
}
