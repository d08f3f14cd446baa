//! The prepared plan: a [`RunPlan`] whose fetches and builds are resolved, the last step before
//! the runner.
//!
//! Owns turning each target's `version` into a cached binary directory (and, for a remote
//! target, what to ship to its host), compiling `build = {…}` targets (a failed build marks its
//! target broken; the others run), and handing back a [`PreparedPlan`] that nothing changes
//! afterwards. Must not: start servers, open the store, or measure anything.

use std::ops::Deref;

use anyhow::{Context, Result};

use super::{BrokenTarget, RunPlan};
use crate::progress::Progress;

/// A plan whose targets have their binaries: what the runner runs. Read-only: it derefs to the
/// [`RunPlan`] it was prepared from.
#[derive(Debug)]
pub struct PreparedPlan(RunPlan);

impl Deref for PreparedPlan {
    type Target = RunPlan;

    fn deref(&self) -> &RunPlan {
        &self.0
    }
}

/// Fetch the versions the targets name and build the ones built from source. A version that
/// does not exist or cannot be downloaded is an error before anything is written; a build
/// that fails breaks its target only.
pub fn prepare(mut plan: RunPlan, progress: &Progress) -> Result<PreparedPlan> {
    fetch_builds(&mut plan, progress)?;
    make_builds(&mut plan, progress);
    Ok(PreparedPlan(plan))
}

/// What `prepare` will fetch, one line per target with a `version` (`plan` and `run
/// --dry-run` print it; asks the registries which build is newest, as the fetch will). A
/// version that does not exist is the bad input `prepare` would refuse.
pub fn describe_fetches(plan: &RunPlan) -> Result<String> {
    let mut s = String::new();
    for t in &plan.targets {
        if let (Some(v), Some(product)) = (&t.version, t.product) {
            let what = crate::provision::plan_fetch(product, v).map_err(for_target(&t.name))?;
            s.push_str(&format!("target {}: {}@{v}: {what}\n", t.name, product.id));
        }
    }
    Ok(s)
}

/// A fetch's error named by the target it is for: bad input stays bad input (its one line is
/// what `main` prints, so the name goes into it), anything else gets the name as context.
fn for_target(name: &str) -> impl Fn(anyhow::Error) -> anyhow::Error + '_ {
    move |e| match e.downcast::<crate::error::InputError>() {
        Ok(input) => crate::error::InputError(format!("target {name}: {input}")).into(),
        Err(e) => e.context(format!("target {name}")),
    }
}

/// Binaries by version: in the cache before anything is written (a version that does not
/// exist is bad input, and a failed download leaves no half-made run behind).
fn fetch_builds(plan: &mut RunPlan, progress: &Progress) -> Result<()> {
    for t in plan.targets.iter_mut() {
        if let (Some(v), Some(product)) = (&t.version, t.product) {
            let fetched = crate::provision::fetch(product, v, &|line| progress.line(line))
                .map_err(for_target(&t.name))?;
            progress.detail(&format!("target {}: {}", t.name, fetched.bin.display()));
            if let Some(remote) = t.remote.as_mut() {
                // The host gets a copy of the cached tree when the target starts.
                let (entry, tree, bin) = crate::provision::tree_of(&fetched.bin)
                    .context("a fetched build outside the cache")?;
                remote.ship = Some(crate::engine::remote::Shipment { entry, tree, bin });
            }
            t.bin = Some(fetched.bin);
        }
    }
    Ok(())
}

/// Builds from source (`build = {…}`), compiled on first use and cached. A build that fails
/// fails its target only: the others run, and the report names the failure and its log.
fn make_builds(plan: &mut RunPlan, progress: &Progress) {
    for t in plan.targets.iter_mut() {
        let Some(req) = &t.build else { continue };
        match crate::provision::build::build(req, &|line| progress.line(line)) {
            Ok(built) => {
                match built.library {
                    Some(lib) => t.library = Some(lib),
                    None => t.bin = Some(built.bin),
                }
                t.built = Some(built.info);
            }
            Err(e) => {
                let log = e
                    .downcast_ref::<crate::provision::build::BuildFailed>()
                    .map(|f| f.log.clone());
                progress.line(&format!(
                    "target {}: build failed; the other targets run",
                    t.name
                ));
                t.broken = Some(BrokenTarget {
                    error: format!("{e:#}"),
                    log,
                });
            }
        }
    }
}
