//! Where a target's server runs when it is not this host: the lab's `host = "ssh://…"`
//! ([`SshHost`]), its ssh config, a build to ship there and where the clients run
//! ([`RemoteHost`]), carried by [`super::TargetSpec::remote`].
//!
//! Plain data, parsed by `lab` and read by `crate::remote`, which reaches the host, runs the
//! agent there and decides that such a target gets a remote server. Must not: connect to
//! anything or start anything; no engine family reads it (an engine never knows about remote
//! hosts).

use std::fmt;
use std::path::PathBuf;

/// Where a target's server runs when it is not this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHost {
    pub host: SshHost,
    /// An ssh config file (`ssh -F`) from the lab; `None`: the user's own.
    pub ssh_config: Option<PathBuf>,
    /// A build from the local cache to copy to the host (a target's `version`), once fetched.
    pub ship: Option<Shipment>,
    /// `client = "remote"`: the load and the steps' clients run on the host too.
    pub client_remote: bool,
}

/// A cached build's tree to put on the remote host: copied once per host into the agent's
/// cache there (`remote/<entry>/tree`), `bin` then resolved inside the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipment {
    /// `builds/<product>/<version>`.
    pub entry: String,
    /// The tree here.
    pub tree: PathBuf,
    /// The binaries' directory, relative to the tree.
    pub bin: PathBuf,
}

/// `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshHost {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl SshHost {
    /// Parse `ssh://[user@]host[:port]`; an IPv6 address goes in brackets.
    pub fn parse(text: &str) -> Result<SshHost, String> {
        let bad = |why: &str| {
            format!(
                "host = \"{}\": {why}; expected e.g. \"ssh://bench@db1.example\" or \"ssh://root@10.0.0.2:2222\"",
                crate::engine::common::connect::redact_secrets(text)
            )
        };
        let rest = text
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("only ssh:// hosts are supported"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', ' ']) {
            return Err(bad("a host takes no path, query or spaces"));
        }
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() && !u.contains(':') => (Some(u.to_string()), h),
            Some((u, _)) if u.contains(':') => {
                return Err(bad(
                    "a password does not belong in the lab; use a key (ssh-agent or IdentityFile)",
                ));
            }
            Some(_) => return Err(bad("the user before @ is empty")),
            None => (None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("an unclosed [ in the host"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() || host.starts_with('-') {
            return Err(bad("the host name is missing"));
        }
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(bad(&format!(
                        "port \"{p}\" is not a number from 1 to 65535"
                    )));
                }
            },
        };
        Ok(SshHost {
            user,
            host: host.to_string(),
            port,
        })
    }
}

impl fmt::Display for SshHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match self.host.contains(':') {
            true => write!(f, "[{}]", self.host)?,
            false => f.write_str(&self.host)?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_user_host_and_port() {
        let h = SshHost::parse("ssh://bench@db1.example:2222").unwrap();
        assert_eq!(h.user.as_deref(), Some("bench"));
        assert_eq!(h.host, "db1.example");
        assert_eq!(h.port, Some(2222));
        assert_eq!(h.to_string(), "ssh://bench@db1.example:2222");
        let h = SshHost::parse("ssh://10.0.0.2").unwrap();
        assert_eq!((h.user, h.port), (None, None));
        let h = SshHost::parse("ssh://root@[fd00::2]:22").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("fd00::2", Some(22)));
        assert_eq!(h.to_string(), "ssh://root@[fd00::2]:22");
    }

    #[test]
    fn refuses_what_is_not_an_ssh_host() {
        for (text, why) in [
            ("http://h", "only ssh://"),
            ("ssh://u:pw@h", "password"),
            ("ssh://h:0", "port \"0\""),
            ("ssh://h:x", "port \"x\""),
            ("ssh://", "host name is missing"),
            ("ssh://-oProxyCommand=x", "host name is missing"),
            ("ssh://h/path", "no path"),
            ("ssh://@h", "user before @"),
        ] {
            let e = SshHost::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
