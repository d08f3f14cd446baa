//! `dbdelta fetch` and `dbdelta build`: their flags and printing where the build landed. Must
//! not: fetch, verify or compile anything itself (`provision` does).

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::Verbosity;
use crate::console::{errln, outln};
use crate::error::InputError;
use crate::progress::Progress;

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// postgres, sqlite, mariadb or mysql (Oracle MySQL 8.0 and later).
    pub engine: String,
    /// A Debian source package (postgresql-15, sqlite3, mariadb; `name=VERSION` for one
    /// version), a source directory or a tarball. Default for sqlite: Debian's sqlite3.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// o2, o3, os, lto, pgo, pgo+lto or custom (only --cflags/--ldflags).
    #[arg(long, default_value = "o2")]
    pub variant: String,
    /// Compiler flags added after the variant's.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub cflags: Option<String>,
    /// Linker flags added after the variant's.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub ldflags: Option<String>,
    /// PGO: the suite the profile is trained on (sysbench, insert or linkbench).
    #[arg(long, value_name = "SUITE", default_value = "sysbench")]
    pub train: String,
    /// PGO: the training run's scale (quick or small).
    #[arg(long, value_name = "SCALE", default_value = "small")]
    pub train_scale: String,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// What to fetch: postgres@VERSION (17, 17.10 or an exact build like 17.10.0-beta.17),
    /// mysql@VERSION (Oracle MySQL: 5.6, 5.7, 8.0 or exact, e.g. 8.0.31) or mariadb@VERSION
    /// (10.2, 10.11, 11.4 or exact); `dbdelta list versions` shows them.
    pub what: String,
}

/// `dbdelta build`: compile (or find in the cache) and print where the result is.
pub(super) fn build_cmd(args: &BuildArgs, progress: &Progress) -> Result<ExitCode> {
    use crate::provision::build::{self, Flags, Training};
    let engine = crate::engine::recipe(&args.engine).ok_or_else(|| {
        let names = crate::engine::recipe_names();
        InputError::new(format!(
            "build {}: unknown engine{}; dbdelta builds {}",
            args.engine,
            crate::suggest::did_you_mean(&args.engine, names.iter().copied()),
            crate::suggest::join(&names, "or")
        ))
    })?;
    let req = build::BuildRequest::new(
        engine,
        args.source.clone(),
        &args.variant,
        Flags {
            cflags: args.cflags.clone().unwrap_or_default(),
            ldflags: args.ldflags.clone().unwrap_or_default(),
        },
        Training {
            suite: args.train.clone(),
            scale: args.train_scale.clone(),
            section: crate::suites::pgo_training(&args.train, &args.train_scale)
                .map_err(|e| InputError::new(format!("--train: {e}")))?,
        },
    )
    .map_err(|e| {
        let flag = match e.key {
            "train" => "--train",
            "train_scale" => "--train-scale",
            "source" => "--source",
            _ => "--variant",
        };
        InputError::new(format!("{flag}: {}", e.message))
    })?;
    crate::signals::install_saying(
        "stopping the build (its tree is kept: the same command continues it); send it again to stop at once",
        |signal| {
            crate::engine::common::process::kill_started();
            std::process::exit(super::run::interrupted_code(signal).into());
        },
    )
    .context("installing the handlers of SIGINT, SIGTERM, SIGHUP and SIGQUIT")?;
    let built = match build::build(&req, &|line| progress.line(line)) {
        Err(e) if crate::signals::interrupted() => {
            errln!("dbdelta: {e:#}");
            let signal = crate::signals::first().unwrap_or(libc::SIGTERM);
            return Ok(ExitCode::from(super::run::interrupted_code(signal)));
        }
        built => built?,
    };
    let path = built.library.as_ref().unwrap_or(&built.bin);
    outln!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn fetch_cmd(what: &str, progress: &Progress) -> Result<ExitCode> {
    let parsed = what
        .split_once('@')
        .and_then(|(p, v)| Some((crate::provision::product(p)?, v)))
        .filter(|(_, v)| !v.is_empty());
    let Some((product, version)) = parsed else {
        let forms: Vec<String> = (crate::provision::products().iter())
            .map(|p| format!("{}@VERSION", p.id))
            .collect();
        let example = crate::provision::products().last().map_or("", |p| p.id);
        return crate::error::input(format!(
            "fetch {what}: expected {}, e.g. dbdelta fetch {example}@VERSION",
            crate::suggest::join(&forms, "or")
        ));
    };
    let f = crate::provision::fetch(product, version, &|line| progress.line(line))?;
    let how = match f.downloaded {
        0 => "from the cache, nothing downloaded".to_string(),
        n => format!("downloaded {:.1} MB", n as f64 / 1e6),
    };
    outln!(
        "{} {}: {} ({how})",
        product.title,
        crate::provision::label(product, &f.version),
        f.bin.display()
    );
    Ok(ExitCode::SUCCESS)
}
