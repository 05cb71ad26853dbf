//! Plots of the credit report, as PNG files or SVG text for the web app
//! (plotters, with the font shipped in `data/fonts` so nothing depends on
//! the machine's fonts).

use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

use crate::pipeline::reproduction::reference;
use crate::pipeline::stats::Report;

/// The reference's mean credit for a command kind, where it publishes one.
fn reference_kind_credit(kind: &str) -> Option<f64> {
    match kind {
        "cat -n" => reference("stats.cat_n.mean_credit"),
        "find/ls" => reference("stats.find_ls.mean_credit"),
        _ => None,
    }
}

/// The reference's mean credit by turn index, where it publishes one.
fn reference_turn_credit() -> Vec<(i64, f64)> {
    [
        (1, "stats.turn1.mean_credit"),
        (15, "stats.turn15.mean_credit"),
    ]
    .into_iter()
    .filter_map(|(t, key)| reference(key).map(|v| (t, v)))
    .collect()
}

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../data/fonts/DejaVuSans.ttf");
        // The bytes are a valid TrueType font shipped with the crate.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
    });
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// The size every plot is drawn at.
const SIZE: (u32, u32) = (900, 520);

/// Draw the legend box and write the image.
fn finish<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}

/// A plot of the credit report.
#[derive(Debug, Clone, Copy)]
pub enum CreditPlot {
    ByKind,
    ByTurn,
    Exposure,
}

impl CreditPlot {
    fn draw<DB: DrawingBackend>(
        self,
        report: &Report,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> PlotResult
    where
        DB::ErrorType: 'static,
    {
        register_font();
        root.fill(&WHITE)?;
        match self {
            CreditPlot::ByKind => draw_credit_by_kind(report, root),
            CreditPlot::ByTurn => draw_credit_by_turn(report, root),
            CreditPlot::Exposure => draw_exposure(report, root),
        }
    }

    /// The plot as a PNG file at `path`.
    pub fn png(self, report: &Report, path: &Path) -> PlotResult {
        self.draw(report, &BitMapBackend::new(path, SIZE).into_drawing_area())
    }

    /// The plot as SVG text.
    pub fn svg(self, report: &Report) -> Result<String, Box<dyn std::error::Error>> {
        let mut out = String::new();
        self.draw(
            report,
            &SVGBackend::with_string(&mut out, SIZE).into_drawing_area(),
        )?;
        Ok(out)
    }
}

/// One bar of a bar chart: its label, height, the note above it, and the
/// reference's figure where it publishes one.
struct Bar {
    label: String,
    value: f64,
    note: String,
    reference: Option<f64>,
}

/// Bars with their notes; the reference's figure is a black mark across the
/// bars it publishes.
fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    (caption, y_desc): (&str, &str),
    bars: &[Bar],
    reference_text: &dyn Fn(f64) -> String,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let max = bars
        .iter()
        .map(|b| b.value.max(b.reference.unwrap_or(0.0)))
        .fold(0.0f64, f64::max)
        .max(0.1)
        * 1.15;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0..bars.len().saturating_sub(1)).into_segmented(), 0.0..max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_desc)
        .x_labels(bars.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => bars.get(*i).map(|b| b.label.clone()).unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), b.value),
            ],
            BLUE.mix(0.6).filled(),
        );
        bar.set_margin(0, 0, 8, 8);
        bar
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        Text::new(
            b.note.clone(),
            (SegmentValue::CenterOf(i), b.value + max * 0.02),
            ("sans-serif", 13),
        )
    }))?;
    let marks: Vec<(usize, f64)> = bars
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.reference.map(|r| (i, r)))
        .collect();
    chart
        .draw_series(marks.iter().map(|(i, r)| {
            PathElement::new(
                vec![
                    (SegmentValue::Exact(*i), *r),
                    (SegmentValue::Exact(i + 1), *r),
                ],
                BLACK.stroke_width(3),
            )
        }))?
        .label("reference")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(3)));
    chart.draw_series(marks.iter().map(|(i, r)| {
        Text::new(
            reference_text(*r),
            (SegmentValue::Exact(*i), r - max * 0.05),
            ("sans-serif", 12),
        )
    }))?;
    finish(&mut chart, root)
}

/// Mean credit by command kind, bars labelled with % earning.
fn draw_credit_by_kind<DB: DrawingBackend>(
    report: &Report,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let bars: Vec<Bar> = report
        .by_kind
        .iter()
        .map(|k| Bar {
            label: k.cmd_kind.clone(),
            value: k.mean_credit,
            note: format!("{:.0}% earn", k.pct_earning),
            reference: reference_kind_credit(&k.cmd_kind),
        })
        .collect();
    draw_bars(
        root,
        ("Mean judge credit per turn, by command kind", "mean credit"),
        &bars,
        &|r| format!("ref {r:.3}"),
    )
}

/// Exposure bias: how often a turn earns credit right after a failed
/// observation, otherwise, and over all scored turns.
fn draw_exposure<DB: DrawingBackend>(
    report: &Report,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let e = &report.exposure;
    let bar = |label: &str, value: f64, reference: Option<f64>| Bar {
        label: label.into(),
        value,
        note: format!("{value:.1}%"),
        reference,
    };
    let bars = [
        bar(
            "after a failure",
            e.pct_earning_after_failure,
            reference("stats.earning_after_failure"),
        ),
        bar("otherwise", e.pct_earning_otherwise, None),
        bar(
            "all scored turns",
            e.pct_earning_baseline,
            reference("stats.earning_all"),
        ),
    ];
    draw_bars(
        root,
        ("Exposure bias: % of turns earning credit", "% earning"),
        &bars,
        &|r| format!("ref {r:.1}%"),
    )
}

/// Mean credit and % earning by turn index.
fn draw_credit_by_turn<DB: DrawingBackend>(
    report: &Report,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let turns = &report.by_turn;
    let refs = reference_turn_credit();
    let max = turns
        .iter()
        .map(|t| t.mean_credit)
        .chain(refs.iter().map(|(_, v)| *v))
        .fold(0.0f64, f64::max)
        .max(0.1)
        * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption("Mean judge credit by turn index", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(60)
        .build_cartesian_2d(1i64..16i64, 0.0..max)?
        .set_secondary_coord(1i64..16i64, 0.0..100.0);
    chart
        .configure_mesh()
        .x_desc("turn index t")
        .y_desc("mean credit")
        .label_style(("sans-serif", 14))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("% of turns earning")
        .label_style(("sans-serif", 14))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            turns.iter().map(|t| (t.t, t.mean_credit)),
            BLUE.stroke_width(3),
        ))?
        .label("mean credit")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(3)));
    chart
        .draw_secondary_series(LineSeries::new(
            turns.iter().map(|t| (t.t, t.pct_earning)),
            RED.stroke_width(2),
        ))?
        .label("% earning (right axis)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(
            refs.iter()
                .map(|(t, v)| Circle::new((*t, *v), 6, BLACK.filled())),
        )?
        .label("reference mean credit")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.filled()));
    finish(&mut chart, root)
}

/// Series of (step, loss) drawn as lines, each with its label.
pub type LossSeries<'a> = (&'a str, Vec<(i64, f64)>);

/// Training loss per step and held-out loss per mix.
pub fn loss_curve(series: &[LossSeries], path: &Path) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let points = series.iter().flat_map(|(_, s)| s.iter());
    let (mut max_step, mut max_loss, mut min_loss) = (1i64, 0.1f64, f64::MAX);
    for (s, l) in points {
        max_step = max_step.max(*s);
        max_loss = max_loss.max(*l);
        min_loss = min_loss.min(*l);
    }
    let min_loss = if min_loss == f64::MAX {
        0.0
    } else {
        (min_loss * 0.9).max(0.0)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption("Loss", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0i64..max_step + 1, min_loss..max_loss * 1.05)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("cross-entropy (nats per trained token)")
        .label_style(("sans-serif", 14))
        .draw()?;
    for (i, (label, s)) in series.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(s.iter().copied(), colour.stroke_width(2)))?
            .label(*label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    finish(&mut chart, &root)
}

/// Held-out dev perplexity of each candidate mix: one dot per seed and a
/// bar from the lowest to the highest (the spread), ranked left to right.
pub fn sweep(candidates: &[(String, Vec<f64>)], path: &Path) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let all: Vec<f64> = candidates
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let lo = all.iter().copied().fold(f64::MAX, f64::min);
    let hi = all.iter().copied().fold(f64::MIN, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.01);
    let n = candidates.len() as i64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Held-out dev perplexity by candidate mix (best first)",
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(-1i64..n, (lo - pad)..(hi + pad))?;
    let names: Vec<String> = candidates.iter().map(|(c, _)| c.clone()).collect();
    chart
        .configure_mesh()
        .x_labels(candidates.len() + 2)
        .x_label_formatter(&|i| names.get(*i as usize).cloned().unwrap_or_default())
        .y_desc("perplexity")
        .label_style(("sans-serif", 12))
        .draw()?;
    chart
        .draw_series(candidates.iter().enumerate().map(|(i, (_, v))| {
            let lo = v.iter().copied().fold(f64::MAX, f64::min);
            let hi = v.iter().copied().fold(f64::MIN, f64::max);
            PathElement::new(
                vec![(i as i64, lo), (i as i64, hi)],
                BLUE.mix(0.4).stroke_width(3),
            )
        }))?
        .label("spread over seeds")
        .legend(|(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], BLUE.mix(0.4).stroke_width(3))
        });
    chart
        .draw_series(candidates.iter().enumerate().flat_map(|(i, (_, v))| {
            v.iter()
                .map(move |l| Circle::new((i as i64, *l), 5, BLUE.filled()))
        }))?
        .label("one seed")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, BLUE.filled()));
    finish(&mut chart, &root)
}
