//! `[[target]]`: names, engines, the server's environment, config files and settings, ports,
//! table DDL and the malloc library, checked into a [`LabTarget`](super::LabTarget). Must not:
//! decide where the build comes from (`build.rs`) or where the server runs (`remote.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::LabTarget;
use super::build::{bin_dir, build, library, version, versions};
use super::keys::placement;
use super::raw::RawTarget;
use super::remote::{connect, remote};
use crate::engine::{EngineKind, TableDdl};
use crate::error::InputError;
use crate::suites::LabText as Source;

/// What a `config =` file that cannot be found does to a parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoneConfig {
    /// Bad input naming the path (a lab planned to run).
    Fail,
    /// No lines from it (a stored run's lab planned again, whose stored lines stand in).
    Empty,
}

/// Every `[[target]]`, each checked on its own and names checked for uniqueness.
pub(super) fn targets(
    src: &Source<'_>,
    raw: Vec<RawTarget>,
    (base_dir, gone): (&Path, GoneConfig),
) -> Result<Vec<LabTarget>, InputError> {
    if raw.is_empty() {
        return Err(src.error(
            format!(
                "the lab has no [[target]]; add at least one, e.g. [[target]] name = \"a\" engine = \"{}\"",
                EngineKind::names().first().copied().unwrap_or_default()
            ),
        ));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    raw.into_iter()
        .map(|t| {
            let name = target_name(src, &t.name, &mut seen)?;
            target(src, t, name, (base_dir, gone))
        })
        .collect()
}

/// A target's name: usable as a directory name, and not used before.
fn target_name(
    src: &Source<'_>,
    name: &Spanned<String>,
    seen: &mut BTreeMap<String, usize>,
) -> Result<String, InputError> {
    let text = name.get_ref().clone();
    let valid = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !valid {
        return Err(src.error_at(
            name.span(),
            format!(
                "target name \"{text}\" may only use letters, digits, '.', '_' and '-' (it names directories)"
            ),
        ));
    }
    let line = src.line_of(name.span().start);
    if let Some(first) = seen.insert(text.clone(), line) {
        return Err(src.error_at(
            name.span(),
            format!(
                "target name \"{text}\" is used twice (first at line {first}); give each target a unique name"
            ),
        ));
    }
    Ok(text)
}

/// One `[[target]]` after its name.
pub(super) fn target(
    src: &Source<'_>,
    t: RawTarget,
    name: String,
    (base_dir, gone): (&Path, GoneConfig),
) -> Result<LabTarget, InputError> {
    let engine = EngineKind::parse(t.engine.get_ref()).ok_or_else(|| {
        src.error_at(
            t.engine.span(),
            format!(
                "unknown engine \"{}\"{}; this version supports: {}",
                t.engine.get_ref(),
                crate::suggest::did_you_mean(
                    t.engine.get_ref(),
                    EngineKind::names()
                        .into_iter()
                        .chain(product_aliases().map(|(p, _)| p))
                ),
                (EngineKind::names().into_iter().map(String::from))
                    .chain(
                        product_aliases()
                            .map(|(p, f)| format!("{p} (an alias of {f}: the same family)"))
                    )
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let embedded = engine.embedded();
    let connect = connect(src, &t, engine)?;
    let remote = remote(src, &t, engine, base_dir)?;
    let (mut settings, config_name) = config_settings(src, t.config.as_ref(), (base_dir, gone))?;
    settings.extend(t.settings.iter().cloned());
    one_statement_each(src, &name, engine, &settings)?;
    let bin = bin_dir(src, t.bin.as_ref(), engine, remote.is_some(), base_dir)?;
    let (version, product) = version(src, &t, engine, bin.is_some())?;
    let (versions, product) = match versions(src, &t, engine)? {
        Some((set, p)) => (Some(set), Some(p)),
        None => (None, product),
    };
    let tables = table_ddl(src, &t, engine, product)?;
    let library = library(src, &t, engine, base_dir)?;
    let build = build(src, &t, base_dir)?;
    let env = server_env(src, t.env, t.malloc.as_ref(), engine)?;
    let port = port(src, t.port.as_ref(), embedded)?;
    if let Some(s) = &t.server_cpus
        && embedded
    {
        return Err(src.error_at(
            s.span(),
            format!(
                "{} has no server process: its engine runs in the client threads; use client_cpus",
                engine.family().title()
            ),
        ));
    }
    let own = placement(src, t.placement, t.server_cpus, t.client_cpus)?;
    Ok(LabTarget {
        placement: (!own.is_empty()).then_some(own),
        build,
        library,
        connect,
        remote,
        name,
        engine,
        settings,
        config_name,
        bin,
        env,
        args: t.args,
        version,
        product,
        versions,
        sweep: None,
        port,
        tables,
    })
}

/// A server target's environment: `env` as written, plus `LD_PRELOAD` for `malloc`; both are
/// bad input for SQLite, which runs inside dbdelta's own process.
fn server_env(
    src: &Source<'_>,
    env: Option<Spanned<BTreeMap<String, String>>>,
    malloc: Option<&Spanned<String>>,
    engine: EngineKind,
) -> Result<BTreeMap<String, String>, InputError> {
    let (embedded, title) = (engine.embedded(), engine.family().title());
    let mut env = match env {
        Some(e) if embedded => {
            return Err(src.error_at(
                e.span(),
                format!("env is for server engines; {title} runs inside dbdelta's own process"),
            ));
        }
        Some(e) => e.into_inner(),
        None => BTreeMap::new(),
    };
    if let Some(m) = malloc {
        if embedded {
            return Err(src.error_at(
                m.span(),
                format!("malloc preloads an allocator into a server; {title} runs inside dbdelta"),
            ));
        }
        let lib = malloc_library(m.get_ref()).map_err(|e| src.error_at(m.span(), e))?;
        env.insert("LD_PRELOAD".into(), lib);
    }
    Ok(env)
}

/// Every setting is one line, and SQLite's (sent as `PRAGMA <line>`) one statement: a `;` or a
/// line break would smuggle in a second statement or config line, so it is bad input, never
/// executed.
fn one_statement_each(
    src: &Source<'_>,
    name: &str,
    engine: EngineKind,
    settings: &[String],
) -> Result<(), InputError> {
    for s in settings {
        if s.contains('\n') || s.contains('\r') {
            return Err(src.error(format!(
                "[[target]] {name}: the setting {s:?} spans lines; write one setting per list item"
            )));
        }
        if engine.embedded() && s.contains(';') {
            return Err(src.error(format!(
                "[[target]] {name}: the {} setting {s:?} holds a ';': each setting is one \
                 PRAGMA (e.g. \"cache_size = -65536\"); put a second one in its own list item",
                engine.family().title()
            )));
        }
    }
    Ok(())
}

/// The lines of a target's `config` file (relative paths start at the lab's folder) and the
/// name it was given; none from a file that is gone where `gone` says so.
fn config_settings(
    src: &Source<'_>,
    config: Option<&Spanned<String>>,
    (base_dir, gone): (&Path, GoneConfig),
) -> Result<(Vec<String>, Option<String>), InputError> {
    let Some(c) = config else {
        return Ok((Vec::new(), None));
    };
    let rel = PathBuf::from(c.get_ref());
    let path = if rel.is_absolute() {
        rel.clone()
    } else {
        base_dir.join(&rel)
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    let read = std::fs::read_to_string(&path);
    if gone == GoneConfig::Empty
        && let Err(e) = &read
        && e.kind() == std::io::ErrorKind::NotFound
    {
        return Ok((Vec::new(), Some(c.get_ref().clone())));
    }
    let body = read.map_err(|e| {
        src.error_at(
            c.span(),
            format!(
                "cannot read config file \"{}\" ({}): {e}; fix the path (relative paths start at the lab file's folder)",
                c.get_ref(),
                path.display()
            ),
        )
    })?;
    Ok((
        body.lines().map(str::to_string).collect(),
        Some(c.get_ref().clone()),
    ))
}

/// A server target's fixed `port`.
pub(super) fn port(
    src: &Source<'_>,
    p: Option<&Spanned<i64>>,
    embedded: bool,
) -> Result<Option<u16>, InputError> {
    let Some(p) = p else { return Ok(None) };
    if embedded {
        return Err(src.error_at(p.span(), "port is for server engines"));
    }
    u16::try_from(*p.get_ref())
        .ok()
        .filter(|p| *p >= 1024)
        .map(Some)
        .ok_or_else(|| src.error_at(p.span(), "port must be from 1024 to 65535"))
}

/// `storage_engine`, `table_options` and `index_options` of a MySQL/MariaDB target.
fn table_ddl(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    fetched: Option<crate::provision::Product>,
) -> Result<TableDdl, InputError> {
    let keys = [
        ("storage_engine", &t.storage_engine),
        ("table_options", &t.table_options),
        ("index_options", &t.index_options),
    ];
    let mut out = TableDdl::default();
    for (key, value) in keys {
        let Some(v) = value else { continue };
        if !engine.family().table_options() {
            return Err(src.error_at(v.span(), format!("{key} is for {}", with_table_options())));
        }
        let text = v.get_ref().trim();
        if text.is_empty() || text.contains(';') || text.contains('\n') {
            return Err(src.error_at(
                v.span(),
                format!(
                    "{key} must be one line of DDL options without ';', e.g. {}",
                    match key {
                        "table_options" => "\"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8\"",
                        "index_options" => "\"COMMENT 'cfname=cf1'\"",
                        _ => "\"rocksdb\"",
                    }
                ),
            ));
        }
        match key {
            "storage_engine" => {
                let name = (engine.family())
                    .storage_engine(text, fetched)
                    .map_err(|e| src.error_at(v.span(), e))?;
                out.engine = Some(name.to_string());
            }
            "table_options" => out.table_options = Some(text.to_string()),
            _ => out.index_options = Some(text.to_string()),
        }
    }
    Ok(out)
}

/// The aliases a lab may write that name another product of their family (`mariadb`), each
/// with its family's name.
fn product_aliases() -> impl Iterator<Item = (&'static str, &'static str)> {
    (crate::engine::families::registry().into_iter()).flat_map(|f| {
        let name = f.name();
        crate::engine::families::other_products(f)
            .map(move |p| (p, name))
            .collect::<Vec<_>>()
    })
}

/// `MySQL/MariaDB targets (engine = "mysql" or "mariadb")`: the families whose targets may
/// set table options, by their products' titles and the names a lab gives them.
fn with_table_options() -> String {
    let families: Vec<_> = (crate::engine::families::registry().into_iter())
        .filter(|f| f.table_options())
        .collect();
    let titles: Vec<&str> = (families.iter())
        .flat_map(|f| match f.products() {
            [] => vec![f.title()],
            ps => ps.iter().map(|p| p.title).collect(),
        })
        .collect();
    let names: Vec<String> = (families.iter())
        .flat_map(|f| std::iter::once(f.name()).chain(crate::engine::families::other_products(*f)))
        .map(|n| format!("\"{n}\""))
        .collect();
    format!(
        "{} targets (engine = {})",
        titles.join("/"),
        crate::suggest::join(&names, "or")
    )
}

/// The Debian library behind `malloc = "jemalloc" | "tcmalloc" | "mimalloc"`.
fn malloc_library(name: &str) -> Result<String, String> {
    let (file, package) = match name {
        "jemalloc" => ("libjemalloc.so.2", "libjemalloc2"),
        "tcmalloc" => ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
        "mimalloc" => ("libmimalloc.so.2", "libmimalloc2.0"),
        other => {
            return Err(format!(
                "unknown allocator \"{other}\"; use jemalloc, tcmalloc or mimalloc, or set env LD_PRELOAD"
            ));
        }
    };
    let path = Path::new("/usr/lib/x86_64-linux-gnu").join(file);
    if path.is_file() {
        Ok(path.display().to_string())
    } else {
        Err(format!(
            "malloc = \"{name}\" needs {} which is not installed; apt-get install {package}",
            path.display()
        ))
    }
}
