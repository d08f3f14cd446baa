//! The metric table: every value a measured step records beside its counts, rates and latency
//! (its costs per operation, its peaks and sizes), one row each, and [`Values`], which holds one
//! step's (or one aggregate's) values keyed by that table.
//!
//! Owns the facts about each metric: its id (the JSON key, the CSV column and the store column),
//! its unit, what it is divided by, how repeats aggregate it, whether it gets a relative column
//! and a verdict, below which total its ratio is counting noise, and its row in the reports' cost
//! tables. The store's metric columns, the report model's aggregates and ratios, the CSV's
//! metric columns, the cost tables, the below-resolution rules, the verdicts on costs and the
//! JSON schema's metric fields are derived from [`METRICS`] or checked against it by a test, so
//! adding a metric is one row here plus the code that measures it.
//!
//! Plain data: nothing here measures, stores or renders.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a value counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds of CPU time.
    Micros,
    /// A count (context switches, device reads or writes, rows).
    Count,
    /// Kilobytes (1,024 bytes).
    Kb,
    /// Bytes: whole numbers, stored as integers and written without a fraction.
    Bytes,
    /// Thousands of rows per second.
    KRowsPerSec,
}

/// What a value is divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// The step's counted operations (statements for sysbench steps).
    Op,
    /// The step's events (transactions).
    Event,
    /// Nothing: one value for the whole step (a peak, a size, a rate).
    Step,
}

/// Where a metric stands in a report's records: the costs per operation, the engine's own IO
/// (evidence that device IO is the engine's), or the step's own values (peaks, sizes, rates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Cost,
    OwnIo,
    Step,
}

/// How the non-failed repeats of a target × step × clients combine into its aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    /// The mean of the repeats that have the value.
    Mean,
    /// The largest (peaks and sizes).
    Max,
}

/// When a ratio of two totals is too coarse to mean anything: the total behind the per-op value
/// (per-op × ops, in the counter's units) is below `stats::RESOLUTION_UNITS` on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// CPU time: a server's comes from `/proc/PID/stat` in clock ticks, SQLite's (dbdelta's own
    /// process) and the client's from `getrusage`, in µs.
    Cpu { ticks: bool },
    /// Counted in this metric's own units (1 each).
    Own,
    /// Judged by the number of events of another metric (KB read by the reads behind them).
    CountOf(Metric),
}

/// Which device counters confirm a device metric as the engine's own IO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Reads,
    Writes,
}

/// A metric's table in the text, Markdown and HTML reports: absolute values and ratios per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostTable {
    pub title: &'static str,
    /// Position among the cost tables (ascending).
    pub rank: u8,
    /// Shown even when no target has the value.
    pub always: bool,
    /// Device IO: a ratio is the engine's only when its own IO confirms it.
    pub device: Option<Device>,
}

/// One row of the metric table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub metric: Metric,
    /// JSON key, CSV column and store column, with its unit in the name.
    pub id: &'static str,
    pub unit: Unit,
    pub per: Per,
    pub part: Part,
    /// How repeats aggregate; `None`: stored and listed per measurement only.
    pub over_repeats: Option<Agg>,
    /// Gets a ratio target / base (`relative_<id>`); needs `over_repeats`.
    pub relative: bool,
    /// Gets a verdict (lower is better), under this short name: `<short>_test` in JSON,
    /// `<short>_verdict` and `relative_<short>_p` … in CSV. Needs `relative`.
    pub verdict: Option<&'static str>,
    /// The verdict comes from one repeat: the ratio against the spread this other metric
    /// holds (instructions/op: the counting passes' half-range); `None`: from paired repeats.
    pub spread: Option<Metric>,
    /// When a ratio is counting noise (`~`); `None`: never judged so.
    pub resolution: Option<Resolution>,
    pub cost_table: Option<CostTable>,
}

impl MetricDef {
    /// Whole numbers (bytes): stored as integers, written without a fraction.
    pub fn integer(&self) -> bool {
        self.unit == Unit::Bytes
    }
}

/// A row with everything off, for the table below to override.
const fn row(metric: Metric, id: &'static str, unit: Unit, per: Per, part: Part) -> MetricDef {
    MetricDef {
        metric,
        id,
        unit,
        per,
        part,
        over_repeats: None,
        relative: false,
        verdict: None,
        spread: None,
        resolution: None,
        cost_table: None,
    }
}

const fn table(title: &'static str, rank: u8) -> Option<CostTable> {
    Some(CostTable {
        title,
        rank,
        always: false,
        device: None,
    })
}

macro_rules! metric_table {
    ($( $(#[$doc:meta])* $name:ident => $def:expr ),* $(,)?) => {
        /// A metric of [`METRICS`], by its position there.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric { $( $(#[$doc])* $name ),* }

        /// The metric table, in the order records list their metrics (JSON keys, CSV columns).
        pub static METRICS: &[MetricDef] = &[ $( { use Metric::*; $def } ),* ];
    };
}

use Part::{Cost, OwnIo, Step};
use Unit::{Bytes, Count, KRowsPerSec, Kb, Micros};

metric_table! {
    /// CPU of the database engine per op: the server's process tree, or for SQLite the dbdelta
    /// process itself (engine and client are not separable in-process).
    ServerCpu => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        verdict: Some("server_cpu"),
        resolution: Some(Resolution::Cpu { ticks: true }),
        cost_table: Some(CostTable { always: true, ..table("Server CPU µs/op", 0).unwrap() }),
        ..row(ServerCpu, "server_cpu_us_per_op", Micros, Per::Op, Cost)
    },
    /// dbdelta's own CPU per op; `None` when it cannot be separated from the engine (SQLite).
    ClientCpu => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        resolution: Some(Resolution::Cpu { ticks: false }),
        cost_table: table("Client (dbdelta) CPU µs/op", 2),
        ..row(ClientCpu, "client_cpu_us_per_op", Micros, Per::Op, Cost)
    },
    /// Instructions of the engine per op for the pass's own statements, counted under
    /// callgrind in the counting pass (`instructions = true`): PostgreSQL's backends of the
    /// pass, the MySQL/MariaDB threads that ran its connections' statements, or for SQLite the
    /// counting client process (engine and client in one). The server's background work is
    /// [`Metric::ServerBgInstr`]. Stored on the first repeat.
    ServerInstr => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        verdict: Some("server_instructions"),
        spread: Some(ServerInstrSpread),
        cost_table: table("Server instructions/op (counting pass)", 6),
        ..row(ServerInstr, "server_instructions_per_op", Count, Per::Op, Cost)
    },
    /// Half the range of the counting passes' server instructions/op: the metric's own spread.
    ServerInstrSpread => MetricDef {
        over_repeats: Some(Agg::Max),
        ..row(ServerInstrSpread, "server_instructions_spread", Count, Per::Op, Cost)
    },
    /// Instructions of the server's background work per op during the counting pass: what
    /// it does by the clock, not by the operation (PostgreSQL: the postmaster, autovacuum
    /// workers; MySQL/MariaDB: every thread that serves no connection, such as InnoDB's purge
    /// and page cleaner). `None` for SQLite (no background). Shown beside the foreground count,
    /// never judged: it follows the host's clock as much as the build.
    ServerBgInstr => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        spread: None,
        cost_table: table("Server background instructions/op (counting pass)", 8),
        ..row(ServerBgInstr, "server_background_instructions_per_op", Count, Per::Op, Cost)
    },
    /// Half the range of the counting passes' background instructions/op.
    ServerBgInstrSpread => MetricDef {
        over_repeats: Some(Agg::Max),
        ..row(ServerBgInstrSpread, "server_background_instructions_spread", Count, Per::Op, Cost)
    },
    /// dbdelta's own instructions per op in the counting pass; `None` for SQLite (in the
    /// server's count).
    ClientInstr => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        cost_table: table("Client (dbdelta) instructions/op (counting pass)", 7),
        ..row(ClientInstr, "client_instructions_per_op", Count, Per::Op, Cost)
    },
    /// Host-wide busy CPU per op (`/proc/stat`, what vmstat shows).
    HostCpu => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(HostCpu, "host_cpu_us_per_op", Micros, Per::Op, Cost)
    },
    /// Context switches of the engine's threads per op.
    Cs => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        resolution: Some(Resolution::Own),
        cost_table: Some(CostTable { always: true, ..table("Context switches/op", 1).unwrap() }),
        ..row(Cs, "cs_per_op", Count, Per::Op, Cost)
    },
    /// Host-wide context switches per op (`/proc/stat ctxt`).
    HostCs => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(HostCs, "host_cs_per_op", Count, Per::Op, Cost)
    },
    /// Device reads per op (`/proc/diskstats` of the device holding the data).
    Reads => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        resolution: Some(Resolution::Own),
        cost_table: Some(CostTable {
            device: Some(Device::Reads),
            ..table("Device reads/op (whole disk)", 3).unwrap()
        }),
        ..row(Reads, "reads_per_op", Count, Per::Op, Cost)
    },
    /// Device KB read per op.
    ReadKb => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        resolution: Some(Resolution::CountOf(Reads)),
        cost_table: Some(CostTable {
            device: Some(Device::Reads),
            ..table("Device KB read/op (whole disk)", 4).unwrap()
        }),
        ..row(ReadKb, "read_kb_per_op", Kb, Per::Op, Cost)
    },
    /// Device writes per op.
    Writes => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(Writes, "writes_per_op", Count, Per::Op, Cost)
    },
    /// Device KB written per op.
    WriteKb => MetricDef {
        over_repeats: Some(Agg::Mean),
        relative: true,
        resolution: Some(Resolution::CountOf(Writes)),
        cost_table: Some(CostTable {
            device: Some(Device::Writes),
            ..table("Device KB written/op (whole disk)", 5).unwrap()
        }),
        ..row(WriteKb, "write_kb_per_op", Kb, Per::Op, Cost)
    },
    /// Engine process KB read per op (`/proc/PID/io read_bytes`).
    ProcReadKb => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(ProcReadKb, "proc_read_kb_per_op", Kb, Per::Op, OwnIo)
    },
    /// Engine process KB written per op (`/proc/PID/io write_bytes`).
    ProcWriteKb => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(ProcWriteKb, "proc_write_kb_per_op", Kb, Per::Op, OwnIo)
    },
    /// Peak RSS of the largest engine process during the step.
    PeakRss => MetricDef {
        over_repeats: Some(Agg::Max),
        ..row(PeakRss, "peak_rss_bytes", Bytes, Per::Step, Step)
    },
    /// Peak VSZ of the largest engine process during the step.
    PeakVsz => row(PeakVsz, "peak_vsz_bytes", Bytes, Per::Step, Step),
    /// Peak PSS summed over the engine's processes (shared memory counted once).
    PeakPss => MetricDef {
        over_repeats: Some(Agg::Max),
        ..row(PeakPss, "peak_pss_bytes", Bytes, Per::Step, Step)
    },
    /// Logical database size after the step.
    DbSize => MetricDef {
        over_repeats: Some(Agg::Max),
        ..row(DbSize, "db_size_bytes", Bytes, Per::Step, Step)
    },
    /// Rows returned or changed per event, summed over the event's statements. Only known when
    /// every event that ran was measured (`warmup_secs = 0`).
    RowsPerEvent => row(RowsPerEvent, "rows_per_event", Count, Per::Event, Step),
    /// `scan` only: thousands of rows scanned per second per client, rows_per_table / 1000 ÷ mean
    /// event latency in seconds (docs/measurement.md, What is measured).
    ScanKrows => MetricDef {
        over_repeats: Some(Agg::Mean),
        ..row(ScanKrows, "scan_krows_per_sec", KRowsPerSec, Per::Step, Step)
    },
}

/// Metrics in the table.
pub const COUNT: usize = METRICS.len();

impl Metric {
    pub fn def(self) -> &'static MetricDef {
        &METRICS[self as usize]
    }

    pub fn id(self) -> &'static str {
        self.def().id
    }

    /// Every metric, in table order.
    pub fn all() -> impl Iterator<Item = Metric> {
        METRICS.iter().map(|d| d.metric)
    }

    /// The metric whose id is `id`.
    pub fn by_id(id: &str) -> Option<Metric> {
        METRICS.iter().find(|d| d.id == id).map(|d| d.metric)
    }
}

/// One value per metric of the table; `None` means "could not be computed" (a per-op value over
/// zero ops, a counter the host does not have), never zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Values([Option<f64>; COUNT]);

impl Default for Values {
    fn default() -> Values {
        Values([None; COUNT])
    }
}

impl Values {
    pub fn get(&self, m: Metric) -> Option<f64> {
        self.0[m as usize]
    }

    pub fn set(&mut self, m: Metric, v: Option<f64>) {
        self.0[m as usize] = v;
    }

    /// Whole bytes (or another integer metric), as stored.
    pub fn whole(&self, m: Metric) -> Option<u64> {
        self.get(m).map(|v| v as u64)
    }

    /// Sets every value `other` has (the rest stay as they are).
    pub fn fill_from(&mut self, other: &Values) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
    }

    /// These values with `pairs` set.
    pub fn with(mut self, pairs: &[(Metric, f64)]) -> Values {
        for &(m, v) in pairs {
            self.set(m, Some(v));
        }
        self
    }

    /// Serializes the metrics `pick` keeps, in table order, as map entries.
    fn write<S: SerializeMap>(
        &self,
        map: &mut S,
        pick: fn(&MetricDef) -> bool,
    ) -> Result<(), S::Error> {
        for d in METRICS.iter().filter(|d| pick(d)) {
            match self.get(d.metric) {
                Some(v) if d.integer() => map.serialize_entry(d.id, &(v as u64))?,
                v => map.serialize_entry(d.id, &v)?,
            }
        }
        Ok(())
    }
}

/// Every metric, in table order (a measurement's record).
impl Serialize for Values {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        self.write(&mut map, |_| true)?;
        map.end()
    }
}

/// From a map of metric ids (flattened into a record); other keys are ignored.
impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Values, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Values;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of metric ids to numbers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Values, A::Error> {
                let mut out = Values::default();
                while let Some(key) = map.next_key::<String>()? {
                    match Metric::by_id(&key) {
                        Some(m) => out.set(m, map.next_value::<Option<f64>>()?),
                        None => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// Which metrics a [`Picked`] view serializes.
pub mod pick {
    use super::{MetricDef, Part};

    /// An aggregate's costs and step values (its engine's own IO comes later in its record).
    pub const AGGREGATE: u8 = 0;
    /// An aggregate's engine-own IO.
    pub const AGGREGATE_OWN_IO: u8 = 1;
    /// A relative row's ratios.
    pub const RELATIVE: u8 = 2;

    pub(super) fn keeps(view: u8, d: &MetricDef) -> bool {
        match view {
            AGGREGATE => d.over_repeats.is_some() && d.part != Part::OwnIo,
            AGGREGATE_OWN_IO => d.over_repeats.is_some() && d.part == Part::OwnIo,
            _ => d.relative,
        }
    }
}

/// [`Values`] serialized as only the metrics of one view (see [`pick`]), flattened into a report
/// record so that its keys stand where the JSON contract puts them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Picked<const VIEW: u8>(pub Values);

impl<const VIEW: u8> Serialize for Picked<VIEW> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        self.0.write(&mut map, |d| pick::keeps(VIEW, d))?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_enum_order_with_unique_ids() {
        for (i, d) in METRICS.iter().enumerate() {
            assert_eq!(d.metric as usize, i, "{}", d.id);
            assert_eq!(Metric::by_id(d.id), Some(d.metric));
        }
    }

    #[test]
    fn rules_hang_together() {
        for d in METRICS {
            assert!(
                !d.relative || d.over_repeats.is_some(),
                "{}: relative needs an aggregate",
                d.id
            );
            assert!(
                d.verdict.is_none() || d.relative,
                "{}: a verdict needs a ratio",
                d.id
            );
            assert!(
                d.cost_table.is_none() || d.relative,
                "{}: a cost table shows ratios",
                d.id
            );
            assert!(
                d.resolution.is_none() || d.relative,
                "{}: resolution judges ratios",
                d.id
            );
            assert!(
                d.part == Part::Step || d.per != Per::Step,
                "{}: per-op costs",
                d.id
            );
        }
        let mut ranks: Vec<u8> = METRICS
            .iter()
            .filter_map(|d| d.cost_table)
            .map(|c| c.rank)
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(
            ranks.len(),
            METRICS.iter().filter(|d| d.cost_table.is_some()).count()
        );
    }

    #[test]
    fn values_round_trip_through_json_with_whole_bytes() {
        let v = Values::default().with(&[(Metric::ServerCpu, 12.5), (Metric::PeakRss, 4096.0)]);
        let text = serde_json::to_string(&v).unwrap();
        assert!(text.starts_with(r#"{"server_cpu_us_per_op":12.5,"client_cpu_us_per_op":null"#));
        assert!(text.contains(r#""peak_rss_bytes":4096,"#), "{text}");
        let back: Values = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
        let mut filled = Values::default().with(&[(Metric::Cs, 2.0), (Metric::PeakRss, 1.0)]);
        filled.fill_from(&v);
        assert_eq!(filled.get(Metric::Cs), Some(2.0), "kept: v has none");
        assert_eq!(filled.get(Metric::PeakRss), Some(4096.0), "v's wins");
        assert_eq!(filled.get(Metric::ServerCpu), Some(12.5));
        let picked = serde_json::to_string(&Picked::<{ pick::RELATIVE }>(v)).unwrap();
        assert!(!picked.contains("peak_rss"), "{picked}");
    }
}
