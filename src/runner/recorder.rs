//! Per-thread recording of one operation type over a step's measured period.
//!
//! Each role thread owns one [`Recorder`] per operation type of its role: an HDR histogram of
//! service time (start → end, ns), for paced roles a second one of response time from the
//! intended start (coordinated omission: a late operation counts from when it was due), a
//! preallocated array of per-second buckets, and counters (executions, counted units, rows,
//! errors). Each second of a timed step also keeps a fixed-size log-scale histogram
//! ([`SLOTS`] counters, four per power of two) for its p99: memory is a known number of bytes
//! per thread × second, allocated once before the step starts, whatever the step's rate.
//! Recording an operation is a few arithmetic operations and array writes: no
//! allocation, no lock, no atomic read-modify-write, no formatting. Recorders are merged once,
//! after the threads stopped. Must not: read the clock (the caller passes the instants it
//! took) or talk to the database.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::{ErrorCode, ErrorKind};
use crate::results::{ErrorCodeCount, ErrorCounts, Latency};

/// Distinct error codes a recorder counts one by one; errors with further codes count in
/// [`ErrorCodes::other`] (a fixed table: recording an error allocates nothing).
const ERROR_CODES: usize = 8;

/// Errors counted by the engine's own code (SQLSTATE, MySQL errno, SQLite code).
#[derive(Default)]
struct ErrorCodes {
    codes: [Option<(ErrorCode, u64)>; ERROR_CODES],
    /// Errors without a code (connection, protocol), or past the table's size.
    other: u64,
}

impl ErrorCodes {
    #[inline]
    fn add(&mut self, code: Option<ErrorCode>, n: u64) {
        let Some(code) = code else {
            self.other += n;
            return;
        };
        for slot in &mut self.codes {
            match slot {
                Some((c, count)) if *c == code => {
                    *count += n;
                    return;
                }
                None => {
                    *slot = Some((code, n));
                    return;
                }
                Some(_) => {}
            }
        }
        self.other += n;
    }

    fn merge(&mut self, from: &ErrorCodes) {
        for (code, n) in from.codes.iter().flatten() {
            self.add(Some(*code), *n);
        }
        self.other += from.other;
    }

    /// Counts by code, most frequent first (ties by code), for the results.
    fn counts(&self) -> Vec<ErrorCodeCount> {
        let mut v: Vec<(ErrorCode, u64)> = self.codes.iter().flatten().copied().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter()
            .map(|(code, count)| ErrorCodeCount {
                code: code.to_string(),
                count,
            })
            .collect()
    }
}

/// Highest latency the histograms resolve: one hour, in ns.
const MAX_NS: u64 = 3_600 * 1_000_000_000;

/// Per-second buckets of a recorder whose step has no fixed length (it ends on quotas): the
/// series covers this many seconds, later operations land in the last bucket.
pub const OPEN_ENDED_SECONDS: u64 = 6 * 3_600;

/// Counters of one second's latency histogram: slot 0 holds everything below 1024 ns, then
/// four slots per power of two up to 2^42 ns (73 min, above [`MAX_NS`]): at most 25% apart.
pub const SLOTS: usize = 1 + 32 * 4;

/// The per-second histogram slot of a latency in ns.
#[inline]
fn slot(ns: u64) -> usize {
    if ns < 1024 {
        return 0;
    }
    let octave = 63 - ns.leading_zeros() as usize;
    let sub = ((ns >> (octave - 2)) & 3) as usize;
    (1 + (octave - 10) * 4 + sub).min(SLOTS - 1)
}

/// The highest latency in ns that lands in `slot`.
fn slot_upper_ns(slot: usize) -> u64 {
    if slot == 0 {
        return 1023;
    }
    let octave = 10 + (slot - 1) / 4;
    let sub = ((slot - 1) % 4) as u64;
    ((5 + sub) << (octave - 2)) - 1
}

/// The p99 of one second's slots (`None` when empty), at most the second's maximum.
fn slots_p99(counts: &[u32], max_ns: u64) -> Option<u64> {
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if total == 0 {
        return None;
    }
    let rank = (total * 99).div_ceil(100).max(1);
    let mut seen = 0;
    for (i, &c) in counts.iter().enumerate() {
        seen += u64::from(c);
        if seen >= rank {
            return Some(slot_upper_ns(i).min(max_ns));
        }
    }
    Some(max_ns)
}

/// One second of one thread.
struct SecondBucket {
    /// Counted units of the operations that ended in this second.
    units: u64,
    max_ns: u64,
    max_response_ns: u64,
}

/// What one thread measured of one operation type in the measured period.
pub struct Recorder {
    measure_start: Instant,
    hist: Histogram<u64>,
    /// Response time from the intended start; `None` for closed-loop roles (where it is the
    /// service time).
    response: Option<Histogram<u64>>,
    seconds: Vec<SecondBucket>,
    /// [`SLOTS`] counters per second of `seconds` (empty for an open-ended step).
    second_slots: Vec<u32>,
    events: u64,
    units: u64,
    rows: u64,
    errors: ErrorCounts,
    error_codes: ErrorCodes,
    last_end: Option<Instant>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

fn latency_ns(from: Instant, to: Instant) -> u64 {
    (to.saturating_duration_since(from)
        .as_nanos()
        .min(MAX_NS as u128) as u64)
        .max(1)
}

impl Recorder {
    /// A closed-loop recorder for a measured period starting at `measure_start` and lasting
    /// `measure` (operations that start before the deadline and end after it land in the last
    /// bucket).
    pub fn new(measure_start: Instant, measure: Duration) -> Recorder {
        Recorder::with(measure_start, Some(measure), false)
    }

    /// A recorder for a measured period of `measure` (`None`: open-ended, until quotas are
    /// met), keeping response time from the intended start when `paced`.
    pub fn with(measure_start: Instant, measure: Option<Duration>, paced: bool) -> Recorder {
        let secs = measure.map_or(OPEN_ENDED_SECONDS, |m| m.as_secs_f64().ceil() as u64);
        let buckets = secs.clamp(1, OPEN_ENDED_SECONDS) as usize + 1;
        // An open-ended step keeps only the per-second maximum: a histogram for each of its
        // hours of buckets would cost megabytes per thread.
        let per_second_hist = measure.is_some();
        let seconds = (0..buckets)
            .map(|_| SecondBucket {
                units: 0,
                max_ns: 0,
                max_response_ns: 0,
            })
            .collect();
        Recorder {
            measure_start,
            hist: histogram(),
            response: paced.then(histogram),
            seconds,
            second_slots: vec![0; if per_second_hist { buckets * SLOTS } else { 0 }],
            events: 0,
            units: 0,
            rows: 0,
            errors: ErrorCounts::default(),
            error_codes: ErrorCodes::default(),
            last_end: None,
        }
    }

    /// The index of the second `end` falls in (the last one past the measured period).
    fn second(&self, end: Instant) -> usize {
        let i = end.saturating_duration_since(self.measure_start).as_secs() as usize;
        i.min(self.seconds.len() - 1)
    }

    /// Record a completed event that ran from `start` to `end`, counting one unit.
    #[inline]
    pub fn record_event(&mut self, start: Instant, end: Instant) {
        self.record(start, start, end, 1, 0);
    }

    /// Record a completed operation that was due at `intended` (its start, for a closed-loop
    /// role), ran from `start` to `end`, counted `units` and touched `rows` rows.
    #[inline]
    pub fn record(
        &mut self,
        intended: Instant,
        start: Instant,
        end: Instant,
        units: u64,
        rows: u64,
    ) {
        let ns = latency_ns(start, end);
        self.hist.saturating_record(ns);
        let response_ns = match &mut self.response {
            Some(h) => {
                let r = latency_ns(intended.min(start), end);
                h.saturating_record(r);
                r
            }
            None => ns,
        };
        self.events += 1;
        self.units += units;
        self.rows += rows;
        self.last_end = Some(end);
        let i = self.second(end);
        let b = &mut self.seconds[i];
        b.units += units;
        b.max_ns = b.max_ns.max(ns);
        b.max_response_ns = b.max_response_ns.max(response_ns);
        if let Some(c) = self.second_slots.get_mut(i * SLOTS + slot(ns)) {
            *c = c.saturating_add(1);
        }
    }

    /// Record a failed event: its kind and the engine's code for it.
    #[inline]
    pub fn record_error(&mut self, kind: ErrorKind, code: Option<ErrorCode>, end: Instant) {
        self.error_codes.add(code, 1);
        match kind {
            ErrorKind::Retryable => self.errors.retryable += 1,
            ErrorKind::Reconnect => self.errors.reconnect += 1,
            ErrorKind::Fatal => self.errors.fatal += 1,
        }
        self.last_end = Some(end);
    }

    pub fn events(&self) -> u64 {
        self.events
    }
}

/// One second of a merged series.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Second {
    /// Counted units of the operations that ended in it.
    pub units: u64,
    /// p99 and maximum service time, ns (`None` without operations; p99 also `None` when the
    /// step kept no per-second histogram).
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// Maximum response time from the intended start, ns (paced roles; else the service time).
    pub max_response_ns: Option<u64>,
}

/// All threads' recorders of one operation type, merged. It crosses from a remote target's
/// agent as JSON (histograms in HdrHistogram's V2 deflate format, base64).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Merged {
    pub events: u64,
    /// Counted units (statements for sysbench, rows for inserts and deletes, queries).
    pub units: u64,
    pub rows: u64,
    pub errors: ErrorCounts,
    /// The errors by the engine's code, most frequent first.
    pub error_codes: Vec<ErrorCodeCount>,
    /// The latest event end over all threads (an instant of this process: not sent).
    #[serde(skip)]
    pub last_end: Option<Instant>,
    /// Service time.
    #[serde(with = "hist_base64")]
    pub hist: Histogram<u64>,
    /// Response time from the intended start (paced roles).
    #[serde(with = "opt_hist_base64")]
    pub response: Option<Histogram<u64>>,
    pub seconds: Vec<Second>,
}

/// A histogram as base64 of its V2 deflate serialization.
mod hist_base64 {
    use base64::Engine;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::Deserializer;
    use serde::{Deserialize, Serializer};

    pub fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(super::serialized(h)))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }

    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes =
            (base64::engine::general_purpose::STANDARD.decode(text)).map_err(|e| e.to_string())?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("{e:?}"))
    }
}

mod opt_hist_base64 {
    use hdrhistogram::Histogram;
    use serde::{Deserialize, Serializer};

    pub fn serialize<S: Serializer>(h: &Option<Histogram<u64>>, s: S) -> Result<S::Ok, S::Error> {
        match h {
            Some(h) => super::hist_base64::serialize(h, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Histogram<u64>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(t) => super::hist_base64::decode(&t)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

impl Merged {
    /// Merge recorders (all built with the same measured period).
    pub fn from(recorders: Vec<Recorder>) -> Merged {
        assert!(!recorders.is_empty(), "at least one client");
        let mut m = Merged::empty();
        let mut seconds: Vec<SecondBucket> = Vec::new();
        let mut slots: Vec<u32> = Vec::new();
        let mut codes = ErrorCodes::default();
        for r in recorders {
            m.add_counts(r.events, r.units, r.rows, &r.errors, r.last_end);
            codes.merge(&r.error_codes);
            m.add_histograms(&r.hist, r.response.as_ref());
            if seconds.is_empty() {
                (seconds, slots) = (r.seconds, r.second_slots);
                continue;
            }
            for (into, from) in seconds.iter_mut().zip(r.seconds) {
                into.units += from.units;
                into.max_ns = into.max_ns.max(from.max_ns);
                into.max_response_ns = into.max_response_ns.max(from.max_response_ns);
            }
            for (into, from) in slots.iter_mut().zip(r.second_slots) {
                *into = into.saturating_add(from);
            }
        }
        m.seconds = seconds
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let any = b.max_ns > 0;
                let counts = slots.get(i * SLOTS..(i + 1) * SLOTS).unwrap_or(&[]);
                Second {
                    units: b.units,
                    p99_ns: slots_p99(counts, b.max_ns),
                    max_ns: any.then_some(b.max_ns),
                    max_response_ns: any.then_some(b.max_response_ns),
                }
            })
            .collect();
        m.error_codes = codes.counts();
        m
    }

    /// Add another part's counters.
    fn add_counts(
        &mut self,
        events: u64,
        units: u64,
        rows: u64,
        errors: &ErrorCounts,
        last_end: Option<Instant>,
    ) {
        self.events += events;
        self.units += units;
        self.rows += rows;
        self.errors.retryable += errors.retryable;
        self.errors.reconnect += errors.reconnect;
        self.errors.fatal += errors.fatal;
        self.last_end = self.last_end.max(last_end);
    }

    /// Add another part's histograms (a response-time histogram starts with the first part
    /// that has one).
    fn add_histograms(&mut self, hist: &Histogram<u64>, response: Option<&Histogram<u64>>) {
        self.hist.add(hist).expect("same histogram bounds");
        match (&mut self.response, response) {
            (Some(into), Some(from)) => into.add(from).expect("same histogram bounds"),
            (None, Some(from)) => self.response = Some(from.clone()),
            (_, None) => {}
        }
    }

    /// Nothing measured (also the start of a merge).
    fn empty() -> Merged {
        Merged {
            events: 0,
            units: 0,
            rows: 0,
            errors: ErrorCounts::default(),
            error_codes: Vec::new(),
            last_end: None,
            hist: histogram(),
            response: None,
            seconds: Vec::new(),
        }
    }

    /// Several merged operation types as one (a step counting all of a role's operations).
    /// Per-second p99s do not combine: with more than one part they are `None`.
    pub fn combine(parts: &[&Merged]) -> Merged {
        let mut m = Merged::empty();
        for (i, r) in parts.iter().enumerate() {
            m.add_counts(r.events, r.units, r.rows, &r.errors, r.last_end);
            m.add_histograms(&r.hist, r.response.as_ref());
            for c in &r.error_codes {
                match m.error_codes.iter_mut().find(|e| e.code == c.code) {
                    Some(e) => e.count += c.count,
                    None => m.error_codes.push(c.clone()),
                }
            }
            if i == 0 {
                m.seconds = r.seconds.clone();
                continue;
            }
            for (into, from) in m.seconds.iter_mut().zip(&r.seconds) {
                into.units += from.units;
                into.p99_ns = None;
                into.max_ns = into.max_ns.max(from.max_ns);
                into.max_response_ns = into.max_response_ns.max(from.max_response_ns);
            }
        }
        m
    }

    /// Service-time summary in µs; `None` without events.
    pub fn latency(&self) -> Option<Latency> {
        summary(&self.hist)
    }

    /// Response time from the intended start in µs (paced roles); `None` otherwise or without
    /// events.
    pub fn response_latency(&self) -> Option<Latency> {
        self.response.as_ref().and_then(summary)
    }

    /// The merged service-time histogram in HdrHistogram's V2+deflate format, for the store.
    pub fn serialized_histogram(&self) -> Vec<u8> {
        serialized(&self.hist)
    }

    /// The response-time histogram, serialized likewise (empty when not paced).
    pub fn serialized_response(&self) -> Vec<u8> {
        self.response.as_ref().map(serialized).unwrap_or_default()
    }
}

fn summary(h: &Histogram<u64>) -> Option<Latency> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Some(Latency {
        min: us(h.min()),
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p95: us(h.value_at_quantile(0.95)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
        mean: h.mean() / 1000.0,
    })
}

fn serialized(h: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut out = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(h, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_crosses_as_json_with_its_histograms() {
        let mut m = Merged::empty();
        m.events = 3;
        for ns in [1_000, 50_000, 2_000_000] {
            m.hist.record(ns).unwrap();
        }
        let mut response = histogram();
        response.record(7_000).unwrap();
        m.response = Some(response);
        m.seconds.push(Second {
            units: 3,
            p99_ns: Some(2_000_000),
            max_ns: Some(2_000_000),
            max_response_ns: None,
        });
        let text = serde_json::to_string(&m).unwrap();
        let back: Merged = serde_json::from_str(&text).unwrap();
        assert_eq!(back.events, 3);
        assert_eq!(back.hist.len(), 3);
        assert_eq!(back.hist.max(), m.hist.max());
        assert_eq!(
            back.hist.value_at_quantile(0.5),
            m.hist.value_at_quantile(0.5)
        );
        assert_eq!(back.response.as_ref().map(|h| h.len()), Some(1));
        assert_eq!(back.seconds, m.seconds);
        let none: Merged = serde_json::from_str(&text.replace(
            &format!(
                "\"response\":{}",
                serde_json::to_string(&serde_json::to_value(&m).unwrap()["response"]).unwrap()
            ),
            "\"response\":null",
        ))
        .unwrap();
        assert!(none.response.is_none());
        assert!(
            serde_json::from_str::<Merged>(&text.replace("\"hist\":\"", "\"hist\":\"!")).is_err()
        );
    }

    #[test]
    fn merges_threads_and_seconds() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, Duration::from_secs(2));
        let mut b = Recorder::new(t0, Duration::from_secs(2));
        a.record_event(t0, t0 + Duration::from_micros(10));
        a.record_event(
            t0 + Duration::from_millis(1500),
            t0 + Duration::from_millis(1501),
        );
        b.record_event(t0, t0 + Duration::from_micros(30));
        let dup = Some(ErrorCode::SqlState(*b"23505"));
        b.record_error(ErrorKind::Retryable, dup, t0 + Duration::from_micros(40));
        // Past the deadline: lands in the last bucket.
        b.record_event(t0 + Duration::from_secs(5), t0 + Duration::from_secs(5));
        let m = Merged::from(vec![a, b]);
        assert_eq!(m.events, 4);
        assert_eq!(m.units, 4);
        assert_eq!(m.errors.retryable, 1);
        assert_eq!(
            m.error_codes,
            vec![ErrorCodeCount {
                code: "SQLSTATE 23505".into(),
                count: 1
            }]
        );
        assert_eq!(m.seconds.len(), 3);
        assert_eq!(m.seconds[0].units, 2);
        assert_eq!(m.seconds[1].units, 1);
        assert_eq!(m.seconds[2].units, 1);
        assert!(m.seconds[0].p99_ns.is_some());
        let lat = m.latency().unwrap();
        assert!(lat.max >= 1000.0 && lat.max < 1002.0, "{lat:?}");
        assert!(m.response_latency().is_none(), "closed loop");
        assert!(!m.serialized_histogram().is_empty());
    }

    #[test]
    fn errors_count_by_code_in_a_fixed_table() {
        let mut c = ErrorCodes::default();
        for errno in 0..(ERROR_CODES as u16 + 2) {
            let code = ErrorCode::MySql {
                errno,
                sqlstate: *b"HY000",
            };
            c.add(Some(code), u64::from(errno) + 1);
        }
        c.add(None, 5);
        c.add(
            Some(ErrorCode::MySql {
                errno: 3,
                sqlstate: *b"HY000",
            }),
            10,
        );
        let counts = c.counts();
        assert_eq!(counts.len(), ERROR_CODES);
        assert_eq!(counts[0].code, "MySQL error 3 (HY000)");
        assert_eq!(counts[0].count, 14);
        // Codes 8 and 9 did not fit (9 + 10 errors), plus 5 without a code.
        assert_eq!(c.other, 24);
    }

    #[test]
    fn per_second_slots_cover_every_latency_within_a_quarter() {
        let mut prev_upper = slot_upper_ns(0);
        for s in 1..SLOTS {
            let upper = slot_upper_ns(s);
            assert_eq!(
                slot(prev_upper + 1),
                s,
                "slot {s} starts after slot {}",
                s - 1
            );
            assert_eq!(slot(upper), s);
            let lower = prev_upper + 1;
            assert!(
                (upper - lower) as f64 <= lower as f64 * 0.25,
                "slot {s}: {lower}..{upper}"
            );
            prev_upper = upper;
        }
        assert!(
            slot_upper_ns(SLOTS - 1) >= MAX_NS,
            "the last slot reaches the cap"
        );
        assert_eq!(slot(1), 0);
        assert_eq!(slot(u64::MAX), SLOTS - 1);
    }

    #[test]
    fn per_second_p99_is_the_slot_of_the_99th_percentile_capped_by_the_maximum() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, Duration::from_secs(1));
        let mut b = Recorder::new(t0, Duration::from_secs(1));
        // 198 fast operations (10 µs) and 2 slow ones (5 ms) over two threads: p99 is fast.
        for i in 0..99u64 {
            let s = t0 + Duration::from_micros(i * 100);
            a.record_event(s, s + Duration::from_micros(10));
            b.record_event(s, s + Duration::from_micros(10));
        }
        let s = t0 + Duration::from_millis(100);
        a.record_event(s, s + Duration::from_millis(5));
        b.record_event(s, s + Duration::from_millis(5));
        let m = Merged::from(vec![a, b]);
        let p99 = m.seconds[0].p99_ns.unwrap();
        assert!((10_000..12_500).contains(&p99), "{p99}");
        // 3 slow ones in 100: p99 is slow, and never above the measured maximum.
        let mut c = Recorder::new(t0, Duration::from_secs(1));
        for i in 0..100u64 {
            let s = t0 + Duration::from_micros(i * 100);
            let took = if i < 3 { 5_000 } else { 10 };
            c.record_event(s, s + Duration::from_micros(took));
        }
        let m = Merged::from(vec![c]);
        let p99 = m.seconds[0].p99_ns.unwrap();
        assert!((5_000_000..=5_000_001).contains(&p99), "{p99}");
    }

    #[test]
    fn a_timed_recorder_allocates_its_seconds_once_at_a_known_size() {
        let t0 = Instant::now();
        let r = Recorder::new(t0, Duration::from_secs(3_600));
        assert_eq!(r.seconds.len(), 3_601);
        assert_eq!(r.second_slots.len(), 3_601 * SLOTS);
        // 3,601 s × 129 u32 counters: under 2 MB per thread and operation type for an hour.
        assert!(r.second_slots.len() * 4 < 2 << 20);
    }

    #[test]
    fn paced_operations_count_from_their_intended_start() {
        let t0 = Instant::now();
        let mut r = Recorder::with(t0, None, true);
        // Due at t0, started 2 s late (the server was stopped), ran 1 ms.
        let start = t0 + Duration::from_secs(2);
        r.record(t0, start, start + Duration::from_millis(1), 50, 50);
        // On time.
        let due = t0 + Duration::from_millis(2500);
        r.record(due, due, due + Duration::from_millis(1), 50, 50);
        let m = Merged::from(vec![r]);
        assert_eq!((m.events, m.units, m.rows), (2, 100, 100));
        let service = m.latency().unwrap();
        let response = m.response_latency().unwrap();
        assert!(service.max < 1_100.0, "{service:?}");
        assert!(response.max >= 2_000_000.0, "{response:?}");
        assert!(m.seconds[2].max_response_ns.unwrap() >= 2_000_000_000);
        assert_eq!(m.seconds[0].units, 0);
        assert_eq!(m.seconds[2].units, 100);
        assert_eq!(
            m.seconds[2].p99_ns, None,
            "open-ended steps keep no per-second histogram"
        );
        assert_eq!(m.seconds.len() as u64, OPEN_ENDED_SECONDS + 1);
        assert!(!m.serialized_response().is_empty());
    }
}
