//! What `/proc` says about a server process: CPU time and memory.

use std::io;

/// Clock ticks per second of `utime`/`stime` (`getconf CLK_TCK`; 100 on Linux).
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// `utime + stime` of process `pid` (all its threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> io::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or_else(|| io::Error::other("malformed stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let get = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<u64>().ok());
    match (get(14), get(15)) {
        (Some(u), Some(s)) => Ok(u + s),
        _ => Err(io::Error::other("malformed stat")),
    }
}

/// A `Vm*` line of `/proc/PID/status` (`VmHWM`, `VmRSS`), in KiB.
pub fn status_kib(pid: u32, key: &str) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| io::Error::other(format!("no {key} in /proc/{pid}/status")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(cpu_ticks(me).is_ok());
        assert!(status_kib(me, "VmHWM").expect("VmHWM") > 0);
        assert!(status_kib(me, "VmRSS").expect("VmRSS") > 0);
        assert!(status_kib(me, "NoSuchKey").is_err());
        assert!(clock_ticks() > 0);
    }
}
