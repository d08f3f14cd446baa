//! PostgreSQL: a server of our own per target, driven over its unix socket.
//!
//! Owns: finding the binaries (`bin`, else Debian's newest `/usr/lib/postgresql/N/bin`),
//! `initdb` as the unprivileged server user with SCRAM-SHA-256 authentication and a fresh
//! random password for `postgres` (held in memory; the socket is the server account's alone),
//! the config (dbdelta's lines, then the target's),
//! start and readiness, version and `SHOW ALL`, `pg_database_size`, the postwrite cleanup
//! (`VACUUM (ANALYZE)` per table, `CHECKPOINT`, then wait out the budget), fast shutdown; and
//! the client: dbdelta's own wire client (`pgwire`) with server-side prepared statements (or
//! literal SQL over the simple protocol when switched off), `COPY` for loads, errors classified
//! by SQLSTATE. A server that is already running (`connect`) is [`existing`]'s.
//! Must not: time anything or count operations.
//!
//! The folder: `session` (the client side), `server` (the lifecycle), `postwrite`,
//! `diagnostics` (version, settings, size, background work), `pgwire` (the wire client),
//! `existing` (a running server), `family` (its registry entry), `recipe` (its build from source).

mod diagnostics;
pub mod existing;
mod family;
mod fetch;
mod postwrite;
mod recipe;
mod server;
mod session;
#[cfg(test)]
mod tests;

pub use family::PgFamily;
pub use server::PgServer;
pub use session::{PgDriver, PgSession, tcp_driver};

use diagnostics::{db_size, read_back};
use postwrite::postwrite;
use server::server_binary;
use session::Connect;
