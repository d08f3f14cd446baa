//! Per-thread recording of a step's measured period.
//!
//! Each client thread owns one [`Recorder`]: an HDR histogram of event latency (ns), a
//! preallocated array of per-second buckets, and event/error counters. Recording an event is a
//! few arithmetic operations and array writes: no allocation, no lock, no atomic
//! read-modify-write, no formatting. Recorders are merged once, after the threads stopped.
//! Must not: read the clock (the caller passes the instants it took) or talk to the database.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::ErrorKind;
use crate::results::{ErrorCounts, Latency};

/// Highest latency the histograms resolve: one hour, in ns.
const MAX_NS: u64 = 3_600 * 1_000_000_000;

/// One second of one thread.
struct SecondBucket {
    events: u64,
    max_ns: u64,
    /// Coarse (1 significant digit) so that a bucket per second stays small.
    hist: Histogram<u32>,
}

/// What one client thread measured in the measured period.
pub struct Recorder {
    measure_start: Instant,
    hist: Histogram<u64>,
    seconds: Vec<SecondBucket>,
    events: u64,
    errors: ErrorCounts,
    last_end: Option<Instant>,
}

impl Recorder {
    /// A recorder for a measured period starting at `measure_start` and lasting `measure`
    /// (events that start before the deadline and end after it land in the last bucket).
    pub fn new(measure_start: Instant, measure: Duration) -> Recorder {
        let buckets = measure.as_secs_f64().ceil().max(1.0) as usize + 1;
        let seconds = (0..buckets)
            .map(|_| SecondBucket {
                events: 0,
                max_ns: 0,
                hist: Histogram::new_with_bounds(1, MAX_NS, 1).expect("valid histogram bounds"),
            })
            .collect();
        Recorder {
            measure_start,
            hist: Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds"),
            seconds,
            events: 0,
            errors: ErrorCounts::default(),
            last_end: None,
        }
    }

    fn bucket(&mut self, end: Instant) -> &mut SecondBucket {
        let i = end.saturating_duration_since(self.measure_start).as_secs() as usize;
        let last = self.seconds.len() - 1;
        &mut self.seconds[i.min(last)]
    }

    /// Record a completed event that ran from `start` to `end`.
    #[inline]
    pub fn record_event(&mut self, start: Instant, end: Instant) {
        let ns = end
            .saturating_duration_since(start)
            .as_nanos()
            .min(MAX_NS as u128) as u64;
        let ns = ns.max(1);
        self.hist.saturating_record(ns);
        self.events += 1;
        self.last_end = Some(end);
        let b = self.bucket(end);
        b.events += 1;
        b.max_ns = b.max_ns.max(ns);
        b.hist.saturating_record(ns);
    }

    /// Record a failed event.
    #[inline]
    pub fn record_error(&mut self, kind: ErrorKind, end: Instant) {
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

/// All threads' recorders of one step, merged.
pub struct Merged {
    pub events: u64,
    pub errors: ErrorCounts,
    /// The latest event end over all threads: the end of the measured period.
    pub last_end: Option<Instant>,
    pub hist: Histogram<u64>,
    /// Per second: (events, p99 ns, max ns); p99/max are `None` without events.
    pub seconds: Vec<(u64, Option<u64>, Option<u64>)>,
}

impl Merged {
    /// Merge recorders (all built with the same measured period).
    pub fn from(recorders: Vec<Recorder>) -> Merged {
        let mut it = recorders.into_iter();
        let mut first = it.next().expect("at least one client");
        let mut merged_seconds: Vec<SecondBucket> = std::mem::take(&mut first.seconds);
        let mut m = Merged {
            events: first.events,
            errors: first.errors,
            last_end: first.last_end,
            hist: first.hist,
            seconds: Vec::new(),
        };
        for r in it {
            m.events += r.events;
            m.errors.retryable += r.errors.retryable;
            m.errors.reconnect += r.errors.reconnect;
            m.errors.fatal += r.errors.fatal;
            m.last_end = m.last_end.max(r.last_end);
            m.hist.add(&r.hist).expect("same histogram bounds");
            for (into, from) in merged_seconds.iter_mut().zip(r.seconds) {
                into.events += from.events;
                into.max_ns = into.max_ns.max(from.max_ns);
                into.hist.add(&from.hist).expect("same histogram bounds");
            }
        }
        m.seconds = merged_seconds
            .iter()
            .map(|b| {
                if b.events == 0 {
                    (0, None, None)
                } else {
                    (
                        b.events,
                        Some(b.hist.value_at_quantile(0.99)),
                        Some(b.max_ns),
                    )
                }
            })
            .collect();
        m
    }

    /// Latency summary in µs; `None` without events.
    pub fn latency(&self) -> Option<Latency> {
        if self.hist.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &self.hist;
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

    /// The merged histogram in HdrHistogram's V2+deflate format, for the store.
    pub fn serialized_histogram(&self) -> Vec<u8> {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut out = Vec::new();
        let _ = V2DeflateSerializer::new().serialize(&self.hist, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        b.record_error(ErrorKind::Retryable, t0 + Duration::from_micros(40));
        // Past the deadline: lands in the last bucket.
        b.record_event(t0 + Duration::from_secs(5), t0 + Duration::from_secs(5));
        let m = Merged::from(vec![a, b]);
        assert_eq!(m.events, 4);
        assert_eq!(m.errors.retryable, 1);
        assert_eq!(m.seconds.len(), 3);
        assert_eq!(m.seconds[0].0, 2);
        assert_eq!(m.seconds[1].0, 1);
        assert_eq!(m.seconds[2].0, 1);
        let lat = m.latency().unwrap();
        assert!(lat.max >= 1000.0 && lat.max < 1002.0, "{lat:?}");
        assert!(!m.serialized_histogram().is_empty());
    }
}
