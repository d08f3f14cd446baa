//! What the engine families share: running a server as a child process ([`process`]), the
//! receive side of dbdelta's own wire clients ([`wire`]), `connect` URLs ([`connect`]), and the
//! superuser password of a started server ([`secret`]), what a build says of itself
//! ([`provenance`]: its compilers and version line), what of a product can be fetched
//! ([`fetchable`]: plain data the families give and `provision` reads), and what a build from
//! source is ([`recipe`]: the steps a family's recipe gives, as data, which `provision` runs).
//!
//! Must not: know a particular engine's SQL, files or protocol (the families do), or remote
//! hosts.

pub mod connect;
pub mod fetchable;
pub mod process;
pub mod provenance;
pub mod recipe;
pub mod secret;
pub mod secret_env;
pub mod wire;
