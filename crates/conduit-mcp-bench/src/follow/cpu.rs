//! CPU time of a whole process (every thread), in nanoseconds, from
//! `/proc/PID/task/*/schedstat` (its first field is time spent on a CPU);
//! `utime + stime` in clock ticks when schedstat is missing.

use crate::procfs;

/// CPU time used so far by process `pid`, ns; `None` when `/proc` cannot tell.
pub(super) fn cpu_ns(pid: u32) -> Option<u64> {
    schedstat_ns(pid).or_else(|| {
        let ticks = procfs::cpu_ticks(pid).ok()?;
        Some(ticks * 1_000_000_000 / procfs::clock_ticks())
    })
}

fn schedstat_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        // A thread may end between the listing and the read: skip it.
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else { continue };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
        any = true;
    }
    any.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_used_some_cpu_and_more_after_work() {
        let pid = std::process::id();
        let before = cpu_ns(pid).expect("cpu of this process");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(cpu_ns(pid).expect("cpu again") > before);
    }
}
