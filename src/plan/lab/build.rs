//! Where a target's build comes from: `bin`, `version` or `versions` (fetched), `library`
//! (SQLite) or `build` (compiled from source with a variant's flags). Must not: fetch or build
//! anything (`provision` does, when the plan is prepared).

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::raw::{RawTarget, RawVersions};
use crate::engine::EngineKind;
use crate::error::InputError;
use crate::provision::Product;
use crate::provision::build::{BuildRequest, Flags, Training};
use crate::provision::sweep::{self, VersionSet};
use crate::suites::LabText as Source;

/// A server target's `bin` directory, which must exist.
pub(super) fn bin_dir(
    src: &Source<'_>,
    bin: Option<&Spanned<String>>,
    engine: EngineKind,
    remote: bool,
    base_dir: &Path,
) -> Result<Option<PathBuf>, InputError> {
    let Some(b) = bin else { return Ok(None) };
    if engine.embedded() {
        return Err(src.error_at(
            b.span(),
            format!(
                "bin is for server engines; {} is the library built into dbdelta",
                engine.family().title()
            ),
        ));
    }
    if remote {
        // A directory on the target's host: its agent looks for the binaries there.
        return Ok(Some(PathBuf::from(b.get_ref())));
    }
    let rel = PathBuf::from(b.get_ref());
    let path = if rel.is_absolute() {
        rel
    } else {
        base_dir.join(rel)
    };
    if !path.is_dir() {
        return Err(src.error_at(
            b.span(),
            format!(
                "bin directory \"{}\" ({}) does not exist; point bin at the folder holding the server binaries",
                b.get_ref(),
                path.display()
            ),
        ));
    }
    Ok(Some(path))
}

/// Whose fetched builds serve the engine as the target writes it (`mariadb`: MariaDB's), when
/// its family lists that name among its products.
fn fetched_product(t: &RawTarget, engine: EngineKind) -> Option<Product> {
    let written = t.engine.get_ref().as_str();
    (engine.family().products().iter())
        .find(|p| p.answers_to(written))
        .copied()
}

/// `engine = "postgres", "mysql" (Oracle MySQL) or "mariadb"`: the engine names whose builds
/// are fetched, with the product's full title where it is not the title.
fn fetchable_engines() -> String {
    let names: Vec<String> = (crate::provision::products().iter())
        .map(|p| match p.full_title == p.title {
            true => format!("\"{}\"", p.id),
            false => format!("\"{}\" ({})", p.id, p.full_title),
        })
        .collect();
    format!("engine = {}", crate::suggest::join(&names, "or"))
}

/// A target's `version` to fetch and whose builds it names.
pub(super) fn version(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    has_bin: bool,
) -> Result<(Option<String>, Option<Product>), InputError> {
    let Some(v) = &t.version else {
        return Ok((None, None));
    };
    if engine.embedded() {
        return Err(src.error_at(
            v.span(),
            format!(
                "version fetches server builds ({}); {} is built into dbdelta",
                crate::provision::products()
                    .iter()
                    .map(|p| p.id)
                    .collect::<Vec<_>>()
                    .join(", "),
                engine.family().title()
            ),
        ));
    }
    if has_bin {
        return Err(src.error_at(v.span(), "set either bin or version, not both"));
    }
    let product = fetched_product(t, engine).ok_or_else(|| {
        src.error_at(
            t.engine.span(),
            format!("version needs {}", fetchable_engines()),
        )
    })?;
    let prefix = format!("{}@", product.id);
    let text = v.get_ref().trim();
    Ok((
        Some(text.strip_prefix(&prefix).unwrap_or(text).to_string()),
        Some(product),
    ))
}

/// A target's `versions` (a sweep) and whose builds it names; it replaces `version`, `bin`
/// and `build`.
pub(super) fn versions(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
) -> Result<Option<(VersionSet, Product)>, InputError> {
    let Some(v) = &t.versions else {
        return Ok(None);
    };
    let Some(product) = fetched_product(t, engine) else {
        return Err(src.error_at(
            v.span(),
            format!(
                "versions sweeps fetched server builds: it needs {}",
                fetchable_engines()
            ),
        ));
    };
    let other = [
        ("version", t.version.is_some()),
        ("bin", t.bin.is_some()),
        ("build", t.build.is_some()),
    ];
    if let Some((key, _)) = other.iter().find(|(_, set)| *set) {
        return Err(src.error_at(
            v.span(),
            format!("set either versions or {key}, not both: versions makes one target per fetched build"),
        ));
    }
    let prefix = format!("{}@", product.id);
    let bare = |s: &str| {
        s.trim()
            .strip_prefix(&prefix)
            .unwrap_or(s.trim())
            .to_string()
    };
    let set = match v.get_ref() {
        RawVersions::One(s) => VersionSet::parse(&bare(s)),
        RawVersions::Many(l) => VersionSet::list(l.iter().map(|s| bare(s)).collect()),
    };
    let set = set.ok_or_else(|| {
        let written = match v.get_ref() {
            RawVersions::One(s) => format!("\"{s}\""),
            RawVersions::Many(l) => format!("{l:?}"),
        };
        src.error_at(
            v.span(),
            format!(
                "versions = {written} is not {}; for one build write version = \"…\"",
                sweep::SYNTAX
            ),
        )
    })?;
    Ok(Some((set, product)))
}

/// An embedded engine's `library` (SQLite's), which must exist.
pub(super) fn library(
    src: &Source<'_>,
    t: &RawTarget,
    engine: EngineKind,
    base_dir: &Path,
) -> Result<Option<PathBuf>, InputError> {
    let Some(l) = &t.library else { return Ok(None) };
    if !engine.embedded() {
        return Err(src.error_at(
            l.span(),
            format!(
                "library is for {} targets (a libsqlite3.so to load); a server target takes bin",
                crate::engine::families::embedded_titles().join(" or ")
            ),
        ));
    }
    let path = base_dir.join(l.get_ref());
    if !path.is_file() {
        return Err(src.error_at(
            l.span(),
            format!(
                "library \"{}\" ({}) does not exist; give the path of a libsqlite3.so (`dbdelta build {}` prints one)",
                l.get_ref(),
                path.display(),
                engine.name()
            ),
        ));
    }
    Ok(Some(path))
}

/// A target's `build = {…}`: what to compile, checked without compiling anything.
pub(super) fn build(
    src: &Source<'_>,
    t: &RawTarget,
    base_dir: &Path,
) -> Result<Option<BuildRequest>, InputError> {
    let Some(b) = &t.build else { return Ok(None) };
    let err = |m: String| src.error_at(b.span(), m);
    if t.bin.is_some() || t.version.is_some() || t.library.is_some() {
        return Err(err(
            "build compiles the target's binaries: remove bin, version and library from it".into(),
        ));
    }
    // A recipe by its name or alias, less one that only stands in for another product on the
    // command line (the target would be that product, which the recipe does not build).
    let engine = crate::engine::lab_recipe(t.engine.get_ref()).ok_or_else(|| {
        err(format!(
            "build: dbdelta builds {} from source, not {}",
            crate::suggest::join(&crate::engine::recipe_names(), "and"),
            t.engine.get_ref()
        ))
    })?;
    let raw = b.get_ref();
    let source = raw.source.as_ref().map(|s| match s.contains('/') {
        true => base_dir.join(s).display().to_string(),
        false => s.clone(),
    });
    let extra = Flags {
        cflags: raw.cflags.clone().unwrap_or_default(),
        ldflags: raw.ldflags.clone().unwrap_or_default(),
    };
    let training = Training {
        suite: raw.train.clone(),
        scale: raw.train_scale.clone(),
        section: crate::suites::pgo_training(&raw.train, &raw.train_scale)
            .map_err(|e| err(format!("train: {e}")))?,
    };
    BuildRequest::new(engine, source, &raw.variant, extra, training)
        .map(Some)
        .map_err(|e| err(format!("{}: {}", e.key, e.message)))
}
