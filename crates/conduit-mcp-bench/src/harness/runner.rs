//! [`Harness::run`]: the order of a pass (every workload, connection count and
//! round; the servers interleaved within each round), and the drivers of W1–W4:
//! a fresh server per run, a warm-up, then one measured load phase.

use super::process::Proc;
use super::{Harness, fake_id, io_err, us};
use super::{Meta, Peer, Results, Sample, Store, Workload};
use crate::client::Conn;
use crate::load::{self, Builder, Load, LoadResult};
use crate::stats::quantile;
use crate::wire;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Harness {
    /// The servers of this pass, in the order each round runs them.
    pub fn peers(&self) -> Vec<Peer> {
        self.peers_for(Workload::W2)
    }

    /// The servers `workload` runs on: W1 (`greet`) never touches the task store, so
    /// it runs ours on the memory store only (if that is in the pass, else the first store);
    /// the fixture (when its binary is given) runs W1 and W2 only.
    pub fn peers_for(&self, workload: Workload) -> Vec<Peer> {
        let stores: Vec<Store> = match workload {
            Workload::W1 => {
                let first = self.plan.stores.iter().find(|s| **s == Store::Memory).or(self.plan.stores.first());
                first.into_iter().copied().collect()
            }
            _ => self.plan.stores.clone(),
        };
        let mut v: Vec<Peer> = stores.into_iter().map(Peer::Ours).collect();
        if self.bins.fixture.is_some() && matches!(workload, Workload::W1 | Workload::W2) {
            v.push(Peer::Fixture);
        }
        if self.bins.rmcp.is_some() {
            v.push(Peer::Rmcp);
        }
        v.push(Peer::Echo);
        v
    }

    /// One request on a fresh connection; returns the body.
    pub(super) async fn once(addr: SocketAddr, path: &str, call: &wire::Call) -> Result<Vec<u8>, String> {
        let mut c = Conn::connect(addr).await.map_err(io_err)?;
        let mut req = Vec::new();
        wire::http_request(&mut req, &addr.to_string(), path, call);
        let status = c.roundtrip(&req).await.map_err(io_err)?;
        let body = c.body().to_vec();
        if status != 200 {
            return Err(format!("{} answered HTTP {status}: {}", call.method, String::from_utf8_lossy(&body)));
        }
        Ok(body)
    }

    /// Creates one task and returns its id.
    pub(super) async fn create_one(addr: SocketAddr, n: u64) -> Result<String, String> {
        let body = Self::once(addr, "/mcp", &wire::create_task(n)).await?;
        wire::find_str_field(&body, "taskId")
            .map(String::from)
            .ok_or_else(|| format!("slow_compute did not return a task: {}", String::from_utf8_lossy(&body)))
    }

    /// The body sizes of `peer`'s answers to greet, `tasks/get` and a create.
    async fn sizes(&self, peer: Peer) -> Result<[usize; 3], String> {
        let p = self.start(peer)?;
        let greet = Self::once(p.addr, "/mcp", &wire::greet(1)).await?;
        // Let conduit-mcp's janitor start-up recovery pass (see `simple`).
        Self::create_one(p.addr, 0).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let create = Self::once(p.addr, "/mcp", &wire::create_task(2)).await?;
        let id = wire::find_str_field(&create, "taskId").ok_or("no taskId in the create result")?.to_owned();
        let get = Self::once(p.addr, "/mcp", &wire::tasks_get(3, &id)).await?;
        Ok([greet.len(), get.len(), create.len()])
    }

    /// Starts ours once on every SQL store of the pass, so a database that cannot be
    /// reached fails the pass in its first second rather than after minutes of work.
    fn preflight(&self) -> Result<(), String> {
        for &store in self.plan.stores.iter().filter(|s| **s != Store::Memory) {
            let p = self.start(Peer::Ours(store)).map_err(|e| format!("{}: {e}", Peer::Ours(store).label()))?;
            (self.log)(&format!("{} starts (pid {})", Peer::Ours(store).label(), p.pid));
        }
        Ok(())
    }

    /// Measures our response sizes so the echo answers with bodies of the same length.
    /// Also records rmcp's and the fixture's sizes in `meta`, for the report.
    async fn calibrate(&mut self, meta: &mut Meta) -> Result<(), String> {
        self.echo_sizes = self.sizes(Peer::Ours(Store::Memory)).await?;
        meta.echo_sizes = self.echo_sizes;
        if self.bins.rmcp.is_some() {
            meta.rmcp_sizes = self.sizes(Peer::Rmcp).await?;
        }
        if self.bins.fixture.is_some() {
            meta.fixture_sizes = self.sizes(Peer::Fixture).await?;
        }
        Ok(())
    }

    pub(super) fn builder(host: String, f: impl Fn(u64) -> wire::Call + Send + Sync + 'static) -> Builder {
        Arc::new(move |n, out| wire::http_request(out, &host, "/mcp", &f(n)))
    }

    pub(super) fn expect(peer: Peer, workload: Workload) -> &'static [u8] {
        match (peer, workload) {
            (Peer::Echo, _) => b"\"result\"",
            (_, Workload::W1 | Workload::W8) => b"Hello, bench-",
            (_, Workload::W4) => b"\"taskId\"",
            (_, Workload::W2) => b"\"status\":\"working\"",
            // A few W4 tasks may have been failed by the janitor's start-up recovery (see the report).
            (_, Workload::W3) => b"\"taskId\"",
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn sample(
        &self,
        workload: Workload,
        peer: Peer,
        conns: usize,
        round: usize,
        r: &LoadResult,
        cpu_ticks: u64,
        peak_rss_kib: u64,
    ) -> Sample {
        let cpu_us = cpu_ticks as f64 * 1e6 / self.ticks as f64;
        Sample {
            workload,
            peer,
            conns,
            round,
            requests: r.requests,
            errors: r.errors,
            secs: r.elapsed.as_secs_f64(),
            rps: r.rps(),
            p50_us: us(quantile(&r.latencies, 0.5)),
            p99_us: us(quantile(&r.latencies, 0.99)),
            cpu_us_per_req: cpu_us / r.requests.max(1) as f64,
            peak_rss_kib,
            table: None,
            buckets: Vec::new(),
            capped: false,
            bytes_per_task: None,
            first_error: r.first_error.clone(),
        }
    }

    pub(super) fn report_line(&self, s: &Sample) {
        let mut line = format!(
            "{} {:>2} conns round {} {:<33} {:>9.0} req/s  p50 {:>7.1} µs  p99 {:>8.1} µs  cpu {:>6.1} µs/req  hwm {:>7} KiB",
            s.workload.name(),
            s.conns,
            s.round + 1,
            s.peer.label(),
            s.rps,
            s.p50_us,
            s.p99_us,
            s.cpu_us_per_req,
            s.peak_rss_kib
        );
        if let Some(t) = s.table {
            line.push_str(&format!("  table {t}"));
        }
        if let Some(b) = s.bytes_per_task {
            line.push_str(&format!("  {b:.0} B/task"));
        }
        if s.errors > 0 {
            line.push_str(&format!("  ERRORS {} ({})", s.errors, s.first_error.as_deref().unwrap_or_default()));
        }
        (self.log)(&line);
    }

    /// Warm-up, then one measured load phase; returns the sample.
    async fn measured(
        &self,
        p: &Proc,
        workload: Workload,
        peer: Peer,
        conns: usize,
        round: usize,
        build: Builder,
    ) -> Result<Sample, String> {
        let base = Load {
            addr: p.addr,
            conns,
            duration: Some(self.plan.warmup()),
            max_requests: None,
            expect: Self::expect(peer, workload),
            collect_ids: false,
            pace: None,
        };
        load::run(&base, build.clone()).await.map_err(io_err)?;
        let load = Load { duration: Some(self.plan.measure()), ..base };
        let c0 = p.cpu();
        let r = load::run(&load, build).await.map_err(io_err)?;
        let c1 = p.cpu();
        Ok(self.sample(workload, peer, conns, round, &r, c1.saturating_sub(c0), p.kib("VmHWM")))
    }

    /// W1 or W2 on a fresh server.
    async fn simple(&self, workload: Workload, peer: Peer, conns: usize, round: usize) -> Result<Sample, String> {
        let p = self.start(peer)?;
        let host = p.addr.to_string();
        let build = match workload {
            Workload::W1 => Self::builder(host, wire::greet),
            _ => {
                let id = match peer {
                    Peer::Echo => fake_id(0),
                    _ => {
                        // The first creation starts conduit-mcp's janitor, whose start-up lease
                        // recovery can fail a task created at that instant: let it pass first.
                        Self::create_one(p.addr, 0).await?;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Self::create_one(p.addr, 1).await?
                    }
                };
                Self::builder(host, move |n| wire::tasks_get(n, &id))
            }
        };
        let s = self.measured(&p, workload, peer, conns, round, build).await?;
        self.report_line(&s);
        Ok(s)
    }

    /// W4 from an empty table, then W3 on the table it built, on one fresh server.
    async fn create_then_lookup(&self, peer: Peer, conns: usize, round: usize) -> Result<(Sample, Sample), String> {
        let p = self.start(peer)?;
        let host = p.addr.to_string();
        // Warm the connections with greet: W4 starts from an empty table.
        let warm = Load {
            addr: p.addr,
            conns,
            duration: Some(self.plan.warmup() / 2),
            max_requests: None,
            expect: Self::expect(peer, Workload::W1),
            collect_ids: false,
            pace: None,
        };
        load::run(&warm, Self::builder(host.clone(), wire::greet)).await.map_err(io_err)?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss0 = p.kib("VmRSS");
        let create = Load {
            duration: Some(self.plan.create_cap(peer)),
            max_requests: Some(self.plan.table as u64),
            expect: Self::expect(peer, Workload::W4),
            collect_ids: true,
            ..warm.clone()
        };
        let c0 = p.cpu();
        let r = load::run(&create, Self::builder(host.clone(), wire::create_task)).await.map_err(io_err)?;
        let c1 = p.cpu();
        let created = r.completions.len();
        let mut w4 = self.sample(Workload::W4, peer, conns, round, &r, c1.saturating_sub(c0), p.kib("VmHWM"));
        w4.table = Some(created);
        w4.capped = created < self.plan.table;
        w4.buckets = load::bucket_rates(&r.completions, self.plan.bucket);
        // W7 is the memory store's (and rmcp's) measurement: the SQL stores keep their rows on disk.
        if matches!(peer, Peer::Ours(Store::Memory) | Peer::Rmcp) && created > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let rss1 = p.kib("VmRSS");
            w4.bytes_per_task = Some(rss1.saturating_sub(rss0) as f64 * 1024.0 / created as f64);
        }
        self.report_line(&w4);
        let ids: Arc<Vec<String>> = Arc::new(match peer {
            Peer::Echo => (0..self.plan.table as u64).map(fake_id).collect(),
            _ => r.ids,
        });
        if ids.is_empty() {
            return Err(format!(
                "{}: W4 created no task: {}",
                peer.label(),
                w4.first_error.clone().unwrap_or_default()
            ));
        }
        let table = ids.len();
        let build = Self::builder(host, move |n| wire::tasks_get(n, &ids[(load::mix(n) % ids.len() as u64) as usize]));
        let mut w3 = self.measured(&p, Workload::W3, peer, conns, round, build).await?;
        w3.table = Some(table);
        self.report_line(&w3);
        Ok((w4, w3))
    }

    /// Runs the whole plan.
    pub async fn run(mut self, mut meta: Meta) -> Result<Results, String> {
        let started = Instant::now();
        self.preflight()?;
        self.calibrate(&mut meta).await?;
        (self.log)(&format!(
            "echo answers with bodies of {} (greet), {} (tasks/get), {} (create) bytes",
            self.echo_sizes[0], self.echo_sizes[1], self.echo_sizes[2]
        ));
        let table_peers = self.peers_for(Workload::W4);
        let mut res = Results { meta, plan: Some(self.plan.clone()), ..Results::default() };
        for workload in [Workload::W1, Workload::W2].into_iter().filter(|w| self.plan.runs(w.name())) {
            for &conns in &self.plan.conns {
                for round in 0..self.plan.rounds {
                    for peer in self.peers_for(workload) {
                        res.samples.push(self.simple(workload, peer, conns, round).await?);
                    }
                }
            }
        }
        self.legacy(&mut res).await?;
        let table = ["W3", "W4", "W7"].iter().any(|w| self.plan.runs(w));
        for &conns in self.plan.conns.iter().filter(|_| table) {
            for round in 0..self.plan.rounds {
                for &peer in &table_peers {
                    let (w4, w3) = self.create_then_lookup(peer, conns, round).await?;
                    res.samples.push(w4);
                    res.samples.push(w3);
                }
            }
        }
        for &conns in self.plan.conns.iter().filter(|_| self.plan.runs("W5")) {
            for round in 0..self.plan.rounds {
                for &store in &self.plan.stores {
                    res.notify.push(self.notify(Peer::Ours(store), 1, conns, round).await?);
                    if store == Store::Postgres {
                        res.notify.push(self.notify(Peer::Ours(store), 2, conns, round).await?);
                    }
                }
            }
        }
        for round in (0..self.plan.rounds).filter(|_| self.plan.runs("W6")) {
            res.sweep.extend(self.sweep(round)?);
        }
        res.meta.wall_secs = started.elapsed().as_secs_f64();
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Binaries, Plan};

    fn harness(stores: Vec<Store>) -> Harness {
        harness_with(stores, None)
    }

    fn harness_with(stores: Vec<Store>, fixture: Option<&str>) -> Harness {
        let bins = Binaries {
            server: "bench-server".into(),
            echo: "bench-echo".into(),
            rmcp: None,
            fixture: fixture.map(Into::into),
            database_url: None,
            sqlite_path: "target/bench/sqlite/test.db".into(),
            pg_schema: "conduit_bench".into(),
        };
        Harness::new(bins, Plan { stores, ..Plan::smoke() }, |_| {})
    }

    #[test]
    fn w1_runs_ours_on_the_memory_store_only() {
        let h = harness(vec![Store::Memory, Store::Sqlite, Store::Postgres]);
        assert_eq!(h.peers_for(Workload::W1), vec![Peer::Ours(Store::Memory), Peer::Echo]);
        assert_eq!(
            h.peers_for(Workload::W2),
            vec![Peer::Ours(Store::Memory), Peer::Ours(Store::Sqlite), Peer::Ours(Store::Postgres), Peer::Echo]
        );
        let sql_only = harness(vec![Store::Sqlite]);
        assert_eq!(sql_only.peers_for(Workload::W1), vec![Peer::Ours(Store::Sqlite), Peer::Echo]);
    }

    #[test]
    fn the_fixture_runs_w1_and_w2_beside_ours() {
        let h = harness_with(vec![Store::Memory, Store::Sqlite], Some("conduit-mcp-conformance"));
        assert_eq!(h.peers_for(Workload::W1), vec![Peer::Ours(Store::Memory), Peer::Fixture, Peer::Echo]);
        assert_eq!(
            h.peers_for(Workload::W2),
            vec![Peer::Ours(Store::Memory), Peer::Ours(Store::Sqlite), Peer::Fixture, Peer::Echo]
        );
        for w in [Workload::W3, Workload::W4] {
            assert!(!h.peers_for(w).contains(&Peer::Fixture), "{w:?}");
        }
        assert!(h.peers().contains(&Peer::Fixture));
    }
}
