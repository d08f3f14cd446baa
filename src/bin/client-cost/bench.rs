//! The harness's state (`Bench`): the arguments, client CPUs, the interrupt flag, the lines said
//! so far and the goals; how it says a line, the sysbench scale and suite it loads with, and the
//! `taskset` prefix of an external client. The measuring steps live in their own files as further
//! `impl Bench` blocks; this file must not measure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};

use dbdelta::suites::sysbench::steps as sysbench;
use dbdelta::workload::Scale;

use crate::args::Args;

pub(crate) struct Bench<'a> {
    pub(crate) args: &'a Args,
    pub(crate) client_cpus: Option<Vec<usize>>,
    pub(crate) interrupt: Arc<AtomicBool>,
    pub(crate) pgbench: Option<PathBuf>,
    pub(crate) out: String,
    pub(crate) goals: Vec<String>,
}

impl Bench<'_> {
    pub(crate) fn say(&mut self, line: &str) {
        println!("{line}");
        self.out.push_str(line);
        self.out.push('\n');
    }

    pub(crate) fn check_interrupt(&self) -> Result<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        Ok(())
    }

    pub(crate) fn scale(&self) -> Scale {
        Scale {
            tables: 1,
            rows: self.args.rows,
        }
    }

    /// The sysbench suite at this bench's scale (only its load is used).
    pub(crate) fn suite(&self) -> sysbench::Sysbench {
        sysbench::Sysbench {
            settings: sysbench::Settings {
                scale: self.scale(),
                warmup: Duration::ZERO,
                read: Duration::ZERO,
                write: Duration::ZERO,
                adaptive: None,
                pre: false,
                quick: false,
            },
        }
    }

    /// `taskset -c LIST` in front of an external client when clients are pinned.
    pub(crate) fn command(&self, program: &Path) -> Command {
        match &self.args.cpu_list {
            Some(list) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(list).arg(program);
                c
            }
            None => Command::new(program),
        }
    }
}

pub(crate) fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}
