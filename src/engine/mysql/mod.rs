//! MySQL and MariaDB (one engine, one protocol): a private server per target.
//!
//! Owns: finding the server and install-db binaries (the target's `bin`, else Debian's
//! MariaDB), the config file (dbdelta's defaults, then the target's settings), initialising the
//! data directory and starting the server as the unprivileged server user on a unix socket and
//! a free loopback port (`root@localhost` the only account, with a fresh random password set by
//! `--init-file` before the first connection; the data directory and the socket's directory
//! the server account's alone), recording version and effective settings, the InnoDB "postwrite"
//! cleanup (`ANALYZE TABLE`, forced dirty-page flush, settings restored), and the client side:
//! sessions over the unix socket with server-side prepared statements (or SQL text with escaped
//! literals when `prepared = false`), multi-row-insert bulk loads, error classification.
//! Must not: time anything or count operations (the runner does), or invent suite SQL
//! (each suite's `sql.rs` does).
//!
//! The folder: `session` (the client side), `server` (the lifecycle), `postwrite`,
//! `diagnostics` (logs, version, settings, background work), `flavor` (binaries and config),
//! `mywire` (the wire client), `existing` (a running server), `family` (its registry entry),
//! `recipe` (the CMake steps and MariaDB's build from source), `oracle_recipe` (Oracle MySQL's).

mod diagnostics;
pub mod existing;
mod family;
mod fetch;
pub mod flavor;
mod oracle_recipe;
mod postwrite;
mod recipe;
mod server;
mod session;
#[cfg(test)]
mod tests;

pub use family::MysqlFamily;
pub use server::MysqlServer;
pub use session::{MysqlDriver, MysqlSession, tcp_driver};

use diagnostics::version_label;
use session::MyEndpoint;

/// The database the suite's tables live in.
const DB_NAME: &str = "dbdelta";

/// The user dbdelta logs in as on its own servers (with the server's random password).
const USER: &str = "root";
