//! The ranges of the numeric lab keys and command-line flags that bound what a run allocates
//! or how long it waits: repeats, client counts, the plan's cells and step lengths, each
//! written once and checked before anything is allocated or started (docs/lab.md and the CLI
//! help state them).
//!
//! Owns the bounds and the words that state them ("from 1 to 1000"). Must not: know where a
//! value was written; the lab parser adds the file, line and key, the CLI the flag.

/// A whole number from `min` to `max`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub min: i64,
    pub max: i64,
}

impl Count {
    /// Whether `v` is in the range.
    pub fn contains(self, v: i64) -> bool {
        (self.min..=self.max).contains(&v)
    }

    /// `v` when it is in the range, as the type the caller keeps it in.
    pub fn get<T: TryFrom<i64>>(self, v: i64) -> Option<T> {
        self.contains(v).then(|| T::try_from(v).ok()).flatten()
    }

    /// "from 1 to 1000".
    pub fn words(self) -> String {
        format!("from {} to {}", self.min, self.max)
    }
}

/// A number of seconds: finite, at most `max`, and positive (or also zero, with `zero`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Secs {
    pub zero: bool,
    pub max: f64,
}

impl Secs {
    /// Whether `v` is in the range (NaN and infinities never are).
    pub fn contains(self, v: f64) -> bool {
        v.is_finite() && v <= self.max && (v > 0.0 || (self.zero && v == 0.0))
    }

    /// "a number of seconds from 0 to 604800 (7 days)".
    pub fn words(self) -> String {
        let low = if self.zero { "from 0" } else { "above 0 and" };
        let to = if self.zero { "to" } else { "at most" };
        format!(
            "a number of seconds {low} {to} {} ({} days)",
            self.max,
            self.max / DAY
        )
    }

    /// `Ok(v)` in range, else "KEY must be a number of seconds … , not V".
    pub fn check(self, key: &str, v: f64) -> Result<f64, String> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(format!("{key} must be {}, not {}", self.words(), shown(v)))
        }
    }
}

/// A number as a message shows it: `1e20`, not 21 digits.
pub fn shown(v: f64) -> String {
    if v.abs() >= 1e9 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

const DAY: f64 = 86_400.0;

/// `repeats = N` and `--repeats N`: repeats of every cell.
pub const REPEATS: Count = Count { min: 1, max: 1000 };

/// `min_repeats`/`max_repeats` of `repeats = "auto"` (the upper bound; the lower one depends
/// on the other key).
pub const AUTO_REPEATS_MAX: i64 = 50;

/// A client count of `clients = [...]`, `--clients` and LinkBench's `requesters`.
pub const CLIENTS: Count = Count {
    min: 1,
    max: 10_000,
};

/// Cells of a plan (targets × client counts × repeats, the most rounds with `"auto"`): what a
/// plan allocates one record (and `--emit k8s` one Job) for.
pub const MAX_CELLS: u64 = 10_000;

/// sysbench's `tables` and `--tables`: tables per target.
pub const TABLES: Count = Count { min: 1, max: 1000 };

/// sysbench's `rows` and `--rows`: rows per table (at least 200: the hot-points and range
/// steps need them; at most 10^12: far beyond any table that can be loaded, and small enough
/// that `tables * rows` cannot overflow).
pub const ROWS: Count = Count {
    min: 200,
    max: 1_000_000_000_000,
};

/// A measured step's length (`read_secs`, `write_secs`, `query_secs`, `request_secs`,
/// `min_secs`, `max_secs`): at most 7 days.
pub const STEP_SECS: Secs = Secs {
    zero: false,
    max: 7.0 * DAY,
};

/// A wait that may be none (`warmup_secs`, `postwrite_secs`): at most 7 days.
pub const WAIT_SECS: Secs = Secs {
    zero: true,
    max: 7.0 * DAY,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_their_bounds_and_nothing_outside() {
        assert_eq!(REPEATS.get::<u32>(1), Some(1));
        assert_eq!(REPEATS.get::<u32>(1000), Some(1000));
        assert_eq!(REPEATS.get::<u32>(0), None);
        assert_eq!(REPEATS.get::<u32>(1001), None);
        assert_eq!(REPEATS.get::<u32>(4_294_967_296), None);
        assert_eq!(REPEATS.get::<u32>(-1), None);
        // A range wider than the type: the conversion refuses what does not fit.
        let wide = Count {
            min: 0,
            max: i64::MAX,
        };
        assert_eq!(wide.get::<u8>(256), None);
        assert_eq!(CLIENTS.words(), "from 1 to 10000");
    }

    #[test]
    fn seconds_refuse_nan_infinity_negative_and_huge() {
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e20, 1e12, 604_800.5] {
            assert!(!STEP_SECS.contains(bad), "{bad}");
            assert!(!WAIT_SECS.contains(bad), "{bad}");
        }
        assert!(!STEP_SECS.contains(0.0));
        assert!(WAIT_SECS.contains(0.0));
        assert!(STEP_SECS.contains(604_800.0) && STEP_SECS.contains(0.001));
        assert_eq!(
            STEP_SECS.check("write_secs", 1e20).unwrap_err(),
            "write_secs must be a number of seconds above 0 and at most 604800 (7 days), not 1e20"
        );
        assert!(
            WAIT_SECS
                .check("warmup_secs", -1.0)
                .unwrap_err()
                .contains("from 0 to 604800 (7 days), not -1")
        );
    }
}
