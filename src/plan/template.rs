//! The lab `dbdelta init` writes: a commented starting point that parses and plans as is.
//!
//! Owns the template's text per engine. Must not: write files (the CLI does), or name a key
//! `plan::lab` does not accept (the tests parse and plan every variant).

use std::fmt::Write;

/// The engine `dbdelta init --engine` puts in the template's targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Sqlite,
    Postgres,
    Mysql,
    Mariadb,
}

/// Per engine: the lab's title, where the build comes from (a commented note and the target
/// lines), and the one setting both targets differ by (base first).
struct Variant {
    title: &'static str,
    engine: &'static str,
    source: &'static str,
    setting: [&'static str; 2],
}

fn variant(engine: Engine) -> Variant {
    match engine {
        Engine::Sqlite => Variant {
            title: "sqlite: synchronous FULL vs OFF",
            engine: "sqlite",
            source: "# embedded SQLite, built into dbdelta: nothing to install\n",
            setting: ["synchronous = FULL", "synchronous = OFF"],
        },
        Engine::Postgres => Variant {
            title: "postgres: synchronous_commit on vs off",
            engine: "postgres",
            source: "# Debian's postgresql package (apt-get install postgresql-15); or one of:\n\
                     # bin = \"/usr/lib/postgresql/15/bin\"   # a directory of server binaries\n\
                     # version = \"17\"                       # fetch a build (dbdelta list versions)\n",
            setting: ["synchronous_commit = on", "synchronous_commit = off"],
        },
        Engine::Mysql => Variant {
            title: "mysql 8.0: innodb_flush_log_at_trx_commit 1 vs 2",
            engine: "mysql",
            source: "# Oracle MySQL, fetched and cached on first use (dbdelta list versions mysql)\n\
                     version = \"8.0\"\n",
            setting: [
                "innodb_flush_log_at_trx_commit = 1",
                "innodb_flush_log_at_trx_commit = 2",
            ],
        },
        Engine::Mariadb => Variant {
            title: "mariadb: innodb_flush_log_at_trx_commit 1 vs 2",
            engine: "mariadb",
            source: "# Debian's MariaDB (apt-get install mariadb-server); or one of:\n\
                     # version = \"11.4\"   # fetch a build (dbdelta list versions mariadb)\n\
                     # bin = \"/opt/mariadb/bin\"\n",
            setting: [
                "innodb_flush_log_at_trx_commit = 1",
                "innodb_flush_log_at_trx_commit = 2",
            ],
        },
    }
}

/// The commented lab for `engine`, as the file `file` (named in its comments).
pub fn lab(engine: Engine, file: &str) -> String {
    let v = variant(engine);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# A dbdelta lab, written by `dbdelta init`. Every key: docs/lab.md.
# Try it at tiny scale first, then for real:
#
#   dbdelta plan {file} --quick    # what it will do, how long, how much disk
#   dbdelta run {file} --quick     # seconds per step: for trying things out
#   dbdelta run {file}             # the scale below
#
[lab]
name = "{title}"
repeats = 3              # 1-1000; 2 or more give verdicts; "auto" repeats undecided steps
clients = [1]            # client counts to sweep, e.g. [1, 4, 16]
# order = "interleaved"  # or "sequential"
# placement = "os"       # CPU placement: "os", "shared" or "split"

# The targets: the first is the base, every other one is reported relative to it.
[[target]]
name = "a"               # letters, digits, '.', '_' and '-'
engine = "{engine}"
{source}settings = ["{a}"]
# config = "a.cnf"       # a config file, one setting per line (relative to this file)

[[target]]
name = "b"
engine = "{engine}"
{source}settings = ["{b}"]

# The sysbench suite's scale (run --rows, --tables and --time override it).
[suite.sysbench]
tables = 1               # 1-1000
rows = 100_000           # per table
read_secs = 10           # measured seconds of each read step
write_secs = 10          # measured seconds of each write step
warmup_secs = 2          # unmeasured warm-up before every step
# pre = true             # also the .pre steps
# The other suites: [suite.insert] (Insert Benchmark) and [suite.linkbench]; see docs/workloads.md.
"#,
        title = v.title,
        file = file,
        engine = v.engine,
        source = v.source,
        a = v.setting[0],
        b = v.setting[1],
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;
    use std::path::Path;

    /// Every engine's template parses and plans as written, with two targets of that engine
    /// and the scale the comments state.
    #[test]
    fn every_template_parses_and_plans() {
        for engine in Engine::value_variants() {
            let text = lab(*engine, "lab.toml");
            let lab = crate::plan::lab::parse(&text, "lab.toml", Path::new("."))
                .unwrap_or_else(|e| panic!("{engine:?}: {e}\n{text}"));
            let plan = crate::plan::plan(lab, &crate::plan::RunOptions::default())
                .unwrap_or_else(|e| panic!("{engine:?}: {e}"));
            assert_eq!(plan.targets.len(), 2);
            assert_eq!(plan.repeats, 3);
            let want = match engine {
                Engine::Sqlite => "sqlite",
                Engine::Postgres => "postgres",
                Engine::Mysql | Engine::Mariadb => "mysql",
            };
            assert!(
                plan.targets.iter().all(|t| t.engine.name() == want),
                "{engine:?}"
            );
            assert!(text.contains("docs/lab.md"));
        }
    }
}
