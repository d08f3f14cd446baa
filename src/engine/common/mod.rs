//! What the engine families share: running a server as a child process ([`process`]), the
//! receive side of dbdelta's own wire clients ([`wire`]) and the two wire protocols any family
//! may speak ([`pgwire`]: PostgreSQL's; [`mywire`]: MySQL's), `connect` URLs ([`connect`]), and the
//! superuser password of a started server ([`secret`]), what a build says of itself
//! ([`provenance`]: its compilers and version line), what of a product can be fetched
//! ([`fetchable`]: plain data the families give and `provision` reads), and what a build from
//! source is ([`recipe`]: the steps a family's recipe gives, as data, which `provision` runs).
//!
//! Must not: know a particular engine's SQL, files or server (the families do), or remote
//! hosts. A wire protocol is here, not in the family that first spoke it, so a family of
//! another server that speaks it (a PostgreSQL- or MySQL-compatible one) needs no sibling.

pub mod connect;
pub mod fetchable;
pub mod mywire;
pub mod pgwire;
pub mod process;
pub mod provenance;
pub mod recipe;
pub mod secret;
pub mod secret_env;
pub mod wire;
