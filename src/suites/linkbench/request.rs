//! LinkBench's request phase (docs/workloads.md, LinkBench: the mix, ids, the ten operations): one
//! requester per connection draws an operation from the mix, its ids from the Zipf access
//! distributions, and runs the operation's statements, write operations in a transaction.
//!
//! Owns the requester's executor and its id draws. Must not: time anything (the runner does).

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::lsql::{self, Stmt};
use super::{
    EXISTING_ADD, EXISTING_GET, EXISTING_UPDATE, HISTORY_SHARE, LINK_DATA_MAX, LINK_RANDOM,
    LINK_TYPES, MULTIGET_P, NODE_RANDOM, NODE_TIME_S, REQUEST_TIME_MS, Settings, ZIPF_LINK_READ,
    ZIPF_LINK_WRITE, ZIPF_NODE_READ, ZIPF_NODE_UPDATE, degree, link_type, payload, payload_len,
    type_links,
};
use crate::engine::{DbError, Dialect, Param, Session, StmtId};
use crate::workload::{Done, Executor, ExecutorFactory, Opening, Zipf, recycle};

/// Ids 1..=n drawn Zipf-distributed by rank, the ranks spread over the id space by a fixed
/// multiplicative permutation (so the hot ids are not the lowest ones, nor the ones with the
/// most links).
#[derive(Debug, Clone, Copy)]
pub struct IdDraw {
    zipf: Option<Zipf>,
    n: u64,
    mult: u64,
}

impl IdDraw {
    /// Zipf with `shape` over 1..=n; `None`: uniform.
    pub fn new(n: u64, shape: Option<f64>) -> IdDraw {
        let n = n.max(1);
        // A multiplier coprime with n makes rank → id a permutation.
        let mut mult = 0x9e37_79b9_7f4a_7c15 % n;
        while gcd(mult, n) != 1 {
            mult += 1;
        }
        IdDraw {
            zipf: shape.map(|s| Zipf::new(n, s)),
            n,
            mult,
        }
    }

    pub fn draw(&self, rng: &mut SmallRng) -> u64 {
        match &self.zipf {
            None => rng.random_range(1..=self.n),
            Some(z) => {
                let rank = z.sample(rng).clamp(1, self.n) - 1;
                ((u128::from(rank) * u128::from(self.mult)) % u128::from(self.n)) as u64 + 1
            }
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// Opens a requester: prepares the request statements (getlink's per id count on first use).
pub struct RequestFactory {
    pub(super) settings: Settings,
    /// The step's index (each step's writes get later times than the step before's).
    pub(super) index: u32,
}

impl ExecutorFactory for RequestFactory {
    /// Requests of type `op` alone: the mix with every other type's share zero (none for a
    /// type the mix never runs).
    fn only(&self, op: usize) -> Option<Arc<dyn ExecutorFactory>> {
        let share = *self.settings.mix.0.get(op).filter(|s| **s > 0.0)?;
        let mut settings = self.settings.clone();
        settings.mix = super::Mix(std::array::from_fn(|i| if i == op { share } else { 0.0 }));
        Some(Arc::new(RequestFactory {
            settings,
            index: self.index,
        }))
    }

    fn open(&self, session: &mut dyn Session, at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let s = &self.settings;
        let stmts = Stmt::ALL
            .iter()
            .map(|st| session.prepare(&lsql::text(*st, at.dialect)))
            .collect::<Result<Vec<_>, _>>()?;
        let n = s.maxid1;
        Ok(Box::new(RequestExec {
            dialect: at.dialect,
            two_when_changed: lsql::upsert(at.dialect) == lsql::Upsert::DuplicateKey,
            stmts,
            multiget: vec![None; lsql::MULTIGET_MAX + 1],
            mix: s.mix,
            node_bytes: s.node_bytes,
            link_bytes: s.link_bytes,
            link_read: IdDraw::new(n, Some(ZIPF_LINK_READ)),
            link_write: IdDraw::new(n, Some(ZIPF_LINK_WRITE)),
            node_read: IdDraw::new(n, Some(ZIPF_NODE_READ)),
            node_update: IdDraw::new(n, Some(ZIPF_NODE_UPDATE)),
            node_delete: IdDraw::new(n, None),
            rng: SmallRng::seed_from_u64(at.seed),
            clock: REQUEST_TIME_MS + (i64::from(self.index) << 36) + (i64::from(at.client) << 28),
            history: Vec::with_capacity(HISTORY_CAP),
            data: Vec::with_capacity(4 * s.node_bytes.max(s.link_bytes) as usize),
            params: Vec::with_capacity(lsql::MULTIGET_MAX + 2),
            rows_touched: [0; 10],
        }))
    }
}

/// Lists seen full (a page of `RANGE_LIMIT` rows) kept for paging further back.
const HISTORY_CAP: usize = 128;

pub(super) struct RequestExec {
    dialect: Dialect,
    /// The upsert counts a changed row as 2 affected rows (`ON DUPLICATE KEY UPDATE`): read
    /// once at open, not per operation.
    two_when_changed: bool,
    /// In [`Stmt::ALL`] order.
    stmts: Vec<StmtId>,
    /// getlink's statement per id count, prepared on first use.
    multiget: Vec<Option<StmtId>>,
    mix: super::Mix,
    node_bytes: u32,
    link_bytes: u32,
    link_read: IdDraw,
    link_write: IdDraw,
    node_read: IdDraw,
    node_update: IdDraw,
    node_delete: IdDraw,
    rng: SmallRng,
    /// The synthetic clock of the rows this requester writes (ms).
    clock: i64,
    /// (id1, link type, offset of the next page) of lists that filled a page.
    history: Vec<(i64, i64, i64)>,
    data: Vec<u8>,
    params: Vec<Param<'static>>,
    /// Rows returned or changed per operation type.
    rows_touched: [u64; 10],
}

impl RequestExec {
    /// `stmts` holds the statements in `Stmt::ALL` order, which is the declaration order.
    fn stmt(&self, s: Stmt) -> StmtId {
        self.stmts[s as usize]
    }

    /// A link type and an id2 of node `id1`: id2 uniform over the `ceil(links / existing)`
    /// ids after id1, so about `existing` of the draws hit a link the load wrote.
    fn pick_link(&mut self, id1: u64, existing: f64) -> (i64, i64) {
        let t = self.rng.random_range(0..LINK_TYPES);
        let (id2, _) = self.pick_id2(id1, t, existing);
        (id2, link_type(t))
    }

    fn pick_id2(&mut self, id1: u64, t: u64, existing: f64) -> (i64, i64) {
        let n = type_links(degree(id1), t) as f64;
        let range = ((n / existing).ceil() as u64).max(1);
        ((id1 + self.rng.random_range(0..range)) as i64, link_type(t))
    }

    /// New `data` for a link or a node, into `self.data`.
    fn new_data(&mut self, node: bool) {
        self.data.clear();
        let (median, max, random) = if node {
            (self.node_bytes, usize::MAX, NODE_RANDOM)
        } else {
            (self.link_bytes, LINK_DATA_MAX, LINK_RANDOM)
        };
        let len = payload_len(&mut self.rng, median, max);
        payload(&mut self.rng, &mut self.data, len, random);
    }

    fn tick(&mut self) -> i64 {
        self.clock += 1;
        self.clock
    }

    fn random_type(&mut self) -> u64 {
        self.rng.random_range(0..LINK_TYPES)
    }

    /// addlink (`add`: mostly new id2s) and updatelink (mostly existing links): insert or make
    /// visible, keep the count, update the row when it was already there.
    fn add_link(&mut self, session: &mut dyn Session, add: bool) -> Result<u64, DbError> {
        let id1 = self.link_write.draw(&mut self.rng);
        let existing = if add { EXISTING_ADD } else { EXISTING_UPDATE };
        let (id2, ty) = self.pick_link(id1, existing);
        self.new_data(false);
        let time = self.tick();
        let version = time & 0x7fff_ffff;
        let id1 = id1 as i64;
        let (up, count, update) = (
            self.stmt(Stmt::LinkUpsert),
            self.stmt(Stmt::CountUp),
            self.stmt(Stmt::LinkUpdate),
        );
        let two_when_changed = self.two_when_changed;
        let data = std::str::from_utf8(&self.data).expect("ascii");
        transaction(session, self.dialect, |s| {
            let row = [id1, id2, ty, lsql::VISIBLE].map(Param::Int);
            let tail = [time, 0].map(Param::Int);
            let r = s.execute(
                up,
                &[
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    Param::Text(data),
                    tail[0],
                    tail[1],
                ],
            )?;
            // ON DUPLICATE KEY (MySQL): 1 inserted, 2 made visible, 0 already visible. ON
            // CONFLICT: 1 inserted or made visible, 0 already visible.
            let (counts, updates) = match (two_when_changed, r) {
                (_, 0) => (false, true),
                (true, 2) => (true, true),
                _ => (true, false),
            };
            if counts {
                s.execute(count, &[id1, ty, time].map(Param::Int))?;
            }
            if updates {
                let v = [lsql::VISIBLE, time, version, id1, id2, ty].map(Param::Int);
                s.execute(
                    update,
                    &[v[0], Param::Text(data), v[1], v[2], v[3], v[4], v[5]],
                )?;
            }
            Ok(1)
        })
    }

    /// deletelink: hide a visible link and decrement its count (LinkBench's request phase
    /// never expunges).
    fn delete_link(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let id1 = self.link_write.draw(&mut self.rng);
        let (id2, ty) = self.pick_link(id1, EXISTING_UPDATE);
        let time = self.tick();
        let key = [id1 as i64, id2, ty].map(Param::Int);
        let (visible, hide, count) = (
            self.stmt(Stmt::LinkVisible),
            self.stmt(Stmt::LinkHide),
            self.stmt(Stmt::CountDown),
        );
        transaction(session, self.dialect, |s| {
            if s.execute(visible, &key)? == 0 {
                return Ok(0);
            }
            s.execute(hide, &key)?;
            s.execute(count, &[key[0], key[2], Param::Int(time)])?;
            Ok(1)
        })
    }

    /// getlink: the links of (id1, type) among 1 to 128 id2s (geometric, p = 0.382).
    fn get_links(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let id1 = self.link_read.draw(&mut self.rng);
        let t = self.random_type();
        let u: f64 = 1.0 - self.rng.random::<f64>();
        let n = (1.0 + (u.ln() / (1.0 - MULTIGET_P).ln()).floor()) as usize;
        let n = n.clamp(1, lsql::MULTIGET_MAX);
        let stmt = match self.multiget[n] {
            Some(s) => s,
            None => {
                let s = session.prepare(&lsql::get_links(self.dialect, n))?;
                self.multiget[n] = Some(s);
                s
            }
        };
        let mut params = recycle(std::mem::take(&mut self.params));
        params.extend([Param::Int(id1 as i64), Param::Int(link_type(t))]);
        for _ in 0..n {
            let (id2, _) = self.pick_id2(id1, t, EXISTING_GET);
            params.push(Param::Int(id2));
        }
        let result = session.execute(stmt, &params);
        self.params = recycle(params);
        result
    }

    /// getlinklist: the newest page of a list, or (30%) the next page of a list that filled
    /// one before.
    fn get_link_list(&mut self, session: &mut dyn Session) -> Result<u64, DbError> {
        let back = !self.history.is_empty() && self.rng.random::<f64>() < HISTORY_SHARE;
        let (id1, ty, offset) = if back {
            let i = self.rng.random_range(0..self.history.len());
            self.history.swap_remove(i)
        } else {
            let id1 = self.link_read.draw(&mut self.rng) as i64;
            (id1, link_type(self.random_type()), 0)
        };
        let params = [id1, ty, 0, i64::MAX, offset].map(Param::Int);
        let rows = session.execute(self.stmt(Stmt::GetLinkList), &params)?;
        if rows >= u64::from(lsql::RANGE_LIMIT) {
            let next = (id1, ty, offset + i64::from(lsql::RANGE_LIMIT));
            if self.history.len() < HISTORY_CAP {
                self.history.push(next);
            } else {
                let i = self.rng.random_range(0..HISTORY_CAP);
                self.history[i] = next;
            }
        }
        Ok(rows)
    }

    /// addnode and updatenode.
    fn write_node(&mut self, session: &mut dyn Session, add: bool) -> Result<u64, DbError> {
        let id = if add {
            0
        } else {
            self.node_update.draw(&mut self.rng) as i64
        };
        self.new_data(true);
        let tick = self.tick();
        let time = NODE_TIME_S + 86_400 + tick % 1_000_000;
        let version = tick & 0x7fff_ffff;
        let data = Param::Text(std::str::from_utf8(&self.data).expect("ascii"));
        let ty = Param::Int(lsql::NODE_TYPE);
        if add {
            let stmt = self.stmt(Stmt::AddNode);
            session.execute(stmt, &[ty, Param::Int(1), Param::Int(time), data])
        } else {
            let stmt = self.stmt(Stmt::UpdateNode);
            let v = [version, time, id].map(Param::Int);
            session.execute(stmt, &[v[0], v[1], data, v[2], ty])
        }
    }
}

impl Executor for RequestExec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let op = self.mix.pick(self.rng.random::<f64>());
        let rows = match op {
            0 => self.add_link(session, true)?,
            1 => self.delete_link(session)?,
            2 => self.add_link(session, false)?,
            3 => {
                let id1 = self.link_read.draw(&mut self.rng) as i64;
                let ty = link_type(self.random_type());
                session.execute(self.stmt(Stmt::CountLink), &[id1, ty].map(Param::Int))?
            }
            4 => self.get_links(session)?,
            5 => self.get_link_list(session)?,
            6 => {
                let id = self.node_read.draw(&mut self.rng) as i64;
                session.execute(self.stmt(Stmt::GetNode), &[Param::Int(id)])?
            }
            7 => self.write_node(session, true)?,
            8 => self.write_node(session, false)?,
            _ => {
                let id = self.node_delete.draw(&mut self.rng) as i64;
                let params = [id, lsql::NODE_TYPE].map(Param::Int);
                session.execute(self.stmt(Stmt::DeleteNode), &params)?
            }
        };
        self.rows_touched[op] += rows;
        Ok(Done { op, units: 1, rows })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows_touched
    }
}

/// Runs `f` inside a write transaction: BEGIN, `f`, COMMIT; on an error, ROLLBACK (whose own
/// error is dropped: the first one is what happened) and the error.
fn transaction(
    session: &mut dyn Session,
    dialect: Dialect,
    f: impl FnOnce(&mut dyn Session) -> Result<u64, DbError>,
) -> Result<u64, DbError> {
    session.execute_sql(lsql::begin(dialect))?;
    match f(session) {
        Ok(rows) => {
            session.execute_sql("COMMIT")?;
            Ok(rows)
        }
        Err(e) => {
            let _ = session.execute_sql("ROLLBACK");
            Err(e)
        }
    }
}
