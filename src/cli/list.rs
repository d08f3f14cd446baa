//! `dbdelta list`: what the store holds (runs, targets), the step catalog and the versions a
//! product can be fetched in. Must not: write anything.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::StoreArg;
use super::write::write_text;
use crate::console::errln;
use crate::engine::EngineKind;
use crate::engine::common::fetchable::VersionStyle;
use crate::error::EXIT_FAILED;
use crate::report;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[arg(value_enum)]
    pub what: ListWhat,
    /// With `steps`: print each step's SQL as the engine receives it (for table 1).
    #[arg(long)]
    pub sql: bool,
    /// With `steps --sql`: the engine whose dialect to print: sqlite (default), postgres or mysql.
    #[arg(long, value_name = "ENGINE", requires = "sql")]
    pub engine: Option<String>,
    /// With `versions`: only this product (postgres, mysql or mariadb).
    #[arg(value_name = "PRODUCT")]
    pub product: Option<String>,
    /// With `runs` or `targets`: the runs of explain's twins too (each marked `kind explain`
    /// with the run it explains); they are left out by default.
    #[arg(long)]
    pub all: bool,
    /// Write the listing to FILE (whole or not at all) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListWhat {
    /// Runs in the store.
    Runs,
    /// The step catalog, in run order.
    Steps,
    /// Targets of every stored run.
    Targets,
    /// Server builds `fetch` and `version =` can get (from the registries' metadata), and which
    /// are cached.
    Versions,
}

/// `dbdelta list versions [PRODUCT]`: per product, what the registries offer (and where from)
/// and what is cached. Exit 1 when a registry could not be read (what is cached is still shown).
fn list_versions(product: Option<&str>, out: &mut String) -> Result<bool> {
    let products = match product {
        None => crate::provision::products(),
        Some(p) => match crate::provision::product(p) {
            Some(p) => vec![p],
            None => {
                let ids: Vec<&str> = crate::provision::products().iter().map(|p| p.id).collect();
                return crate::error::input(format!(
                    "list versions {p}: unknown product; use {}",
                    crate::suggest::join(&ids, "or")
                ));
            }
        },
    };
    let mut ok = true;
    for p in products {
        let cached = crate::provision::cached(p);
        let is_cached = |v: &str| cached.iter().any(|c| c.version == v);
        out.push_str(&format!("{} ({}@VERSION):\n", p.title, p.id));
        match crate::provision::listing(p) {
            Ok(list) if p.versions == VersionStyle::MajorMinorPackage => {
                // Hundreds of package builds: one line per major; Debian's, one line each, after.
                let (debian, list): (Vec<_>, Vec<_>) = list.into_iter().partition(|(r, _)| {
                    matches!(
                        r.package,
                        crate::engine::common::fetchable::Package::Debian { .. }
                    )
                });
                let mut majors: Vec<(String, Vec<&str>)> = Vec::new();
                for (r, _) in &list {
                    let major = r.version.split('.').next().unwrap_or("").to_string();
                    match majors.iter_mut().find(|(m, _)| *m == major) {
                        Some((_, vs)) => vs.push(&r.version),
                        None => majors.push((major, vec![&r.version])),
                    }
                }
                for (major, vs) in &majors {
                    let newest = vs.last().copied().unwrap_or("");
                    out.push_str(&format!(
                        "  {major:<4} newest {} ({} builds){}\n",
                        crate::provision::label(p, newest),
                        vs.len(),
                        if is_cached(newest) { "  cached" } else { "" }
                    ));
                }
                if let Some((r, _)) = list.first() {
                    out.push_str(&format!("  from {}\n", r.package.describe("VERSION")));
                }
                version_rows(&debian, &is_cached, out);
            }
            Ok(list) => version_rows(&list, &is_cached, out),
            Err(e) => {
                ok = false;
                out.push_str(&format!("  registry not reachable: {e:#}\n"));
            }
        }
        for c in &cached {
            out.push_str(&format!(
                "  cached {} ({}): {}\n",
                crate::provision::label(p, &c.version),
                c.source,
                c.bin.display()
            ));
        }
    }
    Ok(ok)
}

/// One line per build: version, source, cached, and whether the registry lists it.
fn version_rows(
    list: &[(crate::provision::Release, Result<bool, String>)],
    is_cached: &dyn Fn(&str) -> bool,
    out: &mut String,
) {
    for (r, listed) in list {
        let state = match listed {
            Ok(true) => "",
            Ok(false) => "  (not listed by the registry)",
            Err(_) => "  (registry not reachable)",
        };
        let cached = if is_cached(&r.version) {
            "  cached"
        } else {
            ""
        };
        let line = format!("  {:<9} {:<58}{cached}{state}", r.version, r.source());
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// `dbdelta list steps [--sql --engine E]`: each suite's listing, in registry order.
fn list_steps(args: &ListArgs) -> Result<String> {
    let suites = crate::suites::registry();
    if !args.sql {
        return Ok(suites.iter().map(|s| s.list_steps()).collect());
    }
    // The registry's first family is the default engine, as in a lab.
    let first = EngineKind::names().first().copied().unwrap_or_default();
    let name = args.engine.as_deref().unwrap_or(first);
    let Some(engine) = EngineKind::parse(name) else {
        return crate::error::input(format!(
            "--engine {name}: unknown engine{}; use one of {}",
            crate::suggest::did_you_mean(name, EngineKind::names()),
            EngineKind::names().join(", ")
        ));
    };
    Ok(suites.iter().map(|s| s.list_sql(engine)).collect())
}

/// The runs `list runs`/`list targets` show: the labs' runs, or every run with `--all`.
fn runs_listed(store: &Store, all: bool) -> Result<Vec<crate::store::RunSummary>> {
    match all {
        true => store.list_all_runs(),
        false => store.list_runs(),
    }
}

pub(super) fn list(store_path: &Path, args: ListArgs) -> Result<ExitCode> {
    if args.all && !matches!(args.what, ListWhat::Runs | ListWhat::Targets) {
        return crate::error::input("--all only applies to `dbdelta list runs` and `list targets`");
    }
    if args.sql && args.what != ListWhat::Steps {
        return crate::error::input("--sql only applies to `dbdelta list steps`");
    }
    if let Some(p) = &args.product
        && args.what != ListWhat::Versions
    {
        return crate::error::input(format!(
            "list: unexpected argument {p}; a product only follows `dbdelta list versions`"
        ));
    }
    let mut out = String::new();
    let mut code = ExitCode::SUCCESS;
    match args.what {
        ListWhat::Versions => {
            if !list_versions(args.product.as_deref(), &mut out)? {
                code = ExitCode::from(EXIT_FAILED);
            }
        }
        ListWhat::Steps => out = list_steps(&args)?,
        ListWhat::Runs => {
            let store = Store::open_existing(store_path)?;
            if let Some(warning) = store.exposure() {
                errln!("{warning}");
            }
            for r in runs_listed(&store, args.all)? {
                let mut label = r.name.map(|n| format!("  name {n}")).unwrap_or_default();
                if !r.tags.is_empty() {
                    label.push_str(&format!("  tags {}", r.tags.join(",")));
                }
                if let Some(kind) = &r.kind {
                    let of = r.explains.as_deref().unwrap_or("?");
                    label.push_str(&format!("  kind {kind} (twins of run {of})"));
                }
                out.push_str(&format!(
                    "{}  {}  {:<10}  {} step(s), {} measurement(s)  {}  [{}]{label}\n",
                    r.id,
                    r.started,
                    if r.complete { "complete" } else { "INCOMPLETE" },
                    r.steps,
                    r.measurements,
                    r.lab,
                    r.targets.join(", ")
                ));
            }
        }
        ListWhat::Targets => {
            let store = Store::open_existing(store_path)?;
            for r in runs_listed(&store, args.all)? {
                let data = store.load_run(&r.id)?;
                for t in data.targets {
                    out.push_str(&format!(
                        "{}  {:<24} {:<8} {}{}\n",
                        r.id,
                        t.name,
                        report::engine_label(&t),
                        t.server_version.unwrap_or_else(|| "-".into()),
                        if t.failed { "  FAILED" } else { "" }
                    ));
                }
            }
        }
    }
    write_text(args.output.as_deref(), &out, "the listing")?;
    Ok(code)
}
