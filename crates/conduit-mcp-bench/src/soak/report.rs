//! The mixed soak's per-minute samples, its end-of-run checks and the verdict.

use super::server::Fds;

/// One minute of the soak, read at its end.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// 1-based.
    pub minute: u32,
    /// The server's RSS, KiB.
    pub rss_kib: u64,
    /// Its fds.
    pub fds: Fds,
    /// During this minute: responses, creates acknowledged, refused by the cap,
    /// listens, tasks ended, idle sockets closed, connections killed, expected
    /// and unexpected errors.
    pub requests: u64,
    /// See `requests`.
    pub created: u64,
    /// See `requests`.
    pub refused: u64,
    /// See `requests`.
    pub listens: u64,
    /// See `requests`.
    pub ended: u64,
    /// See `requests`.
    pub idle_closed: u64,
    /// See `requests`.
    pub kills: u64,
    /// See `requests`.
    pub expected: u64,
    /// See `requests`.
    pub unexpected: u64,
}

/// How the acknowledged tasks ended.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// Acknowledged tasks.
    pub acknowledged: u64,
    /// Seen `completed`, `failed` or `cancelled` by the final `tasks/get`.
    pub completed: u64,
    /// See `completed`.
    pub failed: u64,
    /// See `completed`.
    pub cancelled: u64,
    /// Not found, but past `createdAt + ttlMs`: expired as their TTL allows.
    pub expired: u64,
    /// Not found before their TTL: lost.
    pub lost: u64,
    /// Still not terminal when the drain deadline passed.
    pub stuck: u64,
}

/// Everything the verdict is made of.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// `sqlite` or `postgres`.
    pub store: String,
    /// The row cap configured.
    pub cap: u64,
    /// The minutes.
    pub samples: Vec<Sample>,
    /// Fds before any client connected, and after every client closed.
    pub fds_baseline: Fds,
    /// See `fds_baseline`.
    pub fds_end: Fds,
    /// How the tasks ended.
    pub resolution: Resolution,
    /// Every error kind: expected or not, what, how many.
    pub errors: Vec<(bool, String, u64)>,
    /// Whether the server exited 0 after SIGTERM.
    pub clean_exit: bool,
}

impl Outcome {
    /// The failed checks (empty: pass).
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let unexpected: u64 = self.errors.iter().filter(|e| !e.0).map(|e| e.2).sum();
        if unexpected > 0 {
            p.push(format!("{unexpected} unexpected errors"));
        }
        let r = &self.resolution;
        if r.lost + r.stuck > 0 {
            p.push(format!("{} acknowledged tasks lost, {} never terminal", r.lost, r.stuck));
        }
        if self.samples.iter().map(|s| s.refused).sum::<u64>() == 0 {
            p.push("the cap was never reached".into());
        }
        if let (Some(first), Some(last)) = (self.samples.first(), self.samples.last()) {
            let ratio = last.rss_kib as f64 / first.rss_kib.max(1) as f64;
            if !(0.9..=1.1).contains(&ratio) {
                p.push(format!("RSS after the last minute is {:.1}% of after the first", ratio * 100.0));
            }
        }
        if self.fds_end.clients > self.fds_baseline.clients {
            p.push(format!("{} client sockets still open", self.fds_end.clients - self.fds_baseline.clients));
        }
        let other = |f: &Fds| f.total - f.database;
        if other(&self.fds_end) > other(&self.fds_baseline) {
            p.push(format!(
                "fds other than database connections: {} at the end, {} at the start",
                other(&self.fds_end),
                other(&self.fds_baseline)
            ));
        }
        if self.store == "postgres" && self.samples.iter().filter(|s| s.kills > 0).count() < self.samples.len() {
            p.push("a minute passed without a database connection killed".into());
        }
        if !self.clean_exit {
            p.push("the server did not exit 0 after SIGTERM".into());
        }
        p
    }

    /// The report: a Markdown table per minute, the resolution, the errors and the verdict.
    pub fn render(&self) -> String {
        let mut out = format!("### Soak on {} (row cap {})\n\n", self.store, self.cap);
        out.push_str("| Minute | RSS (KiB) | fds (clients / db) | Requests | Created | Refused (cap) | Listens | Ended | Idle closed | Kills | Expected errors | Unexpected |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for s in &self.samples {
            out.push_str(&format!(
                "| {} | {} | {} ({} / {}) | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s.minute,
                s.rss_kib,
                s.fds.total,
                s.fds.clients,
                s.fds.database,
                s.requests,
                s.created,
                s.refused,
                s.listens,
                s.ended,
                s.idle_closed,
                s.kills,
                s.expected,
                s.unexpected
            ));
        }
        let (b, e) = (self.fds_baseline, self.fds_end);
        let r = &self.resolution;
        out.push_str(&format!(
            "\nfds before any client: {} ({} client sockets, {} to the database); after every client closed: {} ({} / {}).\n\
             Acknowledged tasks: {}: {} completed, {} failed, {} cancelled, {} expired, {} lost, {} never terminal.\n",
            b.total, b.clients, b.database, e.total, e.clients, e.database,
            r.acknowledged, r.completed, r.failed, r.cancelled, r.expired, r.lost, r.stuck
        ));
        out.push_str("\nErrors:\n\n");
        for (expected, what, n) in &self.errors {
            out.push_str(&format!("- {} × {n}: {what}\n", if *expected { "expected" } else { "UNEXPECTED" }));
        }
        if self.errors.is_empty() {
            out.push_str("- none\n");
        }
        let problems = self.problems();
        if problems.is_empty() {
            out.push_str("\nVerdict: PASS\n");
        } else {
            out.push_str(&format!("\nVerdict: FAIL ({})\n", problems.join("; ")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passing() -> Outcome {
        let minute = |m, rss| Sample { minute: m, rss_kib: rss, refused: 10, kills: 2, ..Sample::default() };
        let fds = Fds { total: 20, clients: 1, database: 4 };
        Outcome {
            store: "postgres".into(),
            cap: 10,
            samples: vec![minute(1, 20_000), minute(2, 21_000)],
            fds_baseline: fds,
            fds_end: Fds { total: 26, database: 10, ..fds },
            resolution: Resolution { acknowledged: 10, completed: 10, ..Resolution::default() },
            errors: vec![(true, "create: cap".into(), 10)],
            clean_exit: true,
        }
    }

    /// A change that breaks one check, and the words its problem must contain.
    type Case = (fn(&mut Outcome), &'static str);

    #[test]
    fn each_check_fails_the_verdict_by_name() {
        assert!(passing().problems().is_empty(), "{:?}", passing().problems());
        assert!(passing().render().contains("Verdict: PASS"));
        let cases: Vec<Case> = vec![
            (|o| o.errors.push((false, "tasks/get: HTTP 500".into(), 1)), "1 unexpected errors"),
            (|o| o.resolution.lost = 1, "1 acknowledged tasks lost"),
            (|o| o.samples.iter_mut().for_each(|s| s.refused = 0), "the cap was never reached"),
            (|o| o.samples[1].rss_kib = 22_500, "RSS after the last minute is 112.5%"),
            (|o| o.fds_end.clients = 3, "2 client sockets still open"),
            (|o| o.fds_end.total = 27, "fds other than database connections: 17"),
            (|o| o.samples[0].kills = 0, "without a database connection killed"),
            (|o| o.clean_exit = false, "did not exit 0"),
        ];
        for (break_it, named) in cases {
            let mut o = passing();
            break_it(&mut o);
            let problems = o.problems().join("; ");
            assert!(problems.contains(named), "{named:?} not in {problems:?}");
            assert!(o.render().contains("Verdict: FAIL"));
        }
    }
}
