//! `--metrics ADDR`: the library's counters and histograms (see the
//! `conduit_mcp` `metrics` feature) served in Prometheus text format at
//! `http://ADDR/metrics` by `metrics-exporter-prometheus`, which also keeps
//! the histograms' memory bounded (its upkeep task).

use metrics_exporter_prometheus::PrometheusBuilder;
use std::net::SocketAddr;

/// Installs the global recorder and starts the scrape endpoint on `addr`.
pub(crate) fn install(addr: SocketAddr) -> Result<(), String> {
    PrometheusBuilder::new().with_http_listener(addr).install().map_err(|e| format!("--metrics {addr}: {e}"))?;
    eprintln!("metrics on http://{addr}/metrics");
    Ok(())
}
