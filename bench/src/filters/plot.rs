//! `--plot PATH.svg`: FPR against bits/key on a log scale, with the information-theoretic floor.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use super::sweep::SweepRow;

/// Draws every filter's measured (bits/key, FPR) points as a line, plus the floor `2^-b`.
pub fn plot_fpr(rows: &[SweepRow], path: &Path) -> Result<(), String> {
    let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.fpr > 0.0) {
        series
            .entry(row.filter)
            .or_default()
            .push((row.bits_per_key, row.fpr));
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let max_bits = rows
        .iter()
        .map(|r| r.bits_per_key)
        .fold(8.0, f64::max)
        .ceil()
        + 1.0;
    let min_fpr = rows
        .iter()
        .map(|r| r.fpr)
        .filter(|&f| f > 0.0)
        .fold(1e-3, f64::min)
        / 2.0;

    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption("FPR vs bits/key (measured)", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(4f64..max_bits, (min_fpr..0.2f64).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("bits per key (serialized size × 8 / n)")
        .y_desc("false-positive rate")
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .draw()
        .map_err(|e| e.to_string())?;

    let floor: Vec<(f64, f64)> = (0..=200)
        .map(|i| 4.0 + (max_bits - 4.0) * f64::from(i) / 200.0)
        .map(|b| (b, 2f64.powf(-b)))
        .filter(|&(_, f)| f >= min_fpr)
        .collect();
    chart
        .draw_series(LineSeries::new(floor, BLACK.stroke_width(1)))
        .map_err(|e| e.to_string())?
        .label("floor: log2(1/fpr) bits")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));

    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN];
    for (i, (name, points)) in series.into_iter().enumerate() {
        let color = palette[i % palette.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
