//! W6, the janitor sweep: `bench-server sweep` measures it in a process of its
//! own (see [`crate::sweep`]) and prints its results as JSON, read back here.

use super::{Harness, SweepSample};
use crate::sweep::SweepResult;
use std::process::{Command, Stdio};

impl Harness {
    /// W6: `bench-server sweep` in a process of its own.
    pub(super) fn sweep(&self, round: usize) -> Result<Vec<SweepSample>, String> {
        let getters = self.plan.conns.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let out = Command::new(&self.bins.server)
            .args([
                "sweep",
                "--tasks",
                &self.plan.sweep_tasks.to_string(),
                "--expired-percent",
                &self.plan.sweep_expired_percent.to_string(),
                "--getters",
                &getters,
                "--baseline-ms",
                &self.plan.sweep_baseline_ms.to_string(),
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run bench-server sweep: {e}"))?;
        if !out.status.success() {
            return Err(format!("bench-server sweep failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let results: Vec<SweepResult> = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!("bench-server sweep printed no results: {e}: {}", String::from_utf8_lossy(&out.stdout))
        })?;
        for r in &results {
            (self.log)(&format!(
                "W6 {:>2} getters round {} removed {} of {} in {:.1} ms; tasks/get p99 {:.1} µs baseline, {:.1} µs during (max {:.1} µs, {} calls); store {:.0} B/task",
                r.getters,
                round + 1,
                r.removed,
                r.live + r.expired,
                r.sweep_ms,
                r.baseline_p99_us,
                r.during_p99_us,
                r.during_max_us,
                r.during_samples,
                r.store_bytes_per_task
            ));
        }
        Ok(results.into_iter().map(|result| SweepSample { round, result }).collect())
    }
}
