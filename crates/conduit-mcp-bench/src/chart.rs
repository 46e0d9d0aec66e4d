//! The one chart of the report: W1–W4 requests/s for every server, as grouped
//! bars (median) with whiskers (range over the rounds). SVG only.

use crate::harness::{Peer, Results, Workload};
use crate::report::spread;
use plotters::prelude::*;
use std::path::Path;

/// Bar colours, one per server in the order of [`crate::harness::Harness::peers`].
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(127, 127, 127),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// Draws the chart to `path`.
pub fn draw(results: &Results, peers: &[Peer], path: &Path) -> Result<(), String> {
    let conns = results.plan.as_ref().map(|p| p.conns.clone()).unwrap_or_else(|| vec![1, 50]);
    let groups: Vec<(Workload, usize)> = [Workload::W1, Workload::W2, Workload::W3, Workload::W4]
        .into_iter()
        .flat_map(|w| conns.iter().map(move |&c| (w, c)))
        .collect();
    let mut ymax = 1.0f64;
    for &(w, c) in &groups {
        for &p in peers {
            if let Some(s) = spread(results, w, p, c, |s| s.rps) {
                ymax = ymax.max(s.max);
            }
        }
    }
    let ymax = ymax * 1.1;
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw {}: {e:?}", path.display());
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("W1–W4: requests/s (median, whiskers = range over rounds)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..groups.len() as f64, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("requests/s")
        .y_label_formatter(&|y| crate::stats::thousands(*y))
        .draw()
        .map_err(err)?;
    let width = 0.8 / peers.len().max(1) as f64;
    for (pi, &peer) in peers.iter().enumerate() {
        let color = COLORS[pi % COLORS.len()];
        let mut bars = Vec::new();
        let mut whiskers = Vec::new();
        for (gi, &(w, c)) in groups.iter().enumerate() {
            let Some(s) = spread(results, w, peer, c, |s| s.rps) else { continue };
            let x0 = gi as f64 + 0.1 + pi as f64 * width;
            bars.push(Rectangle::new([(x0, 0.0), (x0 + width * 0.9, s.median)], color.filled()));
            let xc = x0 + width * 0.45;
            whiskers.push(PathElement::new(vec![(xc, s.min), (xc, s.max)], BLACK.stroke_width(1)));
        }
        chart
            .draw_series(bars)
            .map_err(err)?
            .label(peer.label())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart.draw_series(whiskers).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    let style = ("sans-serif", 14).into_font().color(&BLACK).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Top,
    ));
    for (gi, &(w, c)) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(gi as f64 + 0.5, 0.0));
        let label = format!("{} · {c} conn{}", w.name(), if c == 1 { "" } else { "s" });
        root.draw(&Text::new(label, (x, y + 8), style.clone())).map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
