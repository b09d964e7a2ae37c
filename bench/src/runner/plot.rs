//! `--plot DIR`: SVG charts of a run, one file per chart, every engine of `--engine` in each.
//!
//! - `latency-NN-WORKLOAD.svg`: the latency distribution of workload number `NN` (its place in
//!   `--benchmarks`), as a percentile plot: latency on a log axis against the percentile on a
//!   `-log10(1 - q)` axis, so the median, P99 and P99.9 are equally far apart and the tail shows.
//!   One line per engine; a mixed workload (YCSB) has one per engine and operation type.
//! - `throughput-NN-WORKLOAD.svg`: operations per second over a write workload's seconds, one
//!   line per engine: a write stall shows as a dip.
//! - `fpr-NN-WORKLOAD.svg`: for a point-read workload, each level's measured FPR (solid) and
//!   the FPR its filters' sizes predict (dashed). An engine that counts filter outcomes for the
//!   whole tree only (the peers) is one horizontal line.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use plotters::prelude::*;

use super::error::{Error, Result};
use super::report::is_point_read;
use super::workloads::PhaseResult;

/// The workloads one engine ran, in order.
#[derive(Debug, Clone)]
pub struct EngineRun {
    /// The engine's name.
    pub engine: String,
    /// Its workloads' results.
    pub phases: Vec<PhaseResult>,
}

/// A line of a chart.
#[derive(Debug, Clone)]
struct Line {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// The axes' ranges of a set of lines.
struct Extent {
    x: (f64, f64),
    y: (f64, f64),
}

const SIZE: (u32, u32) = (900, 600);

/// Percentiles marked on the latency charts' vertical axis.
const PERCENTILE_TICKS: [(f64, &str); 6] = [
    (0.0, "0%"),
    (1.0, "90%"),
    (2.0, "99%"),
    (3.0, "99.9%"),
    (4.0, "99.99%"),
    (5.0, "99.999%"),
];

fn engine_color(engine: &str) -> RGBColor {
    match engine {
        "siftdb" => RGBColor(200, 30, 30),
        "rocksdb" => RGBColor(30, 80, 200),
        "fjall" => RGBColor(20, 150, 60),
        _ => RGBColor(120, 60, 160),
    }
}

/// A darker or lighter shade of an engine's color for its `n`-th operation type.
fn shade(color: RGBColor, n: usize) -> RGBColor {
    let f = [1.0, 0.55, 1.45, 0.75, 1.25][n % 5];
    let scale = |c: u8| (f64::from(c) * f).clamp(0.0, 235.0) as u8;
    RGBColor(scale(color.0), scale(color.1), scale(color.2))
}

/// Writes every chart of `runs` into `dir`; returns the files written.
pub fn write_charts(dir: &Path, runs: &[EngineRun]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::from(e).context(format!("cannot create {}", dir.display())))?;
    let phases = runs.iter().map(|r| r.phases.len()).max().unwrap_or(0);
    let mut written = Vec::new();
    for p in 0..phases {
        let results: Vec<(&str, &PhaseResult)> = runs
            .iter()
            .filter_map(|r| r.phases.get(p).map(|ph| (r.engine.as_str(), ph)))
            .collect();
        let Some((_, first)) = results.first() else {
            continue;
        };
        let name = first.benchmark.name();
        for chart in Chart::ALL {
            let lines = chart.lines(&results);
            if lines.iter().all(|l| l.points.is_empty()) {
                continue;
            }
            let path = dir.join(format!("{}-{p:02}-{name}.svg", chart.file_stem()));
            draw(&path, name, chart, &lines)
                .map_err(|e| Error::new(format!("cannot draw {}: {e}", path.display())))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The three charts of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chart {
    Latency,
    Throughput,
    Fpr,
}

impl Chart {
    const ALL: [Chart; 3] = [Chart::Latency, Chart::Throughput, Chart::Fpr];

    fn file_stem(self) -> &'static str {
        match self {
            Chart::Latency => "latency",
            Chart::Throughput => "throughput",
            Chart::Fpr => "fpr",
        }
    }

    fn caption(self) -> &'static str {
        match self {
            Chart::Latency => "latency percentiles",
            Chart::Throughput => "throughput per second",
            Chart::Fpr => "measured (solid) and expected (dashed) FPR per level",
        }
    }

    /// The axes' descriptions (x, y).
    fn axes(self) -> (&'static str, &'static str) {
        match self {
            Chart::Latency => ("latency (µs, log)", "percentile"),
            Chart::Throughput => ("second", "operations per second"),
            Chart::Fpr => ("level", "false-positive rate (log)"),
        }
    }

    fn lines(self, results: &[(&str, &PhaseResult)]) -> Vec<Line> {
        match self {
            Chart::Latency => latency_lines(results),
            Chart::Throughput => throughput_lines(results),
            Chart::Fpr => fpr_lines(results),
        }
    }
}

/// The percentile curve of `h`: (latency µs, -log10(1 - q)) at quantiles up to 99.999 %.
fn percentile_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    (0..=250)
        .map(|i| f64::from(i) / 50.0)
        .map(|y| {
            let q = 1.0 - 10f64.powf(-y);
            let micros = h.value_at_quantile(q).max(1) as f64 / 1000.0;
            (micros, y)
        })
        .collect()
}

fn latency_lines(results: &[(&str, &PhaseResult)]) -> Vec<Line> {
    let mut lines = Vec::new();
    for (engine, result) in results {
        let Some(m) = &result.measured else { continue };
        let color = engine_color(engine);
        if m.by_kind.is_empty() {
            lines.push(Line {
                label: (*engine).to_string(),
                color,
                dashed: false,
                points: percentile_curve(&m.latency),
            });
        }
        for (n, (kind, h)) in m.by_kind.iter().enumerate() {
            lines.push(Line {
                label: format!("{engine} {}", kind.name()),
                color: shade(color, n),
                dashed: n % 2 == 1,
                points: percentile_curve(h),
            });
        }
    }
    lines
}

fn throughput_lines(results: &[(&str, &PhaseResult)]) -> Vec<Line> {
    results
        .iter()
        .filter(|(_, r)| r.benchmark.writes())
        .filter_map(|(engine, r)| {
            let m = r.measured.as_ref()?;
            // The last second is partial: left out unless it is the only one.
            let seconds = match m.per_second.as_slice() {
                [only] => std::slice::from_ref(only),
                [full @ .., _partial] => full,
                [] => &[],
            };
            let points = seconds
                .iter()
                .enumerate()
                .map(|(s, &ops)| (s as f64, ops as f64))
                .collect();
            Some(Line {
                label: (*engine).to_string(),
                color: engine_color(engine),
                dashed: false,
                points,
            })
        })
        .collect()
}

fn fpr_lines(results: &[(&str, &PhaseResult)]) -> Vec<Line> {
    let max_level = results
        .iter()
        .filter_map(|(_, r)| r.stats.as_ref().map(|s| s.levels.len()))
        .max()
        .unwrap_or(1)
        .max(2) as f64
        - 1.0;
    let mut lines = Vec::new();
    for (engine, r) in results.iter().filter(|(_, r)| is_point_read(r.benchmark)) {
        let Some(stats) = &r.stats else { continue };
        let color = engine_color(engine);
        let mut measured = Vec::new();
        let mut expected = Vec::new();
        for (level, l) in stats.levels.iter().enumerate() {
            let negatives = l.false_positives() + l.useful;
            if negatives == 0 {
                continue;
            }
            if l.measured_fpr() > 0.0 {
                measured.push((level as f64, l.measured_fpr()));
            }
            let predicted = l.expected_false_positives() / negatives as f64;
            if predicted > 0.0 {
                expected.push((level as f64, predicted));
            }
        }
        if !r.filter_stats_by_level {
            // One row for the whole tree: a horizontal line.
            measured = measured
                .first()
                .map(|&(_, f)| vec![(0.0, f), (max_level, f)])
                .unwrap_or_default();
        }
        let whole = if r.filter_stats_by_level {
            ""
        } else {
            " (whole tree)"
        };
        lines.push(Line {
            label: format!("{engine} measured{whole}"),
            color,
            dashed: false,
            points: measured,
        });
        if !expected.is_empty() {
            lines.push(Line {
                label: format!("{engine} expected"),
                color,
                dashed: true,
                points: expected,
            });
        }
    }
    lines
}

fn extent(lines: &[Line]) -> Extent {
    let all = lines.iter().flat_map(|l| l.points.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    Extent {
        x: (x0, x1),
        y: (y0, y1),
    }
}

fn draw(
    path: &Path,
    workload: &str,
    chart: Chart,
    lines: &[Line],
) -> std::result::Result<(), String> {
    let caption = format!("{workload}: {}", chart.caption());
    let desc = chart.axes();
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    // Log axes are drawn as linear axes of log10 values, labelled with the values themselves.
    let log_label = |v: &f64| format_log(*v);
    let plain = |v: &f64| format!("{v:.0}");
    let whole = |v: &f64| whole_label(*v, "");
    let level = |v: &f64| whole_label(*v, "L");
    let percentile = |v: &f64| percentile_label(*v);
    type Format<'f> = &'f dyn Fn(&f64) -> String;
    let (lines, x_format, y_format): (Vec<Line>, Format<'_>, Format<'_>) = match chart {
        Chart::Latency => (log10_of(lines, true, false), &log_label, &percentile),
        Chart::Throughput => (lines.to_vec(), &whole, &plain),
        Chart::Fpr => (log10_of(lines, false, true), &level, &log_label),
    };
    let e = extent(&lines);
    let (x, y) = match chart {
        Chart::Latency => ((e.x.0 - 0.1)..(e.x.1 + 0.1), 0.0..e.y.1.ceil().max(1.0)),
        Chart::Throughput => (0.0..(e.x.1 + 1.0), 0.0..(e.y.1 * 1.1)),
        Chart::Fpr => ((-0.25)..(e.x.1 + 0.25), (e.y.0 - 0.3)..(e.y.1 + 0.3)),
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(&caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(desc.0)
        .y_desc(desc.1)
        .x_label_formatter(x_format)
        .y_label_formatter(y_format)
        .draw()
        .map_err(|e| e.to_string())?;
    for line in lines.iter().filter(|l| !l.points.is_empty()) {
        let style = line.color.stroke_width(2);
        let color = line.color;
        let series = if line.dashed {
            chart.draw_series(DashedLineSeries::new(line.points.clone(), 8, 5, style))
        } else {
            chart.draw_series(LineSeries::new(line.points.clone(), style))
        };
        series
            .map_err(|e| e.to_string())?
            .label(line.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        // Markers where the points are few (levels), so a one-level line still shows:
        // filled for solid lines, hollow for dashed ones.
        if line.points.len() <= 12 {
            let marker = if line.dashed {
                color.stroke_width(2)
            } else {
                color.filled()
            };
            chart
                .draw_series(line.points.iter().map(|&p| Circle::new(p, 4, marker)))
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// `lines` with x and/or y replaced by their base-10 logarithms (non-positive points dropped).
fn log10_of(lines: &[Line], x: bool, y: bool) -> Vec<Line> {
    lines
        .iter()
        .map(|l| Line {
            label: l.label.clone(),
            color: l.color,
            dashed: l.dashed,
            points: l
                .points
                .iter()
                .filter(|(px, py)| (!x || *px > 0.0) && (!y || *py > 0.0))
                .map(|&(px, py)| {
                    (
                        if x { px.log10() } else { px },
                        if y { py.log10() } else { py },
                    )
                })
                .collect(),
        })
        .collect()
}

/// The label of a log10 axis position: the value to two significant digits (`32`, `320`,
/// `0.063`, `6.3e-4`).
fn format_log(v: f64) -> String {
    let value = 10f64.powf(v);
    let magnitude = value.log10().floor();
    let step = 10f64.powf(magnitude - 1.0);
    let rounded = (value / step).round() * step;
    if (0.001..1_000_000.0).contains(&rounded) {
        let decimals = (1.0 - magnitude).max(0.0) as usize;
        format!("{rounded:.decimals$}")
    } else {
        format!("{rounded:.1e}")
    }
}

/// A label at whole numbers only (`prefix` before it), none between them.
fn whole_label(v: f64, prefix: &str) -> String {
    if (v - v.round()).abs() < 1e-6 && v >= -1e-6 {
        format!("{prefix}{}", v.round() as i64)
    } else {
        String::new()
    }
}

fn percentile_label(y: f64) -> String {
    PERCENTILE_TICKS
        .iter()
        .find(|(t, _)| (t - y).abs() < 1e-9)
        .map_or_else(String::new, |(_, l)| (*l).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis_labels_have_two_significant_digits() {
        assert_eq!(format_log(1.5), "32");
        assert_eq!(format_log(2.0), "100");
        assert_eq!(format_log(2.5), "320");
        assert_eq!(format_log(-1.2), "0.063");
        assert_eq!(format_log(-3.2), "6.3e-4");
        assert_eq!(whole_label(2.0, "L"), "L2");
        assert_eq!(whole_label(2.5, "L"), "");
    }

    #[test]
    fn the_percentile_curve_reaches_the_tail() {
        let mut h = super::super::measure::new_histogram().unwrap();
        for v in 1..=100_000u64 {
            h.record(v * 1000).unwrap();
        }
        let curve = percentile_curve(&h);
        let (median, _) = curve
            .iter()
            .find(|(_, y)| (*y - 0.3).abs() < 1e-9)
            .copied()
            .unwrap();
        // y = 0.3 is q = 1 - 10^-0.3 ≈ 0.5: the median, 50,000 µs.
        assert!((median / 50_000.0 - 1.0).abs() < 0.01, "{median}");
        let (p999, _) = curve
            .iter()
            .find(|(_, y)| (*y - 3.0).abs() < 1e-9)
            .copied()
            .unwrap();
        assert!((p999 / 99_900.0 - 1.0).abs() < 0.01, "{p999}");
    }

    #[test]
    fn charts_are_written_for_each_engine_and_workload() {
        use super::super::args::Benchmark;
        use super::super::measure::{Measured, OpKind, Outcome};
        let mut latency = super::super::measure::new_histogram().unwrap();
        for v in [1_000u64, 2_000, 50_000] {
            latency.record(v).unwrap();
        }
        let measured = Measured {
            totals: Outcome {
                ops: 3,
                ..Outcome::default()
            },
            wall: std::time::Duration::from_secs(3),
            thread_time: std::time::Duration::from_secs(3),
            threads: 1,
            latency: latency.clone(),
            by_kind: vec![(OpKind::Read, latency.clone()), (OpKind::Update, latency)],
            per_second: vec![1, 1, 1],
        };
        let phase = PhaseResult {
            benchmark: Benchmark::YcsbA,
            measured: Some(measured),
            writer_ops: None,
            flush_time: None,
            stats: None,
            shape: None,
            disk_bytes: None,
            hot_hit_rates: None,
            expected_known: true,
            live_keys: 3,
            skipped: None,
            filter_stats_by_level: true,
            checkpoint: None,
            sustained: None,
            rss: None,
            disk_io: None,
        };
        let runs = ["siftdb", "rocksdb"].map(|engine| EngineRun {
            engine: engine.to_string(),
            phases: vec![phase.clone()],
        });
        let dir = tempfile::tempdir().unwrap();
        let written = write_charts(dir.path(), &runs).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["latency-00-ycsba.svg", "throughput-00-ycsba.svg"]);
        let svg = std::fs::read_to_string(&written[0]).unwrap();
        for label in [
            "siftdb read",
            "siftdb update",
            "rocksdb read",
            "rocksdb update",
        ] {
            assert!(svg.contains(label), "{label}");
        }
    }
}
