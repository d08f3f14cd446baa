//! The machine a run executes on: CPU model, cores, memory, kernel, and the CPU topology
//! (online CPUs, each CPU's core, package and SMT siblings) that placement is resolved against.
//!
//! Read once at the start of a run and stored with it, so results from different machines are
//! never compared silently. Must not: sample anything during a step (that is `sampler`).

use std::path::Path;

use procfs::Current;

use crate::cpus::{self, CpuSet, Machine};
use crate::results::{CpuTopology, HostInfo};

const SYS_CPU: &str = "/sys/devices/system/cpu";

/// Describe this host; fields that cannot be read are left empty or zero.
pub fn describe() -> HostInfo {
    let cpu_model = procfs::CpuInfo::current()
        .ok()
        .and_then(|c| c.model_name(0).map(str::to_string))
        .unwrap_or_default();
    let machine = machine();
    // The host's online CPUs, not `available_parallelism`: under `taskset` that is the affinity
    // mask, which the header reports separately ("dbdelta may use").
    let cores = u32::try_from(machine.online.len()).unwrap_or(0);
    let memory_bytes = procfs::Meminfo::current().map(|m| m.mem_total).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_default();
    HostInfo {
        cpu_model,
        cores,
        memory_bytes,
        kernel,
        online_cpus: machine.online.to_string(),
        usable_cpus: machine.usable.to_string(),
        cpu_topology: topology(Path::new(SYS_CPU), &machine.online),
    }
}

/// The CPUs placement is resolved against: online (`/sys/devices/system/cpu/online`), usable
/// (online ∩ this process's affinity mask) and the usable ones ordered by package and core.
/// Without sysfs, the affinity mask stands for both.
pub fn machine() -> Machine {
    let usable_mask = cpus::current_affinity().unwrap_or_default();
    let online = std::fs::read_to_string(Path::new(SYS_CPU).join("online"))
        .ok()
        .and_then(|s| CpuSet::parse(s.trim()).ok())
        .unwrap_or_else(|| usable_mask.clone());
    let usable = usable_mask.intersection(&online);
    let by_core = by_core(&topology(Path::new(SYS_CPU), &usable));
    Machine {
        online,
        usable,
        by_core,
    }
}

/// The CPUs of `topo` ordered by package, core and number, so SMT siblings sit together.
fn by_core(topo: &[CpuTopology]) -> Vec<usize> {
    let mut cpus: Vec<&CpuTopology> = topo.iter().collect();
    cpus.sort_by_key(|t| (t.package, t.core, t.cpu));
    cpus.iter().map(|t| t.cpu as usize).collect()
}

/// Topology of each CPU of `cpus` from `sys` (`/sys/devices/system/cpu`); CPUs whose topology
/// cannot be read get core and package -1.
fn topology(sys: &Path, cpus: &CpuSet) -> Vec<CpuTopology> {
    let read = |cpu: usize, file: &str| {
        std::fs::read_to_string(sys.join(format!("cpu{cpu}/topology/{file}")))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let num = |cpu: usize, file: &str| {
        read(cpu, file)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(-1)
    };
    cpus.iter()
        .map(|cpu| CpuTopology {
            cpu: cpu as u32,
            core: num(cpu, "core_id"),
            package: num(cpu, "physical_package_id"),
            siblings: read(cpu, "thread_siblings_list").unwrap_or_else(|| cpu.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_linux_host() {
        let h = super::describe();
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 0);
        assert!(h.kernel.starts_with("Linux "));
        let online = CpuSet::parse(&h.online_cpus).unwrap();
        assert!(CpuSet::parse(&h.usable_cpus).unwrap().is_subset(&online));
        assert_eq!(h.cpu_topology.len(), online.len());
        assert!(h.cpu_topology.iter().all(|t| t.package >= 0 && t.core >= 0));
    }

    #[test]
    fn reads_topology_and_orders_siblings_together() {
        // A fake sysfs: CPUs 0 and 2 share core 0, CPUs 1 and 3 core 1.
        let dir = tempfile::tempdir().unwrap();
        for (cpu, core, sib) in [(0, 0, "0,2"), (1, 1, "1,3"), (2, 0, "0,2"), (3, 1, "1,3")] {
            let t = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
            std::fs::write(t.join("physical_package_id"), "0\n").unwrap();
            std::fs::write(t.join("thread_siblings_list"), format!("{sib}\n")).unwrap();
        }
        let all = CpuSet::parse("0-4").unwrap();
        let topo = topology(dir.path(), &all);
        assert_eq!(topo[2].siblings, "0,2");
        assert_eq!((topo[3].core, topo[3].package), (1, 0));
        assert_eq!((topo[4].core, topo[4].siblings.as_str()), (-1, "4"));
        assert_eq!(by_core(&topo[..4]), [0, 2, 1, 3]);
    }
}
