//! Numbers picked out of [`Results`]: the spread over rounds of one metric, the
//! servers and stores a pass ran, its connection counts, and W4's flatness.

use crate::harness::{Peer, Results, Sample, Store, Workload};
use crate::stats::Spread;

/// Ours on the memory store: the server the targets judge.
pub(super) const OURS: Peer = Peer::Ours(Store::Memory);

/// The spread over rounds of `metric` for one workload, server and connection count.
pub fn spread(r: &Results, w: Workload, peer: Peer, conns: usize, metric: impl Fn(&Sample) -> f64) -> Option<Spread> {
    let v: Vec<f64> =
        r.samples.iter().filter(|s| s.workload == w && s.peer == peer && s.conns == conns).map(metric).collect();
    Spread::of(&v)
}

/// The median over rounds of `metric` (see [`spread`]).
pub(super) fn median(
    r: &Results,
    w: Workload,
    peer: Peer,
    conns: usize,
    metric: impl Fn(&Sample) -> f64,
) -> Option<f64> {
    spread(r, w, peer, conns, metric).map(|s| s.median)
}

/// `a / b` when both were measured and `b` is not zero.
pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The servers in the order the report and chart list them.
pub fn peers(r: &Results) -> Vec<Peer> {
    let mut v: Vec<Peer> = Vec::new();
    for s in &r.samples {
        if !v.contains(&s.peer) {
            v.push(s.peer);
        }
    }
    v.sort_by_key(|p| match p {
        Peer::Ours(_) => 0,
        Peer::Fixture => 1,
        Peer::Rmcp => 2,
        Peer::Echo => 3,
    });
    v
}

/// The connection counts of the pass.
pub(super) fn conns_of(r: &Results) -> Vec<usize> {
    r.plan.as_ref().map(|p| p.conns.clone()).unwrap_or_else(|| vec![1, 50])
}

/// KiB to MiB.
pub(super) fn mib(kib: f64) -> f64 {
    kib / 1024.0
}

/// `last bucket rate / first bucket rate` of W4, median over rounds.
pub(super) fn flatness(r: &Results, peer: Peer, conns: usize) -> Option<f64> {
    let v: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.workload == Workload::W4 && s.peer == peer && s.conns == conns && s.buckets.len() >= 2)
        .map(|s| s.buckets[s.buckets.len() - 1] / s.buckets[0])
        .collect();
    Spread::of(&v).map(|s| s.median)
}

/// The stores ours ran on, in the order of [`Store`].
pub(super) fn stores_of(r: &Results) -> Vec<Store> {
    let mut v: Vec<Store> = Vec::new();
    for p in r.samples.iter().map(|s| s.peer).chain(r.notify.iter().map(|n| n.peer)) {
        if let Peer::Ours(s) = p
            && !v.contains(&s)
        {
            v.push(s);
        }
    }
    v.sort_by_key(|s| *s as u8);
    v
}
