//! The DET plots the evaluations write, as PNG or SVG (chosen by the file's extension), drawn
//! with plotters: [`DetPlot`] holds one or more [`System`]s (genuine and impostor distances, the
//! shipped threshold), [`write_det`] draws them. The library computes the curve
//! (`vouch_bio::det_curve`); only the tool draws pictures.
//!
//! Both axes are normal-deviate (probit) scales, as ISO/IEC 19795-1 and NIST draw DET curves: a
//! rate `r` sits at `Φ⁻¹(r)`, so two normal score distributions give a straight line. Ticks are
//! labelled in %; rates of 0 lie beyond the axis (the curve leaves the frame there), while the EER
//! and threshold markers are kept on the frame's edge. The legend sits under the plot, so it never
//! hides a curve.
//!
//! A PNG's text is drawn with DejaVu Sans read at run time (`crate::eval::plot_png`); a PNG cannot be
//! drawn without it. An SVG names the font family and lets the viewer draw the text, so it needs
//! no font (its layout estimates text widths).

use std::ops::Range;
use std::path::Path;

use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use vouch_bio::{det_curve, metrics};

use crate::eval::plot_png::PngBackend;

/// The font family an SVG names (the PNG draws DejaVu Sans).
const FONT: &str = "sans-serif";

const WIDTH: u32 = 900;
/// The title band above the chart.
const TITLE_HEIGHT: u32 = 56;
/// The chart: plotting area, tick labels and axis descriptions.
const CHART_HEIGHT: u32 = 760;
/// One legend row under the chart.
const LEGEND_ROW: u32 = 26;

/// The curves' colours (Okabe and Ito's palette, told apart by colour-blind readers too).
const COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
];

/// One system (or data set) on a DET plot.
pub(crate) struct System {
    /// The legend's name for it.
    pub label: String,
    /// Genuine (same person) distances; `+inf` where a sample had no template.
    pub genuine: Vec<f64>,
    /// Impostor distances.
    pub impostor: Vec<f64>,
    /// The operating threshold the engine ships for this model, on the same distance, and how
    /// the legend writes it.
    pub threshold: Option<(f64, String)>,
    /// The EER's 95 % interval, when the report has one.
    pub eer_interval: Option<(f64, f64)>,
}

/// A DET plot: a title and the systems drawn on it.
pub(crate) struct DetPlot {
    pub title: String,
    pub systems: Vec<System>,
}

/// What a system's legend row and markers say.
struct Drawn {
    label: String,
    colour: RGBColor,
    /// The curve in normal deviates, one point per threshold.
    points: Vec<(f64, f64)>,
    eer: Option<f64>,
    eer_interval: Option<(f64, f64)>,
    /// The shipped threshold as written, with its FMR and FNMR.
    operating: Option<(String, f64, f64)>,
    genuine: usize,
    impostor: usize,
}

/// Writes `plot` to `path`: SVG for `.svg`, PNG otherwise.
pub(crate) fn write_det(path: &Path, plot: &DetPlot) -> Result<(), String> {
    let svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    let bytes = if svg {
        det_svg(plot)?.into_bytes()
    } else {
        det_png(plot)?
    };
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The plot as SVG text.
pub(crate) fn det_svg(plot: &DetPlot) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height(plot))).into_drawing_area();
        draw(&root, plot)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The plot as PNG bytes.
pub(crate) fn det_png(plot: &DetPlot) -> Result<Vec<u8>, String> {
    let size = (WIDTH, height(plot));
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = PngBackend::new(&mut pixels, size)?.into_drawing_area();
        draw(&root, plot)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let image = ::image::RgbImage::from_raw(size.0, size.1, pixels).ok_or("plot buffer size")?;
    let mut png = Vec::new();
    ::image::DynamicImage::ImageRgb8(image)
        .write_to(
            &mut std::io::Cursor::new(&mut png),
            ::image::ImageFormat::Png,
        )
        .map_err(|e| e.to_string())?;
    Ok(png)
}

fn height(plot: &DetPlot) -> u32 {
    TITLE_HEIGHT + CHART_HEIGHT + LEGEND_ROW * legend_rows(plot) + 16
}

/// Legend rows: one per system on a plot of one, two per system on a comparison (its counts and
/// threshold on the second), then one per kind of marker.
fn legend_rows(plot: &DetPlot) -> u32 {
    let markers = 1 + u32::from(plot.systems.iter().any(|s| s.threshold.is_some()));
    let per_system = if plot.systems.len() == 1 { 1 } else { 2 };
    plot.systems.len() as u32 * per_system + markers
}

/// The normal deviate of `p` (the inverse of the standard normal distribution function), by
/// Acklam's rational approximation (relative error below 1.2e-9), for `0 < p < 1`.
pub(crate) fn probit(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A rate's place on the axes; 0 and 1 go far beyond any axis.
fn deviate(rate: f64) -> f64 {
    probit(rate.clamp(1e-9, 1.0 - 1e-9))
}

/// Rates that may get a grid line, and the order in which they earn a label (0 first).
const TICKS: [(f64, u8); 24] = [
    (1e-5, 0),
    (2e-5, 3),
    (5e-5, 2),
    (1e-4, 0),
    (2e-4, 3),
    (5e-4, 2),
    (1e-3, 0),
    (2e-3, 3),
    (5e-3, 2),
    (0.01, 0),
    (0.02, 2),
    (0.05, 0),
    (0.1, 1),
    (0.2, 0),
    (0.3, 3),
    (0.4, 2),
    (0.5, 0),
    (0.6, 3),
    (0.7, 3),
    (0.8, 1),
    (0.9, 2),
    (0.95, 1),
    (0.98, 3),
    (0.99, 2),
];

/// A tick's label, in %: 0.001, 0.01, 0.1, 0.5, 1, 5, 20, 50.
fn percent_label(rate: f64) -> String {
    let percent = rate * 100.0;
    if percent >= 1.0 {
        format!("{percent:.0}")
    } else {
        let text = format!("{percent:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A rate as the legend writes it.
fn percent(rate: f64) -> String {
    format!("{:.2} %", rate * 100.0)
}

/// A normal-deviate axis from rate `low` to `high`: grid lines at every [`TICKS`] rate inside,
/// labels at those far enough apart.
#[derive(Clone)]
struct ProbitAxis {
    low: f64,
    high: f64,
    /// (deviate, rate) of the labelled ticks.
    labelled: Vec<(f64, f64)>,
    grid: Vec<f64>,
}

impl ProbitAxis {
    fn new(low: f64, high: f64) -> Self {
        let (low_z, high_z) = (probit(low), probit(high));
        let inside: Vec<(f64, u8)> = TICKS
            .iter()
            .copied()
            .filter(|&(rate, _)| rate >= low * 0.999 && rate <= high * 1.001)
            .collect();
        // The axis' ends, then labels at least a twelfth of the axis apart, rounder rates first.
        let gap = (high_z - low_z) / 12.0;
        let mut labelled: Vec<(f64, f64)> = vec![(low_z, low), (high_z, high)];
        for rank in 0..=3 {
            for &(rate, tick_rank) in &inside {
                let z = probit(rate);
                if tick_rank == rank && labelled.iter().all(|&(other, _)| (z - other).abs() >= gap)
                {
                    labelled.push((z, rate));
                }
            }
        }
        labelled.sort_by(|a, b| a.0.total_cmp(&b.0));
        Self {
            low: low_z,
            high: high_z,
            grid: inside.iter().map(|&(rate, _)| probit(rate)).collect(),
            labelled,
        }
    }
}

impl Ranged for ProbitAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.low) / (self.high - self.low);
        (f64::from(limit.0) + t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.max_num_points() == 0 {
            return Vec::new();
        }
        match hint.weight() {
            KeyPointWeight::Bold => self.labelled.iter().map(|&(z, _)| z).collect(),
            KeyPointWeight::Any => self.grid.clone(),
        }
    }

    fn range(&self) -> Range<f64> {
        self.low..self.high
    }
}

impl ValueFormatter<f64> for ProbitAxis {
    fn format_ext(&self, value: &f64) -> String {
        self.labelled
            .iter()
            .min_by(|a, b| (a.0 - value).abs().total_cmp(&(b.0 - value).abs()))
            .map(|&(_, rate)| percent_label(rate))
            .unwrap_or_default()
    }
}

/// The rates shown: from the largest tick that resolves one error in the larger count (or 1e-5)
/// up to 50 % (95 % when a system's EER is above 30 %).
fn axis_range(drawn: &[Drawn]) -> (f64, f64) {
    let count = drawn
        .iter()
        .map(|d| d.genuine.max(d.impostor))
        .max()
        .unwrap_or(1)
        .max(1);
    let resolution = (0.5 / count as f64).min(0.01);
    let low = TICKS
        .iter()
        .map(|&(rate, _)| rate)
        .filter(|&rate| rate <= resolution)
        .fold(1e-5, f64::max);
    let worst = drawn.iter().filter_map(|d| d.eer).fold(0.0, f64::max);
    (low, if worst > 0.3 { 0.95 } else { 0.5 })
}

/// The parts of the segment a-b inside the box (Liang and Barsky).
fn clip(
    a: (f64, f64),
    b: (f64, f64),
    x: (f64, f64),
    y: (f64, f64),
) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - x.0),
        (dx, x.1 - a.0),
        (-dy, a.1 - y.0),
        (dy, y.1 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then_some((
        (a.0 + t0 * dx, a.1 + t0 * dy),
        (a.0 + t1 * dx, a.1 + t1 * dy),
    ))
}

/// The curve's runs inside the box, each a polyline.
fn clipped_runs(points: &[(f64, f64)], x: (f64, f64), y: (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    for pair in points.windows(2) {
        let Some((start, end)) = clip(pair[0], pair[1], x, y) else {
            continue;
        };
        match runs.last_mut() {
            Some(run) if run.last() == Some(&start) => run.push(end),
            _ => runs.push(vec![start, end]),
        }
    }
    runs
}

fn prepare(plot: &DetPlot) -> Vec<Drawn> {
    plot.systems
        .iter()
        .enumerate()
        .map(|(index, system)| {
            let m = metrics(&system.genuine, &system.impostor);
            let points = det_curve(&system.genuine, &system.impostor)
                .iter()
                .map(|p| (deviate(p.fmr), deviate(p.fnmr)))
                .collect();
            let operating = system.threshold.as_ref().map(|(t, name)| {
                let t = *t;
                let share = |scores: &[f64], hit: &dyn Fn(f64) -> bool| {
                    scores.iter().filter(|&&s| hit(s)).count() as f64 / scores.len().max(1) as f64
                };
                (
                    name.clone(),
                    share(&system.impostor, &|s| s <= t),
                    share(&system.genuine, &|s| s > t),
                )
            });
            Drawn {
                label: system.label.clone(),
                colour: COLOURS[index % COLOURS.len()],
                points,
                eer: m.eer,
                eer_interval: system.eer_interval,
                operating,
                genuine: m.genuine,
                impostor: m.impostor,
            }
        })
        .collect()
}

/// A text's width in pixels: measured in a PNG, estimated in an SVG (whose viewer draws it).
fn text_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
) -> i32 {
    area.estimate_text_size(text, style)
        .map_or(0, |(width, _)| width as i32)
}

/// Draws the whole plot on `root`: the title, the chart with its curves and markers, the legend.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &DetPlot) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(error)?;
    let drawn = prepare(plot);
    let (low, high) = axis_range(&drawn);
    let (x_axis, y_axis) = (ProbitAxis::new(low, high), ProbitAxis::new(low, high));
    let title_style = TextStyle::from((FONT, 22).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(
        plot.title.clone(),
        (WIDTH as i32 / 2, TITLE_HEIGHT as i32 / 2 + 4),
        title_style,
    ))
    .map_err(error)?;
    let (_, below_title) = root.split_vertically(TITLE_HEIGHT);
    let (chart_area, legend_area) = below_title.split_vertically(CHART_HEIGHT);
    let mut chart = ChartBuilder::on(&chart_area)
        .margin_left(16)
        .margin_right(36)
        .margin_top(8)
        .margin_bottom(8)
        .x_label_area_size(64)
        .y_label_area_size(84)
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(|e| e.to_string())?;
    draw_curves(&mut chart, &drawn)?;
    let plotting = chart.plotting_area();
    draw_markers(root, plotting, &drawn)?;
    let left = plotting.get_pixel_range().0.start - legend_area.get_base_pixel().0;
    draw_legend(&legend_area, left, &drawn)
}

/// The chart's mesh, the FMR = FNMR diagonal and each system's curve (clipped to the frame).
fn draw_curves<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<ProbitAxis, ProbitAxis>>,
    drawn: &[Drawn],
) -> Result<(), String> {
    let (z_low, z_high) = {
        let range = chart.x_range();
        (range.start, range.end)
    };
    chart
        .configure_mesh()
        .x_desc("False match rate, FMR (%)")
        .y_desc("False non-match rate, FNMR (%)")
        .axis_desc_style((FONT, 19))
        .label_style((FONT, 16))
        .bold_line_style(RGBColor(200, 200, 200))
        .light_line_style(RGBColor(236, 236, 236))
        .max_light_lines(40)
        .draw()
        .map_err(|e| e.to_string())?;
    // FMR = FNMR: where the EER is read.
    chart
        .draw_series(std::iter::once(DashedPathElement::new(
            vec![(z_low, z_low), (z_high, z_high)],
            6,
            5,
            RGBColor(150, 150, 150),
        )))
        .map_err(|e| e.to_string())?;
    for system in drawn {
        let runs = clipped_runs(&system.points, (z_low, z_high), (z_low, z_high));
        chart
            .draw_series(
                runs.into_iter()
                    .map(|run| PathElement::new(run, system.colour.stroke_width(3))),
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Each system's EER point and shipped threshold, with their labels (with one system), on the
/// frame's edge when a rate is beyond it (e.g. no false match at all).
fn draw_markers<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    plotting: &DrawingArea<DB, Cartesian2d<ProbitAxis, ProbitAxis>>,
    drawn: &[Drawn],
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let (z_low, z_high) = {
        let range = plotting.get_x_range();
        (range.start, range.end)
    };
    let inside = |rate: f64| deviate(rate).clamp(z_low, z_high);
    let label_style = TextStyle::from((FONT, 16).into_font()).color(&BLACK);
    let (x_pixels, y_pixels) = plotting.get_pixel_range();
    let single = drawn.len() == 1;
    for system in drawn {
        if let Some(eer) = system.eer {
            let at = (inside(eer), inside(eer));
            plotting
                .draw(&Circle::new(at, 7, system.colour.filled()))
                .map_err(error)?;
            plotting
                .draw(&Circle::new(at, 7, BLACK.stroke_width(1)))
                .map_err(error)?;
            let text = if eer > 0.0 {
                format!("EER {}", percent(eer))
            } else {
                // The whole curve then lies beyond the axes.
                "EER 0: no error at some threshold (the curve lies on the axes)".to_owned()
            };
            let pixel = plotting.map_coordinate(&at);
            // Up and to the right of the point: away from a falling curve.
            let (mut dx, mut dy) = (12, -30);
            let width = text_width(root, &text, &label_style);
            if pixel.0 + dx + width + 6 > x_pixels.end {
                dx = -12 - width;
            }
            if pixel.1 + dy < y_pixels.start {
                dy = 12;
            }
            label(root, pixel, (dx, dy), &text, width, &label_style)?;
        }
        if let Some((threshold, fmr, fnmr)) = &system.operating {
            let (fmr, fnmr) = (*fmr, *fnmr);
            let at = (inside(fmr), inside(fnmr));
            // plotters fills a triangle marker whatever the style: no outline over it.
            plotting
                .draw(&TriangleMarker::new(at, 10, system.colour.filled()))
                .map_err(error)?;
            if single {
                let text = format!(
                    "shipped threshold {threshold}: FMR {}, FNMR {}",
                    percent(fmr),
                    percent(fnmr)
                );
                let width = text_width(root, &text, &label_style);
                let pixel = plotting.map_coordinate(&at);
                // Below and to the right: under a curve that falls from the upper left.
                let (mut dx, mut dy) = (14, 14);
                if pixel.0 + dx + width + 6 > x_pixels.end {
                    dx = -14 - width;
                }
                if pixel.1 + dy + 26 > y_pixels.end {
                    dy = -36;
                }
                label(root, pixel, (dx, dy), &text, width, &label_style)?;
            }
        }
    }
    Ok(())
}

/// The legend, one row per system (two with several: the second with the trial counts and the
/// shipped threshold), then what the markers mean; `left` is the chart frame's left edge.
fn draw_legend<DB: DrawingBackend>(
    legend_area: &DrawingArea<DB, Shift>,
    left: i32,
    drawn: &[Drawn],
) -> Result<(), String> {
    let error = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let single = drawn.len() == 1;
    let row_style = TextStyle::from((FONT, 17).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let row_y = |row: usize| (row as i32) * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2 + 4;
    let mut row = 0;
    for system in drawn {
        let y = row_y(row);
        legend_area
            .draw(&PathElement::new(
                vec![(left, y), (left + 36, y)],
                system.colour.stroke_width(4),
            ))
            .map_err(error)?;
        let mut text = format!(
            "{}: EER {}",
            system.label,
            system.eer.map_or("n/a".to_owned(), percent)
        );
        if let Some((low, high)) = system.eer_interval {
            text.push_str(&format!(
                " (95 % CI {:.2}-{:.2} %)",
                low * 100.0,
                high * 100.0
            ));
        }
        legend_area
            .draw(&Text::new(text, (left + 48, y), row_style.clone()))
            .map_err(error)?;
        row += 1;
        if !single {
            let mut detail = format!("{} genuine, {} impostor", system.genuine, system.impostor);
            if let Some((threshold, fmr, fnmr)) = &system.operating {
                detail.push_str(&format!(
                    "; shipped threshold {threshold}: FMR {}, FNMR {}",
                    percent(*fmr),
                    percent(*fnmr)
                ));
            }
            legend_area
                .draw(&Text::new(
                    detail,
                    (left + 48, row_y(row)),
                    row_style.clone(),
                ))
                .map_err(error)?;
            row += 1;
        }
    }
    let y = row_y(row);
    legend_area
        .draw(&Circle::new((left + 18, y), 7, BLACK.filled()))
        .map_err(error)?;
    legend_area
        .draw(&Text::new(
            "EER: where FMR = FNMR (the dashed diagonal)",
            (left + 48, y),
            row_style.clone(),
        ))
        .map_err(error)?;
    if drawn.iter().any(|d| d.operating.is_some()) {
        row += 1;
        let y = row_y(row);
        legend_area
            .draw(&TriangleMarker::new((left + 18, y), 9, BLACK.filled()))
            .map_err(error)?;
        legend_area
            .draw(&Text::new(
                "the engine's shipped threshold (distance); a zero rate sits on the axis",
                (left + 48, y),
                row_style,
            ))
            .map_err(error)?;
    }
    Ok(())
}

/// A text on a white box, `offset` pixels from the backend pixel `at`.
fn label<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    offset: (i32, i32),
    text: &str,
    width: i32,
    style: &TextStyle,
) -> Result<(), String> {
    let (x, y) = (at.0 + offset.0, at.1 + offset.1);
    root.draw(&Rectangle::new(
        [(x - 4, y - 3), (x + width + 4, y + 21)],
        WHITE.mix(0.85).filled(),
    ))
    .map_err(|e| e.to_string())?;
    root.draw(&Text::new(text.to_owned(), (x, y), style.clone()))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> DetPlot {
        let impostor: Vec<f64> = (0..300).map(|i| 0.2 + f64::from(i) * 0.001).collect();
        let genuine = vec![0.19, 0.2015, 0.2025, 0.5];
        DetPlot {
            title: "DET: example".into(),
            systems: vec![System {
                label: "example".into(),
                genuine,
                impostor,
                threshold: Some((0.2, "0.2".into())),
                eer_interval: Some((0.0, 0.3)),
            }],
        }
    }

    #[test]
    fn probit_is_the_inverse_normal() {
        assert!(probit(0.5).abs() < 1e-9);
        assert!((probit(0.975) - 1.959_963_985).abs() < 1e-6);
        assert!((probit(1e-3) + 3.090_232_306).abs() < 1e-6);
        assert!((probit(0.2) + probit(0.8)).abs() < 1e-9);
    }

    #[test]
    fn tick_labels_are_percentages() {
        assert_eq!(percent_label(1e-4), "0.01");
        assert_eq!(percent_label(0.001), "0.1");
        assert_eq!(percent_label(0.05), "5");
        assert_eq!(percent_label(0.2), "20");
        let axis = ProbitAxis::new(1e-3, 0.5);
        let labels: Vec<String> = axis
            .labelled
            .iter()
            .map(|&(_, r)| percent_label(r))
            .collect();
        for wanted in ["0.1", "1", "5", "20", "50"] {
            assert!(labels.iter().any(|l| l == wanted), "{labels:?}");
        }
    }

    #[test]
    fn clipping_keeps_what_is_inside() {
        let box_ = (-1.0, 1.0);
        assert_eq!(
            clip((-2.0, 0.0), (2.0, 0.0), box_, box_),
            Some(((-1.0, 0.0), (1.0, 0.0)))
        );
        assert_eq!(clip((-2.0, 2.0), (-1.5, 3.0), box_, box_), None);
    }

    #[test]
    fn the_svg_has_labels_and_legend() {
        let svg = det_svg(&example()).expect("svg");
        assert!(svg.contains("False match rate, FMR (%)"));
        assert!(svg.contains("False non-match rate, FNMR (%)"));
        assert!(svg.contains("DET: example"));
        assert!(svg.contains("example: EER"));
    }

    #[test]
    fn the_png_decodes_and_is_drawn() {
        if crate::eval::plot_png::load_font().is_err() {
            eprintln!("skipped: no font");
            return;
        }
        let png = det_png(&example()).expect("png");
        let decoded = image::load_from_memory(&png).expect("decodes").to_rgb8();
        assert_eq!(decoded.width(), WIDTH);
        // The curve's colour is there.
        let blue = COLOURS[0].rgb();
        assert!(decoded.pixels().any(|p| p.0 == [blue.0, blue.1, blue.2]));
    }
}
