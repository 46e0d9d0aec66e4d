//! The load generator: N keep-alive connections, one request in flight on each,
//! until a deadline or a request count, every request built fresh.

use crate::client::Conn;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Writes the whole HTTP request number `n` into the buffer.
pub type Builder = Arc<dyn Fn(u64, &mut Vec<u8>) + Send + Sync>;

/// What to send and when to stop.
#[derive(Debug, Clone)]
pub struct Load {
    /// The server.
    pub addr: SocketAddr,
    /// Connections, each with one request in flight.
    pub conns: usize,
    /// Stop issuing requests after this long.
    pub duration: Option<Duration>,
    /// Stop after issuing this many requests.
    pub max_requests: Option<u64>,
    /// A response counts as a success only if its status is 200 and its body holds this.
    pub expect: &'static [u8],
    /// Keep the `taskId` of every successful response (W4).
    pub collect_ids: bool,
    /// Requests per second at most, over all connections: the `n`-th request is not
    /// sent before `n / pace` seconds from the start (`None`: as fast as answers come).
    pub pace: Option<f64>,
}

/// What one load run measured.
#[derive(Debug, Default)]
pub struct LoadResult {
    /// Responses received (successes and failures).
    pub requests: u64,
    /// Responses that were not a success, and connections that failed.
    pub errors: u64,
    /// The first failure, for the log.
    pub first_error: Option<String>,
    /// From the first request to the last response.
    pub elapsed: Duration,
    /// Every request's latency in ns, sorted.
    pub latencies: Vec<u32>,
    /// When each success arrived (ns after the start), sorted.
    pub completions: Vec<u64>,
    /// The `taskId`s collected (with [`Load::collect_ids`]).
    pub ids: Vec<String>,
}

impl LoadResult {
    /// Responses per second.
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

#[derive(Default)]
struct ConnOut {
    requests: u64,
    errors: u64,
    first_error: Option<String>,
    latencies: Vec<u32>,
    completions: Vec<u64>,
    ids: Vec<String>,
}

fn fail(out: &mut ConnOut, msg: String) {
    out.errors += 1;
    if out.first_error.is_none() {
        out.first_error = Some(msg);
    }
}

async fn conn_loop(
    load: Load,
    build: Builder,
    issued: Arc<AtomicU64>,
    t0: Instant,
    deadline: Option<Instant>,
) -> ConnOut {
    let mut out = ConnOut::default();
    let mut conn = match Conn::connect(load.addr).await {
        Ok(c) => c,
        Err(e) => {
            fail(&mut out, format!("connect: {e}"));
            return out;
        }
    };
    let mut req = Vec::with_capacity(1024);
    let max = load.max_requests.unwrap_or(u64::MAX);
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let n = issued.fetch_add(1, Ordering::Relaxed);
        if n >= max {
            break;
        }
        if let Some(rate) = load.pace.filter(|r| *r > 0.0) {
            tokio::time::sleep_until((t0 + Duration::from_secs_f64(n as f64 / rate)).into()).await;
        }
        build(n, &mut req);
        let start = Instant::now();
        let status = match conn.roundtrip(&req).await {
            Ok(s) => s,
            Err(e) => {
                fail(&mut out, format!("request: {e}"));
                break;
            }
        };
        let end = Instant::now();
        out.requests += 1;
        out.latencies.push((end - start).as_nanos().min(u128::from(u32::MAX)) as u32);
        let body = conn.body();
        if status != 200 || crate::wire::find(body, load.expect).is_none() {
            let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            fail(&mut out, format!("HTTP {status}: {text}"));
            continue;
        }
        if load.collect_ids {
            out.completions.push((end - t0).as_nanos() as u64);
            if let Some(id) = crate::wire::find_str_field(body, "taskId") {
                out.ids.push(id.to_owned());
            }
        }
    }
    out
}

/// Runs `load`, building each request with `build`.
pub async fn run(load: &Load, build: Builder) -> io::Result<LoadResult> {
    run_each(load, vec![build; load.conns.max(1)]).await
}

/// Runs `load` with one builder per connection (connection `i` builds with `builds[i]`,
/// e.g. each in its own legacy session); `load.conns` is ignored.
pub async fn run_each(load: &Load, builds: Vec<Builder>) -> io::Result<LoadResult> {
    if load.duration.is_none() && load.max_requests.is_none() {
        return Err(io::Error::other("a load needs a duration or a request count"));
    }
    let issued = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let deadline = load.duration.map(|d| t0 + d);
    let handles: Vec<_> = builds
        .into_iter()
        .map(|build| tokio::spawn(conn_loop(load.clone(), build, issued.clone(), t0, deadline)))
        .collect();
    let mut res = LoadResult::default();
    for h in handles {
        let o = h.await.map_err(io::Error::other)?;
        res.requests += o.requests;
        res.errors += o.errors;
        if res.first_error.is_none() {
            res.first_error = o.first_error;
        }
        res.latencies.extend(o.latencies);
        res.completions.extend(o.completions);
        res.ids.extend(o.ids);
    }
    res.elapsed = t0.elapsed();
    res.latencies.sort_unstable();
    res.completions.sort_unstable();
    Ok(res)
}

/// A well-mixed 64-bit hash of `n` (splitmix64), for picking random table entries.
pub fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Creates per second in each successive `bucket` of completions (W4's growth curve).
pub fn bucket_rates(completions_ns: &[u64], bucket: usize) -> Vec<f64> {
    if bucket == 0 {
        return Vec::new();
    }
    let mut rates = Vec::new();
    let mut prev = 0u64;
    let mut k = bucket;
    while k <= completions_ns.len() {
        let t = completions_ns[k - 1];
        rates.push(bucket as f64 / ((t.saturating_sub(prev)) as f64 / 1e9).max(1e-9));
        prev = t;
        k += bucket;
    }
    rates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        let c: Vec<u64> = (1..=10).map(|i| i * 100_000_000).collect(); // one every 0.1 s
        let r = bucket_rates(&c, 5);
        assert_eq!(r.len(), 2);
        assert!((r[0] - 10.0).abs() < 1e-6 && (r[1] - 10.0).abs() < 1e-6);
        assert!(bucket_rates(&c, 0).is_empty());
        assert_ne!(mix(1), mix(2));
    }
}
