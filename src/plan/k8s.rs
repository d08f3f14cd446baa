//! Kubernetes manifests of a plan (`dbdelta plan LAB --emit k8s`): one ConfigMap holding the
//! lab file (and a Secret holding it whole when it has a password or a secret env value, the
//! ConfigMap then holding it redacted) and one Job per cell (target × clients × repeat), each
//! running exactly that cell with `dbdelta run --cell` on a labelled benchmark node.
//!
//! Owns what a Job looks like: its names and labels (sanitised to DNS-1123 names and label
//! values), the node selector and toleration of benchmark nodes, the pod anti-affinity that
//! keeps one dbdelta pod per node, the whole CPUs and memory it requests (requests = limits, so
//! the pod is in the Guaranteed QoS class and the kubelet's static CPU manager gives it whole
//! cores; see [`pod_cpus`]), the `dbdelta run` command line and where its results go (`--store`
//! from a Secret). A pure function of the plan: text in memory, no I/O.
//! Must not: talk to a cluster, schedule or order Jobs (Kubernetes does; dbdelta adds no
//! scheduler), or start, measure or store anything.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::engine::connect::{REDACTED, redact_secrets};
use crate::error::InputError;
use crate::plan::lab::Lab;
use crate::plan::{Cell, RunPlan};

/// Where the ConfigMap's lab file is mounted in every pod.
pub const LAB_DIR: &str = "/etc/dbdelta";
/// The lab file's key in the ConfigMap (its file name under [`LAB_DIR`]).
pub const LAB_FILE: &str = "lab.toml";
/// The pod's scratch volume: data directories go under `work/` here (an `emptyDir` on the
/// node's disk).
pub const WORK_DIR: &str = "/var/lib/dbdelta";
/// The environment variable the container's `--store` is read from (Kubernetes expands
/// `$(DBDELTA_STORE)` in the arguments).
pub const STORE_ENV: &str = "DBDELTA_STORE";
/// The key of the store's URL in the Secret.
pub const STORE_KEY: &str = "url";
/// Labels every dbdelta benchmark pod carries; the anti-affinity selects on them.
const POD_LABELS: [(&str, &str); 2] = [
    ("app.kubernetes.io/name", "dbdelta"),
    ("app.kubernetes.io/component", "benchmark"),
];

/// What the manifests need beyond the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Container image holding `dbdelta` and every engine the lab's targets use.
    pub image: String,
    /// The node label benchmark nodes carry (`dbdelta.io/benchmark-node`) and its value.
    pub node_label: (String, String),
    /// The Secret whose key [`STORE_KEY`] holds the shared results store (`--store`).
    pub store_secret: String,
    /// Memory each pod requests and is limited to, as a Kubernetes quantity (`4Gi`).
    pub memory: String,
    /// Flags every Job passes to `dbdelta run` so that it plans what `plan` planned
    /// (`--quick`, `--only`, `--skip`, `--clients`, `--repeats` as given).
    pub run_flags: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            image: String::new(),
            node_label: ("dbdelta.io/benchmark-node".into(), "true".into()),
            store_secret: "dbdelta-store".into(),
            memory: "4Gi".into(),
            run_flags: Vec::new(),
        }
    }
}

/// The manifests of `plan`: the lab's ConfigMap (and, when the lab holds a secret, its
/// Secret), then one Job per cell in the plan's order, as one multi-document YAML text. Bad
/// options or a lab a pod cannot run as written are an [`InputError`] naming the flag or key.
pub fn emit(plan: &RunPlan, opts: &Options) -> Result<String, InputError> {
    check_options(opts)?;
    check_plan(plan)?;
    let lab = lab_objects(plan);
    let mut docs = lab.docs;
    for cell in plan.cells() {
        let (cpus, why) = pod_cpus(plan, &cell);
        let target = &plan.targets[cell.target].name;
        let comment = format!(
            "# {target}, {} client(s), repeat {}: {why}",
            cell.clients, cell.repeat
        );
        docs.push((comment, job(plan, &cell, cpus, &lab.volume, opts)));
    }
    let mut out = format!(
        "# dbdelta plan of \"{}\" ({}): {} Job(s), one per target × clients × repeat.\n\
         # Apply with `kubectl apply -f`; results go to the store in Secret {}'s key {STORE_KEY}.\n",
        one_line(&plan.lab.name),
        one_line(&plan.lab.origin),
        plan.cells().len(),
        opts.store_secret
    );
    for (comment, doc) in docs {
        let yaml = serde_saphyr::to_string(&doc)
            .map_err(|e| InputError::new(format!("--emit k8s: cannot write YAML ({e})")))?;
        let _ = write!(out, "---\n{comment}\n{yaml}");
    }
    Ok(out)
}

/// The objects that hold the lab file, each with its comment, and the pod volume the Jobs
/// mount it from.
struct LabObjects {
    docs: Vec<(String, Value)>,
    volume: Value,
}

/// The lab's ConfigMap, its name carrying a hash of the text. A lab with a password or a
/// secret environment value (what [`redact_secrets`] replaces) is whole only in a Secret of
/// the same name, which the Jobs mount; its ConfigMap holds it redacted (readable by whoever
/// may read ConfigMaps) and is named by the redacted text's hash, so that no name carries a
/// digest of a secret. A Secret of the whole lab rather than of the secret values alone: the
/// pod reads one lab file, which Kubernetes cannot assemble from both.
fn lab_objects(plan: &RunPlan) -> LabObjects {
    let text = &plan.lab.text;
    let shown = redact_secrets(text);
    let name = config_map_name(&plan.lab.name, &shown);
    let config_map = |comment: String, data: &str| {
        let doc = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": lab_labels(plan)},
            "immutable": true,
            "data": {LAB_FILE: data},
        });
        (comment, doc)
    };
    if let Cow::Borrowed(_) = shown {
        return LabObjects {
            docs: vec![config_map(
                format!(
                    "# The lab file, mounted at {LAB_DIR}/{LAB_FILE} in every Job's pod \
                     (immutable: its name carries a hash of the text)."
                ),
                text,
            )],
            volume: json!({"name": "lab", "configMap": {"name": name}}),
        };
    }
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": lab_labels(plan)},
        "type": "Opaque",
        "stringData": {LAB_FILE: text},
    });
    LabObjects {
        docs: vec![
            config_map(
                format!(
                    "# The lab file with its passwords and secret env values as {REDACTED}, to \
                     read; the Jobs mount the whole file from Secret {name}."
                ),
                &shown,
            ),
            (
                format!(
                    "# The whole lab file, with its secrets, mounted at {LAB_DIR}/{LAB_FILE} in \
                     every Job's pod."
                ),
                secret,
            ),
        ],
        volume: json!({"name": "lab", "secret": {"secretName": name}}),
    }
}

/// A name or origin inside a `#` comment: one line.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// One cell's Job: the pod runs `dbdelta run --cell` once (no retry: a failed benchmark is
/// recorded, not repeated on another node) on a benchmark node no other dbdelta pod, of any
/// namespace, occupies.
fn job(plan: &RunPlan, cell: &Cell, cpus: u32, lab_volume: &Value, opts: &Options) -> Value {
    let target = &plan.targets[cell.target].name;
    let mut labels = lab_labels(plan);
    labels["dbdelta.io/target"] = json!(label_value(target));
    labels["dbdelta.io/clients"] = json!(cell.clients.to_string());
    labels["dbdelta.io/repeat"] = json!(cell.repeat.to_string());
    let mut args: Vec<String> = [
        "--store",
        &format!("$({STORE_ENV})"),
        "run",
        &format!("{LAB_DIR}/{LAB_FILE}"),
        "--cell",
        &plan.cell_arg(cell),
        "--workdir",
        &format!("{WORK_DIR}/work"),
    ]
    .map(String::from)
    .to_vec();
    args.extend(opts.run_flags.iter().cloned());
    let amount = json!({"cpu": cpus.to_string(), "memory": opts.memory});
    let (node_key, node_value) = &opts.node_label;
    let container = json!({
        "name": "dbdelta",
        "image": opts.image,
        "command": ["dbdelta"],
        "args": args,
        "env": [{
            "name": STORE_ENV,
            "valueFrom": {"secretKeyRef": {"name": opts.store_secret, "key": STORE_KEY}},
        }],
        "resources": {"requests": amount, "limits": amount},
        "volumeMounts": [
            {"name": "lab", "mountPath": LAB_DIR, "readOnly": true},
            {"name": "work", "mountPath": WORK_DIR},
        ],
    });
    let pod = json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "nodeSelector": {node_key: node_value},
        "tolerations": [{"key": node_key, "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": Value::Object(pod_labels())},
            // Every namespace: a benchmark in another namespace takes the node's CPUs too.
            "namespaceSelector": {},
            "topologyKey": "kubernetes.io/hostname",
        }]}},
        "containers": [container],
        "volumes": [
            lab_volume,
            {"name": "work", "emptyDir": {}},
        ],
    });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(&plan.lab.name, target, cell),
            "labels": labels,
            "annotations": {"dbdelta.io/lab-name": plan.lab.name, "dbdelta.io/target-name": target},
        },
        "spec": {
            "backoffLimit": 0,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    })
}

/// The labels every object of the lab carries: dbdelta's pod labels and the lab's name.
fn lab_labels(plan: &RunPlan) -> Value {
    let mut labels = pod_labels();
    labels.insert("dbdelta.io/lab".into(), json!(label_value(&plan.lab.name)));
    Value::Object(labels)
}

fn pod_labels() -> serde_json::Map<String, Value> {
    POD_LABELS
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

/// Whole CPUs a cell's pod requests (and is limited to), with the reason in words. The
/// busiest step decides: it holds `connections` = clients × roles (a table count for
/// `point-query.warm`; LinkBench's requesters), and each connection is one client thread
/// and, for a server dbdelta starts in the pod, one server backend. One more CPU goes to
/// dbdelta's coordinator and sampler (and perf when profiling) and the server's background
/// processes, so they do not take the measured threads' CPUs. `placement = "shared"` puts
/// server and clients on one CPU: 2. With `split` the server gets the larger half.
pub fn pod_cpus(plan: &RunPlan, cell: &Cell) -> (u32, String) {
    let connections = (plan.steps())
        .map(|s| s.clients_at(cell.clients) * s.roles.len() as u32)
        .max()
        .unwrap_or(1)
        .max(1);
    let target = &plan.targets[cell.target];
    // The resolved placement: "shared" pins server and clients to one CPU.
    let shared = target.placement.name == "shared";
    let server_here =
        !target.engine.embedded() && target.connect.is_none() && target.remote.is_none();
    let extra = "+ 1 for dbdelta's coordinator and sampler";
    match (shared, server_here) {
        (true, _) => (
            2,
            format!("2 CPUs = 1 that placement \"shared\" pins server and clients to {extra}"),
        ),
        (false, true) => (
            2 * connections + 1,
            format!(
                "{} CPUs = {connections} connection(s) × (client thread + server backend) {extra} \
                 and the server's background processes",
                2 * connections + 1
            ),
        ),
        (false, false) => (
            connections + 1,
            format!(
                "{} CPUs = {connections} client thread(s) ({}) {extra}",
                connections + 1,
                if target.connect.is_some() || target.remote.is_some() {
                    "the server runs elsewhere"
                } else {
                    "the engine runs in them"
                }
            ),
        ),
    }
}

/// Refuse what a pod cannot run as written: CPU numbers of this host (the kubelet picks the
/// pod's CPUs) and config files (the pod has only the lab file). [`emit`] checks it too; call
/// it before planning so that CPU lists are not first checked against this host.
pub fn check_lab(lab: &Lab) -> Result<(), InputError> {
    let targets = (lab.targets.iter()).map(|t| {
        (
            t.name.as_str(),
            t.config_name.as_deref(),
            t.remote.is_some(),
        )
    });
    refuse(lab.cpu_lists_at(), &targets.collect::<Vec<_>>())
}

/// [`check_lab`] on what the plan kept of the lab.
fn check_plan(plan: &RunPlan) -> Result<(), InputError> {
    let targets = (plan.targets.iter()).map(|t| {
        (
            t.name.as_str(),
            t.config_name.as_deref(),
            t.remote.is_some(),
        )
    });
    refuse(
        plan.lab.cpu_lists_at.as_deref(),
        &targets.collect::<Vec<_>>(),
    )
}

/// The first of: CPU lists (where the lab names them), a target's config file, a remote
/// target (each target as name, config file, whether remote).
fn refuse(
    cpu_lists_at: Option<&str>,
    targets: &[(&str, Option<&str>, bool)],
) -> Result<(), InputError> {
    if let Some(at) = cpu_lists_at {
        return Err(InputError::new(format!(
            "--emit k8s: {at} names CPUs of one host, but the kubelet picks a pod's CPUs; use placement = \"shared\", \"split\" or \"os\""
        )));
    }
    if let Some((name, Some(config), _)) = targets.iter().find(|t| t.1.is_some()) {
        return Err(InputError::new(format!(
            "--emit k8s: target {name} reads config = \"{config}\" from this machine, and the pod has only the lab file; put its lines into the target's settings"
        )));
    }
    if let Some((name, _, _)) = targets.iter().find(|t| t.2) {
        return Err(InputError::new(format!(
            "--emit k8s: target {name} runs its server on another host over SSH, and a Job's pod has no SSH keys; run it with dbdelta run, or drop host so the Job's node runs the server"
        )));
    }
    Ok(())
}

fn check_options(opts: &Options) -> Result<(), InputError> {
    if opts.image.is_empty() || opts.image.contains(char::is_whitespace) {
        return Err(InputError::new(format!(
            "--image {:?}: expected a container image reference with dbdelta and the lab's engines, e.g. --image registry.example.com/dbdelta:1.0",
            opts.image
        )));
    }
    let (key, value) = &opts.node_label;
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let prefix_ok = prefix.is_empty() || (prefix.len() <= 253 && is_dns_subdomain(prefix));
    if !prefix_ok || name.is_empty() || label_value(name) != name || label_value(value) != *value {
        return Err(InputError::new(format!(
            "--node-label {key}={value}: expected a Kubernetes label KEY=VALUE (letters, digits, '-', '_', '.'; at most 63 each; KEY may have a DNS prefix/), e.g. dbdelta.io/benchmark-node=true"
        )));
    }
    if !is_dns_subdomain(&opts.store_secret) {
        return Err(InputError::new(format!(
            "--store-secret {}: expected a Secret name (lower-case letters, digits, '-' and '.'), e.g. dbdelta-store",
            opts.store_secret
        )));
    }
    let digits = opts
        .memory
        .trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &opts.memory[digits.len()..];
    let units = ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !units.contains(&unit) {
        return Err(InputError::new(format!(
            "--memory {}: expected a whole quantity with an optional unit ({}), e.g. 4Gi",
            opts.memory,
            units[1..].join(", ")
        )));
    }
    Ok(())
}

/// A DNS-1123 subdomain: at most 253 of lower-case letters, digits, '-' and '.', starting and
/// ending with a letter or digit.
fn is_dns_subdomain(text: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    text.len() <= 253
        && text.starts_with(ok)
        && text.ends_with(ok)
        && text.chars().all(|c| ok(c) || c == '-' || c == '.')
}

/// `text` as a label value: characters other than letters, digits, '-', '_' and '.' become
/// '-' (runs of them one), it starts and ends with a letter or digit and has at most 63
/// characters (possibly empty).
pub fn label_value(text: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let mut out = String::new();
    for c in text.chars() {
        let c = if allowed(c) { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let edge = |c: char| !c.is_ascii_alphanumeric();
    let mut out: String = out.trim_matches(edge).chars().take(63).collect();
    out.truncate(out.trim_end_matches(edge).len());
    out
}

/// `text` as a DNS-1123 label (an object name): lower case, other characters as '-' (runs of
/// them one), at most 63 characters, starting and ending with a letter or digit. When that
/// changed anything, a short hash of `text` is appended so that distinct texts (`pg17.a`,
/// `pg17-a`, `PG17-a`) keep distinct names.
pub fn dns_label(text: &str) -> String {
    let slug = slug(text);
    if !slug.is_empty() && slug == text && slug.len() <= 63 {
        return slug;
    }
    with_hash(&slug, &hash_hex(text, 6))
}

/// `slug` cut so that `-hash` fits in 63 characters, then `-hash`.
fn with_hash(slug: &str, hash: &str) -> String {
    let keep: String = slug.chars().take(63 - 1 - hash.len()).collect();
    let keep = keep.trim_end_matches('-');
    if keep.is_empty() {
        hash.to_string()
    } else {
        format!("{keep}-{hash}")
    }
}

/// Lower-case letters and digits, every other run of characters one '-', none at the ends.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// The first `n` hexadecimal digits of `text`'s SHA-256.
fn hash_hex(text: &str, n: usize) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..n].to_string()
}

/// A cell's Job name: target and cell first, the lab last (a long lab name is what gets cut).
fn job_name(lab: &str, target: &str, cell: &Cell) -> String {
    dns_label(&format!(
        "dbdelta-{target}-c{}-r{}-{lab}",
        cell.clients, cell.repeat
    ))
}

/// The lab's ConfigMap name, with a hash of its text: a changed lab is a new ConfigMap, and a
/// Job still running keeps reading the lab it was planned from.
fn config_map_name(lab: &str, text: &str) -> String {
    with_hash(&slug(&format!("dbdelta-lab-{lab}")), &hash_hex(text, 8))
}

#[cfg(test)]
#[path = "k8s_tests.rs"]
mod tests;
