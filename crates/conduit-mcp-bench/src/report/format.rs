//! How a number is shown in a cell: ratios, verdicts, request rates.

use crate::stats::{Spread, thousands};

/// `1.23×`, or `n/a`.
pub(super) fn show_ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |x| format!("{x:.2}×"))
}

/// `**met**`, `**missed**`, or `not run`.
pub(super) fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "**met**",
        Some(false) => "**missed**",
        None => "not run",
    }
}

/// A rate's median, with its [range] over the rounds when they differ.
pub(super) fn show_rps(s: &Spread) -> String {
    if s.min == s.max {
        return thousands(s.median);
    }
    format!("{} [{}–{}]", thousands(s.median), thousands(s.min), thousands(s.max))
}
