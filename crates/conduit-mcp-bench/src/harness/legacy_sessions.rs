//! W8 and W9, the 2025-11-25 era: sessions opened the way a legacy client opens
//! them (`initialize`, then `notifications/initialized`, then requests with
//! `Mcp-Session-Id` and `MCP-Protocol-Version`). rmcp runs in its default
//! stateful session mode here, not the stateless mode of W1–W4.
//!
//! - W8: `tools/call greet` with every connection in its own session, a fresh
//!   server per run, warm-up then one measured phase (judged against our W1);
//! - W9: resident memory per idle session: `VmRSS` after opening
//!   `plan.sessions` sessions minus before, divided by their number.

use super::process::Proc;
use super::{Harness, io_err};
use super::{Peer, Results, Sample, SessionMemSample, Workload};
use crate::client::Conn;
use crate::legacy_wire;
use crate::load::{self, Builder, Load};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Connections W9 opens its sessions over.
const OPENERS: usize = 50;

impl Harness {
    /// The servers of W8 and W9: ours (on the store W1 uses), and rmcp (stateful) when given.
    pub fn legacy_peers(&self) -> Vec<Peer> {
        let mut v: Vec<Peer> =
            self.peers_for(Workload::W1).into_iter().filter(|p| matches!(p, Peer::Ours(_))).collect();
        if self.bins.rmcp.is_some() {
            v.push(Peer::Rmcp);
        }
        v
    }

    fn start_legacy(&self, peer: Peer) -> Result<Proc, String> {
        match peer {
            Peer::Rmcp => self.start_rmcp_stateful(),
            p => self.start(p),
        }
    }

    /// Opens `count` sessions over `parallel` keep-alive connections; returns their ids.
    async fn open_sessions(addr: SocketAddr, count: usize, parallel: usize) -> Result<Vec<String>, String> {
        let parallel = parallel.clamp(1, count.max(1));
        let mut handles = Vec::with_capacity(parallel);
        for k in 0..parallel {
            let n = count / parallel + usize::from(k < count % parallel);
            handles.push(tokio::spawn(async move {
                let host = addr.to_string();
                let mut c = Conn::connect(addr).await.map_err(io_err)?;
                let mut req = Vec::with_capacity(512);
                let mut ids = Vec::with_capacity(n);
                for i in 0..n {
                    legacy_wire::http_request(&mut req, &host, None, &legacy_wire::initialize(i as u64));
                    let (status, id) = c.roundtrip_header(&req, "mcp-session-id").await.map_err(io_err)?;
                    let Some(id) = id.filter(|_| status == 200) else {
                        let body = String::from_utf8_lossy(&c.body()[..c.body().len().min(300)]).into_owned();
                        return Err(format!("initialize answered HTTP {status} without a session: {body}"));
                    };
                    legacy_wire::http_request(&mut req, &host, Some(&id), &legacy_wire::initialized());
                    let status = c.roundtrip(&req).await.map_err(io_err)?;
                    if status != 202 {
                        return Err(format!("notifications/initialized answered HTTP {status}"));
                    }
                    ids.push(id);
                }
                Ok::<_, String>(ids)
            }));
        }
        let mut all = Vec::with_capacity(count);
        for h in handles {
            all.extend(h.await.map_err(|e| e.to_string())??);
        }
        Ok(all)
    }

    /// W8 on a fresh server: `conns` connections, each in its own session.
    async fn in_session(&self, peer: Peer, conns: usize, round: usize) -> Result<Sample, String> {
        let p = self.start_legacy(peer)?;
        let sessions = Self::open_sessions(p.addr, conns, conns).await?;
        let host = p.addr.to_string();
        let builds: Vec<Builder> = sessions
            .into_iter()
            .map(|sid| {
                let host = host.clone();
                Arc::new(move |n: u64, out: &mut Vec<u8>| {
                    legacy_wire::http_request(out, &host, Some(&sid), &legacy_wire::greet(n));
                }) as Builder
            })
            .collect();
        let base = Load {
            addr: p.addr,
            conns,
            duration: Some(self.plan.warmup()),
            max_requests: None,
            expect: Self::expect(peer, Workload::W8),
            collect_ids: false,
            pace: None,
        };
        load::run_each(&base, builds.clone()).await.map_err(io_err)?;
        let load = Load { duration: Some(self.plan.measure()), ..base };
        let c0 = p.cpu();
        let r = load::run_each(&load, builds).await.map_err(io_err)?;
        let c1 = p.cpu();
        let s = self.sample(Workload::W8, peer, conns, round, &r, c1.saturating_sub(c0), p.kib("VmHWM"));
        self.report_line(&s);
        Ok(s)
    }

    /// W9 on a fresh server: `plan.sessions` idle sessions.
    async fn idle_sessions(&self, peer: Peer, round: usize) -> Result<SessionMemSample, String> {
        let p = self.start_legacy(peer)?;
        let before = p.kib("VmRSS");
        let ids = Self::open_sessions(p.addr, self.plan.sessions, OPENERS).await?;
        // Let the connections close and the server settle before reading its memory.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = p.kib("VmRSS");
        let n = ids.len().max(1);
        let s = SessionMemSample {
            peer,
            round,
            sessions: ids.len(),
            rss_before_kib: before,
            rss_after_kib: after,
            bytes_per_session: after.saturating_sub(before) as f64 * 1024.0 / n as f64,
        };
        (self.log)(&format!(
            "W9 round {} {:<33} {} sessions  VmRSS {} → {} KiB  {:.0} B/session",
            round + 1,
            peer.label(),
            s.sessions,
            before,
            after,
            s.bytes_per_session
        ));
        Ok(s)
    }

    /// Runs W8 and W9 as the plan says, into `res`.
    pub(super) async fn legacy(&self, res: &mut Results) -> Result<(), String> {
        let peers = self.legacy_peers();
        for &conns in self.plan.conns.iter().filter(|_| self.plan.runs("W8")) {
            for round in 0..self.plan.rounds {
                for &peer in &peers {
                    res.samples.push(self.in_session(peer, conns, round).await?);
                }
            }
        }
        for round in (0..self.plan.rounds).filter(|_| self.plan.runs("W9")) {
            for &peer in &peers {
                res.sessions.push(self.idle_sessions(peer, round).await?);
            }
        }
        Ok(())
    }
}
