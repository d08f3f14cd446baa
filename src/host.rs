//! The machine a run executes on: CPU model, cores, memory, kernel.
//!
//! Read once at the start of a run and stored with it, so results from different machines are
//! never compared silently. Must not: sample anything during a step (that is `sampler`).

use procfs::Current;

use crate::results::HostInfo;

/// Describe this host; fields that cannot be read are left empty or zero.
pub fn describe() -> HostInfo {
    let cpu_model = procfs::CpuInfo::current()
        .ok()
        .and_then(|c| c.model_name(0).map(str::to_string))
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(0);
    let memory_bytes = procfs::Meminfo::current().map(|m| m.mem_total).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_default();
    HostInfo {
        cpu_model,
        cores,
        memory_bytes,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn describes_this_linux_host() {
        let h = super::describe();
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 0);
        assert!(h.kernel.starts_with("Linux "));
    }
}
