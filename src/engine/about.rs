//! What a family tells the layers above without a server running: the facts a reader of a
//! stored target needs ([`facts`]), the pace a plan estimates with before this host measured
//! anything ([`Pace`]), and the starter labs `dbdelta init` writes ([`Starter`]). Plain data
//! the families give through [`super::Family`]. Must not: start, reach or time anything.

use super::EngineKind;

/// What a phase of a run costs on an engine when the store has not measured it on this host
/// (`plan`'s time estimate asks [`Family::pace`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Starting and stopping a fresh server (PostgreSQL's initdb, MySQL's initialize).
    pub server_secs: f64,
    /// Rows loaded (and indexed) per second.
    pub load_rows_per_sec: f64,
    /// A postwrite's cleanup beyond its budget's wait (VACUUM and CHECKPOINT that outlast it).
    pub postwrite_extra_secs: f64,
    /// What a step costs beyond its warm-up and measured time (connecting, sampling, storing).
    pub step_extra_secs: f64,
    /// A counting cell's server start and stop under callgrind.
    pub count_server_secs: f64,
    /// How much slower the load runs under callgrind.
    pub count_load_factor: f64,
    /// One pair of counting passes of one step (with its share of the sizing passes).
    pub count_pair_secs: f64,
}

impl Pace {
    /// The slowest server's (MySQL's): counting from a release build's run of 8.0 vs 9.7 (two
    /// steps, 72 s for two cells: about 25 s to start, load and stop under callgrind, 4–6 s per
    /// pair), the rest guesses (docs/commands.md, Time estimate). `release`: dbdelta itself is
    /// a release build.
    pub fn slow_server(release: bool) -> Pace {
        Pace {
            server_secs: 10.0,
            load_rows_per_sec: 8_000.0,
            postwrite_extra_secs: 1.0,
            step_extra_secs: 0.4,
            count_server_secs: if release { 25.0 } else { 40.0 },
            count_load_factor: 3.0,
            count_pair_secs: if release { 8.0 } else { 40.0 },
        }
    }
}

/// What a stored target's engine is to a reader, from its family ([`EngineKind::stored`]): its
/// title, whether it runs in dbdelta's process, and the product the record names. An engine
/// this binary does not know is a server, named as stored.
pub fn facts(t: &crate::results::TargetInfo) -> crate::results::EngineFacts {
    match EngineKind::stored(&t.engine) {
        Some(k) => crate::results::EngineFacts {
            title: k.family().title().to_string(),
            embedded: k.embedded(),
            product: (k.family()).stored_product(t.server_version.as_deref(), &t.config_text),
        },
        None => crate::results::EngineFacts {
            title: t.engine.clone(),
            embedded: false,
            product: t.engine.clone(),
        },
    }
}

/// A lab `dbdelta init --engine NAME` writes: two targets of the engine that differ by one
/// setting, and where the build comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Starter {
    /// `engine = "NAME"` as the lab writes it (`mariadb` for the mysql family's MariaDB).
    pub engine: &'static str,
    /// The lab's name.
    pub title: &'static str,
    /// Comment lines and target lines that say where the build comes from.
    pub source: &'static str,
    /// The one setting the two targets differ by, the base's first.
    pub setting: [&'static str; 2],
}
