//! The agent protocol, typed: one JSON [`Request`] per line on the agent's stdin, one
//! [`Reply`] per line on its stdout, the agent's [`Hello`] first.
//!
//! Owns the requests (one struct each, wrapped by [`Request`] under an `"op"` tag) and, through
//! [`Ask`], the type of every request's answer, which both sides use: the local side reads a
//! reply as `Reply<A::Answer>` ([`super::server::Link::ask`]), the agent can only encode an
//! `A::Answer` for request `A` ([`Ask::encode`]). Must not: do I/O (the link and the agent do)
//! or decide anything about servers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::{TableDdl, TargetSpec, TcpEndpoint};
use crate::runner::step::StepRun;
use crate::sampler::{ProbeWhat, Probed};

/// A request and the type of its answer.
pub trait Ask: Into<Request> {
    type Answer: Serialize + DeserializeOwned;

    /// The answer to this request as the agent sends it (the only way it builds one).
    fn encode(answer: Self::Answer) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(answer)
    }
}

/// What the local side asks of the agent: one line, `{"op": "<name>", ...fields}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Start(Start),
    Probe(Probe),
    DbSize(DbSize),
    Postwrite(Postwrite),
    Release(Release),
    CheckAlive(CheckAlive),
    BuildDir(FindBuild),
    Plan(Plan),
    Load(Load),
    Step(Step),
    Stop(Stop),
}

/// Start the target's server (its data directory in the agent's work directory).
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    pub spec: Box<TargetSpec>,
}

/// The sampler's counters of the server's processes and host.
#[derive(Debug, Serialize, Deserialize)]
pub struct Probe {
    pub what: ProbeWhat,
}

/// The server's database size.
#[derive(Debug, Serialize, Deserialize)]
pub struct DbSize {}

/// The server's postwrite cleanup of `tables`, within `budget_ms`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Postwrite {
    pub tables: Vec<String>,
    pub budget_ms: u64,
}

/// Drop the suite's `tables` if they exist.
#[derive(Debug, Serialize, Deserialize)]
pub struct Release {
    pub tables: Vec<String>,
}

/// An error (with the end of the server's log) when the server has died.
#[derive(Debug, Serialize, Deserialize)]
pub struct CheckAlive {}

/// Where a shipped build goes on the host, and whether it is there.
#[derive(Debug, Serialize, Deserialize)]
pub struct FindBuild {
    pub entry: String,
}

/// `client = "remote"`: plan the suites from this lab (see `lab::for_agent`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Plan {
    pub lab: String,
    pub quick: bool,
}

/// Load `suite`'s tables from the host.
#[derive(Debug, Serialize, Deserialize)]
pub struct Load {
    pub suite: String,
    pub clients: u32,
    pub ddl: TableDdl,
}

/// Run one step with its clients on the host.
#[derive(Debug, Serialize, Deserialize)]
pub struct Step {
    pub suite: String,
    pub step: String,
    pub clients: u32,
    pub repeat: u32,
    pub ddl: TableDdl,
}

/// Stop the server, remove the work directory, exit.
#[derive(Debug, Serialize, Deserialize)]
pub struct Stop {}

/// `impl Ask` and `From<$req> for Request` for each request.
macro_rules! asks {
    ($($req:ident => $variant:ident: $answer:ty;)*) => {$(
        impl Ask for $req {
            type Answer = $answer;
        }
        impl From<$req> for Request {
            fn from(r: $req) -> Request {
                Request::$variant(r)
            }
        }
    )*};
}

asks! {
    Start => Start: Started;
    Probe => Probe: Probed;
    DbSize => DbSize: Option<u64>;
    Postwrite => Postwrite: ();
    Release => Release: ();
    CheckAlive => CheckAlive: ();
    FindBuild => BuildDir: BuildDir;
    Plan => Plan: ();
    // (load seconds, index seconds), each timed on the host.
    Load => Load: (f64, f64);
    Step => Step: StepRun;
    Stop => Stop: ();
}

/// One answer line: `{"ok": answer}` or `{"err": "message"}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply<T> {
    Ok(T),
    Err(String),
}

/// The agent's first line (inside `{"ok": …}`): who answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub agent: String,
    pub pid: u32,
    pub workdir: PathBuf,
}

/// The answer to [`Start`]: where the clients connect and what the server said about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Started {
    pub version: String,
    pub settings: BTreeMap<String, String>,
    pub config_text: Option<String>,
    /// The data directory on the remote host.
    pub data_dir: PathBuf,
    /// The address the server listens on for this client, and how to log in.
    pub address: String,
    pub tcp: TcpEndpoint,
}

/// The answer to [`FindBuild`].
#[derive(Debug, Serialize, Deserialize)]
pub struct BuildDir {
    pub dir: PathBuf,
    pub present: bool,
}

/// The file written last into a shipped tree on the host: a tree without it is unfinished.
pub const SHIPPED: &str = ".dbdelta-shipped";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_are_one_json_line_each() {
        let r = serde_json::to_string(&Request::from(Postwrite {
            tables: vec!["sbtest1".into()],
            budget_ms: 500,
        }))
        .unwrap();
        assert_eq!(
            r,
            r#"{"op":"postwrite","tables":["sbtest1"],"budget_ms":500}"#
        );
        let p = serde_json::to_string(&Request::from(Probe {
            what: ProbeWhat::Memory { pss: true },
        }))
        .unwrap();
        assert_eq!(p, r#"{"op":"probe","what":{"memory":{"pss":true}}}"#);
        let back: Reply<()> = serde_json::from_str(r#"{"err":"no server"}"#).unwrap();
        assert!(matches!(back, Reply::Err(e) if e == "no server"));
    }

    #[test]
    fn requests_without_fields_are_their_op_alone() {
        let s = serde_json::to_string(&Request::from(DbSize {})).unwrap();
        assert_eq!(s, r#"{"op":"db_size"}"#);
        let back: Request = serde_json::from_str(r#"{"op":"stop"}"#).unwrap();
        assert!(matches!(back, Request::Stop(_)));
        let size: Reply<Option<u64>> = serde_json::from_str(r#"{"ok":4096}"#).unwrap();
        assert!(matches!(size, Reply::Ok(Some(4096))));
    }
}
