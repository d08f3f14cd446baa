//! LinkBench's load (`linkbench.load`): one loader per connection writes its own id range of
//! nodes, their links and their counts as multi-row inserts of `batch` rows, each statement an
//! operation of type `nodes`, `links` or `counts` counting its rows.
//!
//! Owns the loader's executor. Must not: time anything (the runner does).

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::lsql;
use super::{
    LINK_DATA_MAX, LINK_RANDOM, LOAD_TIME_MS, NODE_RANDOM, NODE_TIME_S, Settings, count_rows,
    degree, link_type, loader_range, payload, payload_len, type_links,
};
use crate::engine::{DbError, Dialect, Param, Session, StmtId};
use crate::workload::{Done, Executor, ExecutorFactory, Opening, recycle};

/// Loads one loader's id range (see [`Settings::load_statements`]).
pub(super) struct LoadFactory {
    pub(super) settings: Settings,
}

impl ExecutorFactory for LoadFactory {
    /// Each loader writes its own id range once.
    fn repeatable(&self) -> bool {
        false
    }

    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let s = &self.settings;
        let (first, last) = loader_range(s.maxid1, s.loaders, at.client);
        let b = s.batch as usize;
        let full = [
            session.prepare(&lsql::load_nodes(at.dialect, b))?,
            session.prepare(&lsql::load_links(at.dialect, b))?,
            session.prepare(&lsql::load_counts(at.dialect, b))?,
        ];
        Ok(Box::new(LoadExec {
            dialect: at.dialect,
            batch: b,
            next: first,
            last,
            node_bytes: s.node_bytes,
            link_bytes: s.link_bytes,
            full,
            links: Vec::with_capacity(2 * b),
            counts: Vec::with_capacity(2 * b),
            rng: SmallRng::seed_from_u64(at.seed),
            data: Vec::new(),
            ints: Vec::with_capacity(b * 7),
            params: Vec::with_capacity(b * 7),
            rows_touched: [0; 3],
        }))
    }
}

/// A link waiting for its statement: (id1, j, type index); its id2 is id1 + j (LinkBench's
/// load: each type's links go to the next ids).
type PendingLink = (u64, u64, u64);
/// A count waiting for its statement: (id, type index, count).
type PendingCount = (u64, u64, u32);

struct LoadExec {
    dialect: Dialect,
    batch: usize,
    /// The next node id to write, and the last of the range.
    next: u64,
    last: u64,
    node_bytes: u32,
    link_bytes: u32,
    /// Full-batch statements: nodes, links, counts.
    full: [StmtId; 3],
    links: Vec<PendingLink>,
    counts: Vec<PendingCount>,
    rng: SmallRng,
    /// The payloads of one statement, back to back.
    data: Vec<u8>,
    /// Integer parameters of one statement, in order; `Text` ones come from `data`.
    ints: Vec<i64>,
    params: Vec<Param<'static>>,
    rows_touched: [u64; 3],
}

/// What a load statement's row holds: integer columns, then where `data` goes.
enum Shape {
    /// id, type, version, time, data
    Node,
    /// id1, id2, link_type, visibility, data, time, version
    Link,
    /// id, link_type, count, time, version (no data)
    Count,
}

impl LoadExec {
    /// The next statement: full link or count batches first, then the next nodes (queuing
    /// their links and counts), then what is left of links and counts.
    fn next_op(&self) -> Option<(usize, usize)> {
        let b = self.batch;
        if self.links.len() >= b {
            Some((1, b))
        } else if self.counts.len() >= b {
            Some((2, b))
        } else if self.next <= self.last {
            Some((0, b.min((self.last + 1 - self.next) as usize)))
        } else if !self.links.is_empty() {
            Some((1, self.links.len()))
        } else if !self.counts.is_empty() {
            Some((2, self.counts.len()))
        } else {
            None
        }
    }

    /// Values of `rows` nodes from `next` on, queuing their links and counts.
    fn nodes(&mut self, rows: usize) {
        for _ in 0..rows {
            let id = self.next;
            self.next += 1;
            let len = payload_len(&mut self.rng, self.node_bytes, usize::MAX);
            payload(&mut self.rng, &mut self.data, len, NODE_RANDOM);
            let t = NODE_TIME_S + (id % 86_400) as i64;
            self.ints
                .extend([id as i64, lsql::NODE_TYPE, 0, t, len as i64]);
            let d = degree(id);
            for t in 0..count_rows(d) {
                let n = type_links(d, t);
                self.links.extend((0..n).map(|j| (id, j, t)));
                self.counts.push((id, t, n as u32));
            }
        }
    }

    /// Values of the first `rows` queued links.
    fn links(&mut self, rows: usize) {
        for (id1, j, t) in self.links.drain(..rows) {
            let len = payload_len(&mut self.rng, self.link_bytes, LINK_DATA_MAX);
            payload(&mut self.rng, &mut self.data, len, LINK_RANDOM);
            let time = LOAD_TIME_MS + (id1 * 16 + j % 16) as i64;
            self.ints.extend([
                id1 as i64,
                (id1 + j) as i64,
                link_type(t),
                lsql::VISIBLE,
                len as i64,
                time,
                0,
            ]);
        }
    }

    /// Values of the first `rows` queued counts.
    fn counts(&mut self, rows: usize) {
        for (id, ty, n) in self.counts.drain(..rows) {
            let time = LOAD_TIME_MS + (id * 16) as i64;
            self.ints
                .extend([id as i64, link_type(ty), i64::from(n), time, 0]);
        }
    }
}

impl Executor for LoadExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let Some((op, rows)) = self.next_op() else {
            // The runner stops a finished loader before this; say so if it did not.
            return Err(DbError::fatal("the loader ran past its id range"));
        };
        self.data.clear();
        self.ints.clear();
        let shape = match op {
            0 => {
                self.nodes(rows);
                Shape::Node
            }
            1 => {
                self.links(rows);
                Shape::Link
            }
            _ => {
                self.counts(rows);
                Shape::Count
            }
        };
        let stmt = if rows == self.batch {
            self.full[op]
        } else {
            let sql = match shape {
                Shape::Node => lsql::load_nodes(self.dialect, rows),
                Shape::Link => lsql::load_links(self.dialect, rows),
                Shape::Count => lsql::load_counts(self.dialect, rows),
            };
            session.prepare(&sql)?
        };
        let mut params = recycle(std::mem::take(&mut self.params));
        bind_rows(&shape, &self.ints, &self.data, &mut params);
        let result = session.execute(stmt, &params);
        self.params = recycle(params);
        let changed = result?;
        self.rows_touched[op] += rows as u64;
        Ok(Done {
            op,
            units: rows as u64,
            rows: changed,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }

    fn finished(&self) -> bool {
        self.next_op().is_none()
    }
}

/// Parameters of a load statement from its integers and payloads. Node and link rows carry
/// their payload's length in column 4, where `data` goes.
fn bind_rows<'a>(shape: &Shape, ints: &[i64], data: &'a [u8], out: &mut Vec<Param<'a>>) {
    let (width, has_data) = match shape {
        Shape::Node => (5, true),
        Shape::Link => (7, true),
        Shape::Count => (5, false),
    };
    let mut at = 0usize;
    for row in ints.chunks_exact(width) {
        for (c, v) in row.iter().enumerate() {
            if has_data && c == DATA_COLUMN {
                let len = *v as usize;
                let text = std::str::from_utf8(&data[at..at + len]).expect("ascii");
                out.push(Param::Text(text));
                at += len;
            } else {
                out.push(Param::Int(*v));
            }
        }
    }
}

/// The column of `data` in node and link load rows.
const DATA_COLUMN: usize = 4;
