//! W5, notification latency: listen streams over tasks of a fresh server of
//! ours, then the worker API completes them; the latency runs from the
//! `Tasks::complete` call to the `notifications/tasks` arriving on a stream.

use super::{Harness, NotifySample, Peer, Workload, io_err, notify_label, us};
use crate::client::Conn;
use crate::load::{self, Load};
use crate::ours::{completion_stamp, now_us};
use crate::stats::quantile;
use crate::wire;
use std::time::Duration;

impl Harness {
    /// W5 on a fresh server of ours: listen streams over `notify_tasks` tasks, then the
    /// worker API completes them one per ms; latency from `complete` to arrival.
    ///
    /// With `nodes == 2` (PostgreSQL only) a second server joins the first one's schema:
    /// the first creates and completes the tasks, the second holds the listen streams, so
    /// every notification crosses nodes through `LISTEN`/`NOTIFY`.
    pub(super) async fn notify(
        &self,
        peer: Peer,
        nodes: usize,
        conns: usize,
        round: usize,
    ) -> Result<NotifySample, String> {
        let p = self.start(peer)?;
        let second = if nodes > 1 { Some(self.start_node(peer, false)?) } else { None };
        let listener = second.as_ref().unwrap_or(&p);
        let host = p.addr.to_string();
        let listen_host = listener.addr.to_string();
        let n = self.plan.notify_tasks;
        // Let the janitor's start-up recovery pass (see `simple`).
        Self::create_one(p.addr, 1_000_000_000).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The tasks, created over a few connections (a durable store commits each one).
        let setup = Load {
            addr: p.addr,
            conns: n.clamp(1, 8),
            duration: None,
            max_requests: Some(n as u64),
            expect: Self::expect(peer, Workload::W4),
            collect_ids: true,
            pace: None,
        };
        let created = load::run(&setup, Self::builder(host.clone(), wire::create_task)).await.map_err(io_err)?;
        let ids = created.ids;
        if ids.len() != n {
            return Err(format!(
                "{}: W5 created {} of {n} tasks: {}",
                notify_label(peer, nodes),
                ids.len(),
                created.first_error.unwrap_or_default()
            ));
        }
        let streams = conns.clamp(1, n.max(1));
        let mut groups: Vec<Vec<String>> = vec![Vec::new(); streams];
        for (i, id) in ids.iter().enumerate() {
            groups[i % streams].push(id.clone());
        }
        let mut readers = Vec::new();
        let limit = Duration::from_secs(10) + Duration::from_millis(2 * n as u64);
        let deadline = tokio::time::Instant::now() + limit;
        for (g, group) in groups.into_iter().enumerate() {
            let conn = Conn::connect(listener.addr).await.map_err(io_err)?;
            let mut req = Vec::new();
            wire::http_request(&mut req, &listen_host, "/mcp", &wire::listen(&format!("listen-{g}"), &group));
            let mut stream = conn.open_stream(&req).await.map_err(io_err)?;
            let ack = stream.next_data().await.map_err(io_err)?.ok_or("listen stream ended before its ack")?;
            let acked = group.iter().filter(|id| ack.contains(id.as_str())).count();
            if !ack.contains("notifications/subscriptions/acknowledged") || acked != group.len() {
                return Err(format!("listen acknowledged {acked} of {} tasks: {ack}", group.len()));
            }
            let want = group.len();
            readers.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(want);
                while lat.len() < want {
                    let Ok(Ok(Some(data))) = tokio::time::timeout_at(deadline, stream.next_data()).await else { break };
                    if data.contains("notifications/tasks")
                        && data.contains("\"status\":\"completed\"")
                        && let Some(t0) = completion_stamp(&data)
                    {
                        lat.push(now_us().saturating_sub(t0).min(u64::from(u32::MAX) / 1000) as u32 * 1000);
                    }
                }
                lat
            }));
        }
        let body = serde_json::json!({ "taskIds": ids, "intervalUs": 1000 }).to_string();
        let call = wire::Call { method: "bench/complete", name: None, body };
        Self::once(p.addr, "/bench/complete", &call).await?;
        let mut all = Vec::with_capacity(n);
        for r in readers {
            all.extend(r.await.map_err(|e| e.to_string())?);
        }
        all.sort_unstable();
        let s = NotifySample {
            peer,
            nodes,
            conns: streams,
            round,
            tasks: n,
            received: all.len(),
            p50_us: us(quantile(&all, 0.5)),
            p99_us: us(quantile(&all, 0.99)),
            max_us: us(all.last().copied().unwrap_or(0)),
        };
        (self.log)(&format!(
            "W5 {:>2} streams round {} {:<31} {}/{} notifications  p50 {:.1} µs  p99 {:.1} µs  max {:.1} µs",
            s.conns,
            round + 1,
            notify_label(peer, nodes),
            s.received,
            s.tasks,
            s.p50_us,
            s.p99_us,
            s.max_us
        ));
        Ok(s)
    }
}
