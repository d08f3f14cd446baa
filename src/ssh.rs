//! The former path of a remote target's `ssh://` address: `lab` names `crate::ssh::SshHost`.
//! The type lives in [`crate::engine::remote`], with the target description it belongs to;
//! driving OpenSSH is `crate::remote::ssh`. Must not: hold anything but this re-export (it
//! goes once `lab` names the type where it lives).

pub use crate::engine::remote::SshHost;
