//! Build variants: an engine compiled from source with a named set of compiler flags (`o2`,
//! `o3`, `os`, `lto`, `pgo`, `pgo+lto`, or the user's own `cflags`/`ldflags`), installed into
//! the cache once per key.
//!
//! Owns the variants' flags, the cache key (engine, source identity, variant, flags, compiler,
//! PGO training: the same build is never compiled twice), the cache entries
//! (`<cache>/compiled/<engine>-<version>-<variant>-<key>/` with `build.json` written last, the
//! build log beside it), and the PGO pipeline: an instrumented build, a training run of a suite
//! against it, then the optimised builds that read its profile. The training run is
//! `dbdelta run` in a child process (the instrumented code writes its profile when the process
//! that ran it exits), so this module never imports the runner.
//! Must not: start servers itself or know a suite's steps (the training lab names a suite and a
//! scale; the child run does the rest), or name an engine: what is compiled, and how, is the
//! request's recipe, a family's (`crate::engine::recipe`). Getting and unpacking sources is
//! `build_source`; running the recipe's configure/compile/install steps is `build_recipe`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sha2::Digest;

use super::build_recipe::{self, Builder};
use super::build_source::{self, Source};
pub use super::build_spec::{BuildFailed, Flags, Training};
use super::cache_dir;
use crate::engine::common::recipe::{BuildInputs, Recipe};
use crate::results::BuildInfo;

/// Bumped when the recipes change what a key produces.
const RECIPE_VERSION: &str = "1";
/// The record of a finished entry, written last.
const RECORD: &str = "build.json";

/// A named set of compiler flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    O2,
    O3,
    Os,
    Lto,
    Pgo,
    PgoLto,
    /// Only the user's `cflags`/`ldflags`.
    Custom,
}

impl Variant {
    pub const NAMES: &'static str = "o2, o3, os, lto, pgo, pgo+lto, custom";

    pub fn parse(name: &str) -> Option<Variant> {
        match name.to_ascii_lowercase().as_str() {
            "o2" => Some(Variant::O2),
            "o3" => Some(Variant::O3),
            "os" => Some(Variant::Os),
            "lto" => Some(Variant::Lto),
            "pgo" => Some(Variant::Pgo),
            "pgo+lto" | "pgo-lto" | "lto+pgo" => Some(Variant::PgoLto),
            "custom" => Some(Variant::Custom),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Variant::O2 => "o2",
            Variant::O3 => "o3",
            Variant::Os => "os",
            Variant::Lto => "lto",
            Variant::Pgo => "pgo",
            Variant::PgoLto => "pgo+lto",
            Variant::Custom => "custom",
        }
    }

    pub fn pgo(self) -> bool {
        matches!(self, Variant::Pgo | Variant::PgoLto)
    }

    fn lto(self) -> bool {
        matches!(self, Variant::Lto | Variant::PgoLto)
    }

    /// The optimisation flags of the final build; `profile` is the PGO profile directory.
    fn flags(self, profile: Option<&Path>) -> Flags {
        let mut c = match self {
            Variant::O3 => vec!["-O3".to_string()],
            Variant::Os => vec!["-Os".to_string()],
            Variant::Custom => Vec::new(),
            _ => vec!["-O2".to_string()],
        };
        let mut l: Vec<String> = Vec::new();
        if self.lto() {
            c.push("-flto=auto".into());
            l.push("-flto=auto".into());
        }
        if let (true, Some(p)) = (self.pgo(), profile) {
            c.push(format!("-fprofile-use={}", p.display()));
            c.push("-fprofile-correction".into());
        }
        Flags {
            cflags: c.join(" "),
            ldflags: l.join(" "),
        }
    }
}

/// One build to make (or find in the cache).
#[derive(Debug, Clone, PartialEq)]
pub struct BuildRequest {
    /// What is compiled, and how: a family's recipe (`crate::engine::recipe`), whose name is
    /// the cache's engine id.
    pub engine: &'static dyn Recipe,
    /// A Debian source package (a name `apt-get source` takes, optionally `=VERSION`), a source
    /// directory or a tarball.
    pub source: String,
    pub variant: Variant,
    /// Appended to the variant's flags.
    pub extra: Flags,
    /// PGO only.
    pub training: Training,
}

/// Why a build request is not valid, in the words of its key (`variant`, `source`, `train`,
/// `train_scale`); the lab and the command line prefix their own place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    pub key: &'static str,
    pub message: String,
}

impl BuildRequest {
    /// Check a request's parts as typed: the variant's name, a source (the recipe's
    /// [`Recipe::default_source`] when none is named), and PGO's training suite and scale.
    pub fn new(
        engine: &'static dyn Recipe,
        source: Option<String>,
        variant: &str,
        extra: Flags,
        training: Training,
    ) -> Result<BuildRequest, RequestError> {
        let err = |key, message: String| RequestError { key, message };
        let variant = Variant::parse(variant).ok_or_else(|| {
            err(
                "variant",
                format!(
                    "unknown variant \"{variant}\"; use one of {}",
                    Variant::NAMES
                ),
            )
        })?;
        let source = source
            .or_else(|| engine.default_source().map(str::to_string))
            .ok_or_else(|| {
                err(
                    "source",
                    format!(
                        "building {} needs a source: a Debian source package (a name `apt-get source` takes), a directory or a tarball",
                        engine.name()
                    ),
                )
            })?;
        if !Training::SCALES.contains(&training.scale.as_str()) {
            return Err(err(
                "train_scale",
                format!("\"{}\": use quick or small", training.scale),
            ));
        }
        Ok(BuildRequest {
            engine,
            source,
            variant,
            extra,
            training,
        })
    }

    /// `ENGINE SOURCE VARIANT`, then any extra flags and the training, for messages.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} {} {}",
            self.engine.name(),
            self.source,
            self.variant.name()
        );
        if !self.extra.cflags.is_empty() {
            s += &format!(" cflags=\"{}\"", self.extra.cflags);
        }
        if !self.extra.ldflags.is_empty() {
            s += &format!(" ldflags=\"{}\"", self.extra.ldflags);
        }
        if self.variant.pgo() {
            s += &format!(" (trained on {})", self.training.describe());
        }
        s
    }
}

/// A finished build.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub info: BuildInfo,
    /// The directory of server binaries (servers), or the directory holding the library.
    pub bin: PathBuf,
    /// An embedded engine's shared library, which a target loads.
    pub library: Option<PathBuf>,
}

/// Where compiled builds are kept.
pub fn compiled_dir() -> PathBuf {
    cache_dir().join("compiled")
}

/// Build `req` unless the cache holds it already. `say` receives progress lines.
pub fn build(req: &BuildRequest, say: &dyn Fn(&str)) -> Result<Built> {
    let compiler = build_recipe::compiler_version()?;
    let source = build_source::resolve(&req.source, req.engine, say)?;
    let profile = if req.variant.pgo() {
        Some(instrumented(req, &source, &compiler, say)?)
    } else {
        None
    };
    // The instrumented stage's time (its build and training) is its record's, added below
    // whether it was made now or found in the cache.
    let started = Instant::now();
    let flags = req
        .variant
        .flags(profile.as_ref().map(|p| p.profile.as_path()))
        .with_extra(&req.extra);
    let key = key(req, &source, &compiler, &flags, None);
    let entry = entry_dir(req, &source, &key);
    if let Some(done) = load_record(&entry, req.engine)? {
        say(&format!(
            "build {}: cached in {}",
            req.describe(),
            entry.display()
        ));
        return Ok(done);
    }
    let work = work_dir(profile.as_ref().map_or(&key, |p| &p.work_key));
    let builder = Builder::new(req.engine, &work, &entry);
    say(&format!(
        "build {}: compiling (log: {})",
        req.describe(),
        builder.log.display()
    ));
    prepare_tree(req.engine, &source, &builder, &key, say)?;
    builder.compile(&flags, say)?;
    let mut secs = started.elapsed().as_secs_f64();
    if let Some(p) = &profile {
        secs += p.build_secs;
    }
    let info = BuildInfo {
        engine: req.engine.name().into(),
        source: source.label.clone(),
        source_version: source.version.clone(),
        variant: req.variant.name().into(),
        cflags: flags.cflags.clone(),
        ldflags: flags.ldflags.clone(),
        options: options(req, &flags),
        compiler,
        build_secs: secs,
        text_bytes: build_recipe::text_bytes(&builder.main_binary()),
        training: profile.as_ref().map(|p| p.describe.clone()),
        key,
        dir: entry.display().to_string(),
    };
    let _ = std::fs::remove_dir_all(&work);
    save_record(&entry, &info)?;
    say(&format!(
        "build {}: done in {} → {}",
        req.describe(),
        crate::progress::duration(std::time::Duration::from_secs_f64(secs)),
        entry.display()
    ));
    Ok(built(info, req.engine, &entry))
}

/// The cached build for `req`, if there is one (for `--dry-run`; nothing is fetched or built).
/// `Err` carries why the answer is unknown (e.g. the source is not downloaded yet).
pub fn lookup(req: &BuildRequest) -> Result<Option<Built>> {
    let compiler = build_recipe::compiler_version()?;
    let source = build_source::peek(&req.source, req.engine)?;
    let profile = req.variant.pgo().then(|| {
        let flags = instrumented_flags(req, Path::new("/"));
        let key = key(req, &source, &compiler, &flags, Some(&req.training));
        instrumented_entry(req, &source, &key).join("profile")
    });
    let flags = req.variant.flags(profile.as_deref()).with_extra(&req.extra);
    let key = key(req, &source, &compiler, &flags, None);
    load_record(&entry_dir(req, &source, &key), req.engine)
}

/// Roughly how long building `req` takes: the slowest earlier build of this engine in the
/// cache, else a rule of thumb; a PGO build is two compiles and a training run.
pub fn estimate_secs(req: &BuildRequest) -> f64 {
    let earlier = std::fs::read_dir(compiled_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| load_record(&e.path(), req.engine).ok().flatten())
        .filter(|b| b.info.engine == req.engine.name() && b.info.training.is_none())
        .map(|b| b.info.build_secs)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    let stage = earlier.unwrap_or_else(|| req.engine.default_stage_secs());
    if req.variant.pgo() {
        stage * 2.5
    } else {
        stage
    }
}

fn built(info: BuildInfo, engine: &dyn Recipe, entry: &Path) -> Built {
    let (bin, library) = engine.installed(entry);
    Built { info, bin, library }
}

/// The instrumented build of a PGO request and its trained profile.
struct Profile {
    profile: PathBuf,
    work_key: String,
    build_secs: f64,
    describe: String,
}

/// Flags of the instrumented stage; `dir` receives the profile.
fn instrumented_flags(req: &BuildRequest, dir: &Path) -> Flags {
    let flags = Flags {
        cflags: format!(
            "-O2 -fprofile-generate={} -fprofile-update=prefer-atomic",
            dir.display()
        ),
        ldflags: format!("-fprofile-generate={}", dir.display()),
    };
    flags.with_extra(&req.extra)
}

fn instrumented_entry(req: &BuildRequest, source: &Source, key: &str) -> PathBuf {
    compiled_dir().join(format!(
        "{}-{}-pgo-instrumented-{}",
        req.engine.name(),
        source.version,
        &key[..12]
    ))
}

/// The instrumented build and its profile, trained unless the cache has both. The profile
/// directory's path is part of the flags, so it is fixed by the key without it.
fn instrumented(
    req: &BuildRequest,
    source: &Source,
    compiler: &str,
    say: &dyn Fn(&str),
) -> Result<Profile> {
    let key0 = key(
        req,
        source,
        compiler,
        &instrumented_flags(req, Path::new("/")),
        Some(&req.training),
    );
    let entry = instrumented_entry(req, source, &key0);
    let profile = entry.join("profile");
    let describe = format!(
        "{} (lab and results in {}, profile in {})",
        req.training.describe(),
        entry.join("training").display(),
        profile.display()
    );
    if let Some(done) = load_record(&entry, req.engine)? {
        say(&format!(
            "build {}: instrumented build and profile cached in {}",
            req.describe(),
            entry.display()
        ));
        return Ok(Profile {
            profile,
            work_key: key0,
            build_secs: done.info.build_secs,
            describe,
        });
    }
    let started = Instant::now();
    let work = work_dir(&key0);
    let builder = Builder::new(req.engine, &work, &entry);
    say(&format!(
        "build {}: instrumented build (log: {})",
        req.describe(),
        builder.log.display()
    ));
    prepare_tree(req.engine, source, &builder, &key0, say)?;
    let flags = instrumented_flags(req, &profile);
    builder.compile(&flags, say)?;
    build_recipe::open_profile_dir(&profile)?;
    let (bin, library) = req.engine.installed(&entry);
    say(&format!(
        "build {}: training on {} (log: {})",
        req.describe(),
        req.training.describe(),
        entry.join("training").join("run.log").display()
    ));
    super::build_train::train(req.engine, &req.training, &bin, library.as_deref(), &entry)?;
    let info = BuildInfo {
        engine: req.engine.name().into(),
        source: source.label.clone(),
        source_version: source.version.clone(),
        variant: "pgo-instrumented".into(),
        options: options(req, &flags),
        cflags: flags.cflags,
        ldflags: flags.ldflags,
        compiler: compiler.to_string(),
        build_secs: started.elapsed().as_secs_f64(),
        text_bytes: build_recipe::text_bytes(&builder.main_binary()),
        training: Some(describe.clone()),
        key: key0.clone(),
        dir: entry.display().to_string(),
    };
    save_record(&entry, &info)?;
    Ok(Profile {
        profile,
        work_key: key0,
        build_secs: info.build_secs,
        describe,
    })
}

/// The cache key: every input that changes what the build produces.
/// `training` is set for the instrumented stage, which `pgo` and `pgo+lto` share (its key
/// names no variant).
fn key(
    req: &BuildRequest,
    source: &Source,
    compiler: &str,
    flags: &Flags,
    training: Option<&Training>,
) -> String {
    let variant = match training {
        Some(_) => "pgo-instrumented",
        None => req.variant.name(),
    };
    let mut h = sha2::Sha256::new();
    for part in [
        RECIPE_VERSION,
        req.engine.name(),
        &source.identity,
        variant,
        &flags.cflags,
        &flags.ldflags,
        compiler,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    // The recipe's configure options choose what is built; none: the flags say it all (and
    // keys made before recipes had options stay the same).
    let options = options(req, flags);
    if !options.is_empty() {
        h.update(options.join(" ").as_bytes());
        h.update([0]);
    }
    if let Some(t) = training.or(req.variant.pgo().then_some(&req.training)) {
        h.update(t.suite.as_bytes());
        h.update([0]);
        h.update(t.scale.as_bytes());
    }
    super::unpack::hex(&h.finalize())
}

/// The configure options `req`'s recipe passes with `flags` (recorded and part of the key).
fn options(req: &BuildRequest, flags: &Flags) -> Vec<String> {
    req.engine.options(&BuildInputs {
        src: Path::new(""),
        entry: Path::new(""),
        cflags: &flags.cflags,
        ldflags: &flags.ldflags,
        jobs: 1,
        compiler: "",
    })
}

fn entry_dir(req: &BuildRequest, source: &Source, key: &str) -> PathBuf {
    compiled_dir().join(format!(
        "{}-{}-{}-{}",
        req.engine.name(),
        source.version,
        req.variant.name().replace('+', "-"),
        &key[..12]
    ))
}

/// The file of a build tree that names the key it was unpacked for, written once the tree is
/// unpacked and checked.
const UNPACKED: &str = "unpacked-for";

/// Unpack `source` into the builder's tree, unless an earlier build of the same `key` that
/// stopped (interrupted or failed) left it there: make and CMake then continue from the
/// objects already compiled. A tree of another product is refused before anything is built.
fn prepare_tree(
    recipe: &dyn Recipe,
    source: &Source,
    builder: &Builder,
    key: &str,
    say: &dyn Fn(&str),
) -> Result<()> {
    let marker = builder.src.with_file_name(UNPACKED);
    let kept = std::fs::read_to_string(&marker).is_ok_and(|k| k == key) && builder.src.is_dir();
    if kept {
        say(&format!(
            "  continuing the build kept in {} (an earlier build of the same key stopped)",
            builder.src.display()
        ));
        return Ok(());
    }
    let _ = std::fs::remove_file(&marker);
    build_source::unpack(source, &builder.src, &builder.log)?;
    if let Some(why) = recipe.foreign_tree(&builder.src) {
        // Nothing was built: the tree and the entry (its log) this build made go.
        let _ = std::fs::remove_dir_all(builder.src.parent().unwrap_or(&builder.src));
        let _ = std::fs::remove_dir_all(builder.log.parent().unwrap_or(&builder.log));
        return Err(
            crate::error::InputError::new(format!("source {} is {why}", source.label)).into(),
        );
    }
    std::fs::write(&marker, key).with_context(|| format!("cannot write {}", marker.display()))
}

/// The private build tree of one key (PGO's optimised builds reuse the instrumented build's
/// tree: the profile is keyed by the object files' paths).
fn work_dir(key: &str) -> PathBuf {
    compiled_dir().join("work").join(&key[..16])
}

fn load_record(entry: &Path, engine: &dyn Recipe) -> Result<Option<Built>> {
    let path = entry.join(RECORD);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let info: BuildInfo = serde_json::from_str(&text)
        .with_context(|| format!("{} is damaged; delete {}", path.display(), entry.display()))?;
    if info.engine != engine.name() {
        return Ok(None);
    }
    let b = built(info, engine, entry);
    if !b.bin.exists() || b.library.as_ref().is_some_and(|l| !l.exists()) {
        bail!(
            "the cached build in {} is incomplete; delete that directory and build again",
            entry.display()
        );
    }
    Ok(Some(b))
}

fn save_record(entry: &Path, info: &BuildInfo) -> Result<()> {
    let tmp = entry.join(format!("{RECORD}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(info)?)?;
    std::fs::rename(&tmp, entry.join(RECORD))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_give_their_flags() {
        for name in ["o2", "o3", "os", "lto", "pgo", "pgo+lto", "custom"] {
            assert_eq!(Variant::parse(name).unwrap().name(), name);
        }
        assert!(Variant::parse("o4").is_none());
        assert_eq!(Variant::Os.flags(None).cflags, "-Os");
        let lto = Variant::Lto.flags(None);
        assert_eq!(
            (lto.cflags.as_str(), lto.ldflags.as_str()),
            ("-O2 -flto=auto", "-flto=auto")
        );
        let pgo = Variant::PgoLto.flags(Some(Path::new("/p")));
        assert!(
            pgo.cflags.contains("-fprofile-use=/p -fprofile-correction"),
            "{pgo:?}"
        );
        assert!(pgo.cflags.contains("-flto=auto"));
        let extra = Flags {
            cflags: "-march=native".into(),
            ldflags: String::new(),
        };
        assert_eq!(
            Variant::O3.flags(None).with_extra(&extra).cflags,
            "-O3 -march=native"
        );
        assert_eq!(
            Variant::Custom.flags(None).with_extra(&extra).cflags,
            "-march=native"
        );
    }

    #[test]
    fn key_covers_flags_compiler_source_and_training() {
        let req = BuildRequest {
            engine: crate::engine::recipe("sqlite").unwrap(),
            source: "sqlite3".into(),
            variant: Variant::Pgo,
            extra: Flags::default(),
            training: Training {
                suite: "sysbench".into(),
                scale: "small".into(),
                section: "[suite.sysbench]\n".into(),
            },
        };
        let src = Source::fixed("sqlite3", "3.40.1", "id-1");
        let flags = Variant::O2.flags(None);
        let base = key(&req, &src, "gcc 12", &flags, None);
        assert_eq!(base, key(&req, &src, "gcc 12", &flags, None));
        assert_ne!(base, key(&req, &src, "gcc 13", &flags, None));
        assert_ne!(
            base,
            key(
                &req,
                &Source::fixed("sqlite3", "3.40.1", "id-2"),
                "gcc 12",
                &flags,
                None
            )
        );
        assert_ne!(
            base,
            key(&req, &src, "gcc 12", &Variant::Os.flags(None), None)
        );
        let mut lto = req.clone();
        lto.variant = Variant::PgoLto;
        let t = Some(&req.training);
        assert_eq!(
            key(&req, &src, "gcc 12", &flags, t),
            key(&lto, &src, "gcc 12", &flags, t),
            "pgo and pgo+lto share the instrumented build"
        );
        assert_ne!(base, key(&lto, &src, "gcc 12", &flags, None));
        let mut other = req.clone();
        other.training.suite = "insert".into();
        assert_ne!(base, key(&other, &src, "gcc 12", &flags, None));
    }
}
