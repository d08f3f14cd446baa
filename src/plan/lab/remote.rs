//! A target whose server dbdelta does not start here: `connect` (a running server) and `host`
//! (a server on another host through dbdelta's agent), and the lab that agent plans from.
//! Must not: open a connection or an SSH session (`remote` and `engine` do).

use std::path::Path;

use super::raw::RawTarget;
use crate::engine::EngineKind;
use crate::engine::connect::ConnectUrl;
use crate::error::InputError;
use crate::suites::LabText as Source;

/// `connect = "postgres://…"`: a running server of the target's engine. It takes none of the
/// keys that start, configure or place a server dbdelta would start.
pub(super) fn connect(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
) -> Result<Option<ConnectUrl>, InputError> {
    let Some(c) = &t.connect else {
        return Ok(None);
    };
    let url = ConnectUrl::parse(c.get_ref()).map_err(|e| src.error_at(c.span(), e))?;
    if url.engine != engine || engine.embedded() {
        return Err(src.error_at(
            c.span(),
            format!(
                "connect: a {} URL on an engine = \"{}\" target; use {}",
                c.get_ref().split("://").next().unwrap_or(""),
                t.engine.get_ref(),
                url_forms()
            ),
        ));
    }
    let starts: [(&str, bool); 12] = [
        ("config", t.config.is_some()),
        ("settings", !t.settings.is_empty()),
        ("bin", t.bin.is_some()),
        ("env", t.env.is_some()),
        ("args", !t.args.is_empty()),
        ("version", t.version.is_some()),
        ("versions", t.versions.is_some()),
        ("malloc", t.malloc.is_some()),
        ("port", t.port.is_some()),
        ("build", t.build.is_some()),
        ("server_cpus", t.server_cpus.is_some()),
        ("placement", t.placement.is_some()),
    ];
    if let Some((key, _)) = starts.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            c.span(),
            format!(
                "connect names a server that is already running, so {key} (which starts, \
                 configures or places a server dbdelta runs) cannot apply; remove {key} or connect"
            ),
        ));
    }
    Ok(Some(url))
}

/// `host = "ssh://user@host[:port]"`: the server runs on that host, started there by dbdelta's
/// agent over SSH (`ssh_config` names an ssh config file for it); `client = "local"` is where
/// the load runs (`"remote"`: dbdelta's agent there runs the load and the steps' clients too).
/// `bin` is then a directory on that host; a `version` is fetched here and its
/// build copied there; what compiles here (`build`) does not apply.
pub(super) fn remote(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    base_dir: &Path,
) -> Result<Option<crate::engine::remote::RemoteHost>, InputError> {
    let Some(h) = &t.host else {
        for (key, v) in [("client", &t.client), ("ssh_config", &t.ssh_config)] {
            if let Some(v) = v {
                return Err(src.error_at(
                    v.span(),
                    format!("{key} is for a target on another host; add host = \"ssh://user@host\" or remove {key}"),
                ));
            }
        }
        return Ok(None);
    };
    let host = crate::engine::remote::SshHost::parse(h.get_ref())
        .map_err(|e| src.error_at(h.span(), e))?;
    if engine.embedded() {
        return Err(src.error_at(
            h.span(),
            format!(
                "host: {} runs inside dbdelta's own process; a remote host needs a server engine ({})",
                engine.family().title(),
                crate::engine::families::server_names().join(", ")
            ),
        ));
    }
    let client_remote = match t.client.as_ref().map(|c| (c, c.get_ref().as_str())) {
        None | Some((_, "local")) => false,
        Some((_, "remote")) => true,
        Some((c, other)) => {
            return Err(src.error_at(
                c.span(),
                format!("client = \"{other}\": expected \"local\" (this host) or \"remote\" (the server's host)"),
            ));
        }
    };
    let here_only: [(&str, bool); 3] = [
        ("connect", t.connect.is_some()),
        ("build", t.build.is_some()),
        ("server_cpus", t.server_cpus.is_some()),
    ];
    if let Some((key, _)) = here_only.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            h.span(),
            format!(
                "host runs the server on another host, where {key} does not apply in this version; remove {key} (bin names a directory on that host)"
            ),
        ));
    }
    let ssh_config = match &t.ssh_config {
        None => None,
        Some(c) => {
            let path = base_dir.join(c.get_ref());
            if !path.is_file() {
                return Err(src.error_at(
                    c.span(),
                    format!(
                        "ssh_config \"{}\" ({}) is not a file",
                        c.get_ref(),
                        path.display()
                    ),
                ));
            }
            Some(path)
        }
    };
    Ok(Some(crate::engine::remote::RemoteHost {
        host,
        ssh_config,
        ship: None,
        client_remote,
    }))
}

/// The lab a remote target's agent plans its steps from (`client = "remote"`): this lab's
/// `[lab]` (less what places or profiles, which is this host's business) and its suites, with
/// `target` alone as a plain target of its engine (the agent starts the server from the
/// target's own spec; the lab only yields the suites' steps).
pub fn for_agent(text: &str, target: &str, engine: EngineKind) -> Result<String, String> {
    let mut doc: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
    if let Some(toml::Value::Table(lab)) = doc.get_mut("lab") {
        for key in [
            "placement",
            "server_cpus",
            "client_cpus",
            "profile",
            "profile_hz",
            "profile_call_graph",
            "instructions",
            "instruction_passes",
            "instruction_starts",
            "count_jobs",
            "reuse_load",
        ] {
            lab.remove(key);
        }
    }
    let mut t = toml::Table::new();
    t.insert("name".into(), target.into());
    t.insert("engine".into(), engine.name().into());
    doc.insert("target".into(), toml::Value::Array(vec![t.into()]));
    toml::to_string(&doc).map_err(|e| format!("{e}"))
}

/// `postgres:// for postgres, mysql:// for mysql and mariadb (SQLite has no server to connect
/// to)`: each family's `connect` scheme and the names a lab gives it.
fn url_forms() -> String {
    use crate::engine::families;
    let forms: Vec<String> = (families::registry().into_iter())
        .filter_map(|f| {
            let scheme = f.url()?.schemes.first()?;
            let names: Vec<&str> = std::iter::once(f.name())
                .chain(families::other_products(f))
                .collect();
            Some(format!(
                "{scheme}:// for {}",
                crate::suggest::join(&names, "and")
            ))
        })
        .collect();
    let mut out = forms.join(", ");
    for title in families::embedded_titles() {
        out.push_str(&format!(" ({title} has no server to connect to)"));
    }
    out
}
