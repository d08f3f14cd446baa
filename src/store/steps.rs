//! A step's rows, written the moment the step ends: its `measurements` row, its per-second
//! `series`, its `step_ops` (every role × operation type, with their histograms) and its
//! `profiles` row, in one transaction; a cell's load (`loads`); and what a counting pass adds
//! later to the rows of a step's first repeat (instructions/op, per-function costs, an
//! operation type counted alone).
//!
//! Owns those tables' columns as written (a column per metric, from the metric table). Must
//! not: compute a metric (the runner fills the `Measurement`), or read rows back (`read` does).

use anyhow::Result;

use super::Store;
use super::resume::CellKey;
use super::sql::{Db, Lock, Tx, Value, upsert};
use crate::results::{
    Latency, LoadResult, Measurement, OpHistograms, SecondSample, Values, metrics::METRICS,
};

/// The key columns of the tables a step writes (their primary keys).
const MEASUREMENT_KEY: &[&str] = &["run_id", "target", "suite", "step", "clients", "repeat"];
const SERIES_KEY: &[&str] = &["run_id", "target", "step", "clients", "repeat", "second"];
const STEP_OPS_KEY: &[&str] = &[
    "run_id", "target", "suite", "step", "clients", "repeat", "position",
];
const LOAD_KEY: &[&str] = &["run_id", "target", "suite", "clients", "repeat"];

impl Store {
    pub fn save_load(&mut self, run_id: &str, l: &LoadResult) -> Result<()> {
        let row = vec![
            ("run_id", run_id.into()),
            ("target", (&l.target).into()),
            ("suite", (&l.suite).into()),
            ("clients", l.clients.into()),
            ("repeat", l.repeat.into()),
            ("tables", l.tables.into()),
            ("rows_per_table", l.rows_per_table.into()),
            ("load_secs", l.load_secs.into()),
            ("rows_per_sec", l.rows_per_sec.into()),
            ("index_secs", l.index_secs.into()),
            ("db_size_bytes", l.db_size_bytes.into()),
            ("reused", l.reused.as_deref().into()),
        ];
        upsert(&mut **self.db.get_mut(), "loads", LOAD_KEY, row)
    }

    /// Persist one step: its measurement, per-second series and histogram, in one transaction.
    pub fn save_step(
        &mut self,
        run_id: &str,
        m: &Measurement,
        series: &[SecondSample],
        histogram: &[u8],
        op_histograms: &[OpHistograms],
    ) -> Result<()> {
        let db = &mut **self.db.get_mut();
        let mut tx = Tx::begin(db, Lock::Shared)?;
        upsert(
            &mut *tx,
            "measurements",
            MEASUREMENT_KEY,
            measurement_row(run_id, m, histogram)?,
        )?;
        insert_series(&mut *tx, run_id, series)?;
        insert_operations(&mut *tx, run_id, m, op_histograms)?;
        insert_profile(&mut *tx, run_id, m)?;
        tx.commit()
    }

    /// Set what a counting pass measured of `step` (the metrics in `values` that it has) on
    /// the first stored repeat of target × suite × clients; false when there is no such row
    /// (the step failed or did not run).
    pub fn set_counted(
        &mut self,
        key: &CellKey,
        run_id: &str,
        step: &str,
        values: &[(crate::results::Metric, Option<f64>)],
        pairs: Option<&crate::results::InstructionPairs>,
    ) -> Result<bool> {
        // One server start's pairs join those the step's other starts stored, and the values
        // are taken from them all.
        let merged = match pairs.filter(|p| !p.starts.is_empty()) {
            Some(p) => Some(p.merged_with(self.counted_pairs(key, run_id, step)?.as_ref())),
            None => pairs.cloned(),
        };
        let from_pairs;
        let values = match (&merged, pairs) {
            (Some(m), Some(p)) if m != p => {
                from_pairs = m.metric_values();
                &from_pairs[..]
            }
            _ => values,
        };
        let pairs = merged.as_ref();
        let mut sets: Vec<String> = (values.iter().enumerate())
            .map(|(i, (m, _))| format!("{} = ?{}", m.id(), i + 6))
            .collect();
        sets.push(format!("server_instructions_pairs = ?{}", values.len() + 6));
        let sql = format!(
            "UPDATE measurements SET {} WHERE run_id = ?1 AND target = ?2 AND suite = ?3 \
             AND step = ?4 AND clients = ?5 AND repeat = (SELECT MIN(repeat) FROM measurements \
             WHERE run_id = ?1 AND target = ?2 AND suite = ?3 AND step = ?4 AND clients = ?5)",
            sets.join(", ")
        );
        let mut params = step_params(run_id, key, step);
        params.extend(values.iter().map(|(_, v)| Value::from(*v)));
        let pairs = pairs.map(serde_json::to_string).transpose()?;
        params.push(pairs.into());
        Ok(self.db.get_mut().execute(&sql, &params)? > 0)
    }

    /// The pairs of passes stored on `step`'s counted row (the first repeat of target × suite ×
    /// clients), if any.
    fn counted_pairs(
        &mut self,
        key: &CellKey,
        run_id: &str,
        step: &str,
    ) -> Result<Option<crate::results::InstructionPairs>> {
        let sql = "SELECT server_instructions_pairs AS p FROM measurements WHERE run_id = ?1 \
                   AND target = ?2 AND suite = ?3 AND step = ?4 AND clients = ?5 ORDER BY repeat LIMIT 1";
        let rows = self
            .db
            .get_mut()
            .query(sql, &step_params(run_id, key, step))?;
        let text: Option<String> = match rows.first() {
            Some(r) => r.col("p")?,
            None => None,
        };
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Store a counted step's per-function instructions/op beside the measurements row that
    /// holds its instructions/op (the first repeat of target × suite × clients); false when
    /// there is no such row.
    pub fn set_functions(
        &mut self,
        key: &CellKey,
        run_id: &str,
        step: &str,
        functions: &crate::results::StepFunctions,
    ) -> Result<bool> {
        let json = serde_json::to_string(functions)?;
        self.set_step_json(
            ("step_functions", "functions_json"),
            key,
            run_id,
            step,
            json,
        )
    }

    /// Put `json` in `table`'s `column` on the row keyed as the measurements row of `step`'s
    /// first repeat at `key`'s target × suite × clients (replacing one there); false when
    /// there is no such measurements row.
    pub(super) fn set_step_json(
        &mut self,
        (table, column): (&str, &str),
        key: &CellKey,
        run_id: &str,
        step: &str,
        json: String,
    ) -> Result<bool> {
        let db = self.db.get_mut();
        let params = step_params(run_id, key, step);
        let sql = "SELECT MIN(repeat) AS repeat FROM measurements WHERE run_id = ?1 \
                   AND target = ?2 AND suite = ?3 AND step = ?4 AND clients = ?5";
        let rows = db.query(sql, &params)?;
        let Some(repeat) = rows
            .first()
            .and_then(|r| r.col::<Option<i64>>("repeat").ok().flatten())
        else {
            return Ok(false);
        };
        let names = ["run_id", "target", "suite", "step", "clients"];
        let mut row: Vec<(&str, Value)> = names.into_iter().zip(params).collect();
        row.push(("repeat", repeat.into()));
        row.push((column, json.into()));
        upsert(&mut **db, table, MEASUREMENT_KEY, row)?;
        Ok(true)
    }

    /// Store an operation type counted on its own in the `role`/`op` operation row of `step`'s
    /// first repeat at `key`'s client count; false when the timed run left no such row.
    pub fn set_counted_op(
        &mut self,
        key: &CellKey,
        run_id: &str,
        step: &str,
        (role, op): (&str, &str),
        counts: &crate::results::OpInstructions,
    ) -> Result<bool> {
        let db = self.db.get_mut();
        let sql = "SELECT repeat, position, op_json FROM step_ops WHERE run_id = ?1 AND target = ?2 \
                   AND suite = ?3 AND step = ?4 AND clients = ?5 ORDER BY repeat, position";
        let params = step_params(run_id, key, step);
        let rows = db.query(sql, &params)?;
        let Some(first) = rows.first() else {
            return Ok(false);
        };
        let repeat: i64 = first.col("repeat")?;
        for r in &rows {
            if r.col::<i64>("repeat")? != repeat {
                break;
            }
            let json: String = r.col("op_json")?;
            let mut o: crate::results::OpMeasurement = serde_json::from_str(&json)
                .map_err(|e| anyhow::anyhow!("a stored operation row: {e}"))?;
            if o.role != role || o.op != op {
                continue;
            }
            o.instructions = Some(counts.merged_with(o.instructions.as_ref()));
            let mut update = params.clone();
            update.extend([
                Value::from(r.col::<i64>("repeat")?),
                Value::from(r.col::<i64>("position")?),
                serde_json::to_string(&o)?.into(),
            ]);
            db.execute(
                "UPDATE step_ops SET op_json = ?8 WHERE run_id = ?1 AND target = ?2 AND suite = ?3 \
                 AND step = ?4 AND clients = ?5 AND repeat = ?6 AND position = ?7",
                &update,
            )?;
            return Ok(true);
        }
        Ok(false)
    }
}

/// The time a row is recorded, as SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')` wrote it.
fn recorded_at() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// The columns that identify a step's rows: the run and the measurement's key.
fn step_columns(run_id: &str, m: &Measurement) -> Vec<(&'static str, Value)> {
    vec![
        ("run_id", run_id.into()),
        ("target", (&m.target).into()),
        ("suite", (&m.suite).into()),
        ("step", (&m.step).into()),
        ("clients", m.clients.into()),
        ("repeat", m.repeat.into()),
    ]
}

/// The `measurements` row of one step, as (column, value) pairs.
fn measurement_row(
    run_id: &str,
    m: &Measurement,
    histogram: &[u8],
) -> Result<Vec<(&'static str, Value)>> {
    let lat = |f: fn(&Latency) -> f64| Value::from(m.latency_us.as_ref().map(f));
    let mut row = step_columns(run_id, m);
    row.extend([
        ("step_index", m.step_index.into()),
        ("grp", (&m.group).into()),
        ("statements_per_event", m.statements_per_event.into()),
        ("tables", m.tables.into()),
        ("rows_per_table", m.rows_per_table.into()),
        ("seconds", m.seconds.into()),
        ("ops", m.ops.into()),
        ("events", m.events.into()),
        ("errors_retryable", m.errors.retryable.into()),
        ("errors_reconnect", m.errors.reconnect.into()),
        ("errors_fatal", m.errors.fatal.into()),
        ("qps", m.qps.into()),
        ("tps", m.tps.into()),
        ("lat_min_us", lat(|x| x.min)),
        ("lat_p50_us", lat(|x| x.p50)),
        ("lat_p90_us", lat(|x| x.p90)),
        ("lat_p95_us", lat(|x| x.p95)),
        ("lat_p99_us", lat(|x| x.p99)),
        ("lat_p999_us", lat(|x| x.p999)),
        ("lat_max_us", lat(|x| x.max)),
        ("lat_mean_us", lat(|x| x.mean)),
        ("histogram", blob(histogram)),
    ]);
    row.extend(measurement_costs(m)?);
    Ok(row)
}

/// The rest of a `measurements` row: costs per operation, memory and size, placement evidence,
/// step length and when it was recorded.
fn measurement_costs(m: &Measurement) -> Result<Vec<(&'static str, Value)>> {
    let s = |v: &Option<String>| Value::from(v.as_deref());
    let mut row = metric_columns(&m.values);
    row.extend([
        ("client_bound", m.client_bound.into()),
        ("failed", m.failed.into()),
        ("error", s(&m.error)),
        ("warm", m.warm.into()),
        (
            "rows_per_statement",
            m.rows_per_statement
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?
                .into(),
        ),
        (
            "server_instructions_pairs",
            m.instruction_pairs
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?
                .into(),
        ),
        ("server_cpus_seen", s(&m.server_cpus_seen)),
        ("server_cpus_allowed", s(&m.server_cpus_allowed)),
        ("client_cpus_seen", s(&m.client_cpus_seen)),
        ("client_cpus_allowed", s(&m.client_cpus_allowed)),
        ("wakeup_bound", m.wakeup_bound.into()),
        (
            "duration_rule",
            if m.duration_rule.is_empty() {
                "fixed"
            } else {
                m.duration_rule.as_str()
            }
            .into(),
        ),
        ("precision_target", m.precision_target.into()),
        ("precision_achieved", m.precision_achieved.into()),
        ("stop_reason", s(&m.stop_reason)),
        (
            "settling_json",
            m.settling
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?
                .into(),
        ),
        (
            "below_resolution",
            (!m.below_resolution.is_empty())
                .then(|| serde_json::to_string(&m.below_resolution))
                .transpose()?
                .into(),
        ),
        ("recorded_at", recorded_at().into()),
    ]);
    Ok(row)
}

/// A column per metric of the table, named by its id: whole numbers as integers.
fn metric_columns(values: &Values) -> Vec<(&'static str, Value)> {
    METRICS
        .iter()
        .map(|d| {
            let v = values.get(d.metric);
            let v = if d.integer() {
                Value::from(v.map(|v| v as u64))
            } else {
                Value::from(v)
            };
            (d.id, v)
        })
        .collect()
}

/// A histogram's bytes, or null when there are none.
fn blob(b: &[u8]) -> Value {
    if b.is_empty() {
        Value::Null
    } else {
        Value::Blob(b.to_vec())
    }
}

/// The per-second `series` rows of one step.
fn insert_series(db: &mut dyn Db, run_id: &str, series: &[SecondSample]) -> Result<()> {
    for s in series {
        let row = vec![
            ("run_id", run_id.into()),
            ("target", (&s.target).into()),
            ("step", (&s.step).into()),
            ("clients", s.clients.into()),
            ("repeat", s.repeat.into()),
            ("second", s.second.into()),
            ("ops", s.ops.into()),
            ("p99_us", s.p99_us.into()),
            ("max_us", s.max_us.into()),
        ];
        upsert(db, "series", SERIES_KEY, row)?;
    }
    Ok(())
}

/// `?1`–`?5` of a statement about one step of a cell: run, target, suite, step, clients.
fn step_params(run_id: &str, key: &CellKey, step: &str) -> Vec<Value> {
    vec![
        run_id.into(),
        key.target.as_str().into(),
        key.suite.as_str().into(),
        step.into(),
        i64::from(key.clients).into(),
    ]
}

/// The `step_ops` rows of one step: each role × operation type as JSON (measurement v2), with
/// its histograms when given (`op_histograms` in the same order).
fn insert_operations(
    db: &mut dyn Db,
    run_id: &str,
    m: &Measurement,
    op_histograms: &[OpHistograms],
) -> Result<()> {
    for (i, o) in m.operations.iter().enumerate() {
        let h = op_histograms.get(i);
        let mut row = step_columns(run_id, m);
        row.extend([
            ("position", (i as i64).into()),
            ("op_json", serde_json::to_string(o)?.into()),
            ("histogram", h.map_or(Value::Null, |h| blob(&h.service))),
            (
                "response_histogram",
                h.map_or(Value::Null, |h| blob(&h.response)),
            ),
        ]);
        upsert(db, "step_ops", STEP_OPS_KEY, row)?;
    }
    Ok(())
}

/// A profiled step's folded profile (or why it has none).
fn insert_profile(db: &mut dyn Db, run_id: &str, m: &Measurement) -> Result<()> {
    let Some(p) = &m.profile else {
        return Ok(());
    };
    let mut row = step_columns(run_id, m);
    row.extend([
        ("samples", p.samples.into()),
        ("unresolved_samples", p.unresolved.into()),
        (
            "unresolved_modules_json",
            serde_json::to_string(&p.unresolved_modules)?.into(),
        ),
        ("folded", (&p.folded).into()),
        ("error", p.error.as_deref().into()),
    ]);
    upsert(db, "profiles", MEASUREMENT_KEY, row)
}
