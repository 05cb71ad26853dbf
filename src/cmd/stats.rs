//! `turnlake stats [--format table|markdown|json] [--plots DIR]`: where credit lives.

use anyhow::Context;
use clap::{Args, ValueEnum};
use comfy_table::Table;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::lake::Lake;
use crate::pipeline::stats::{report, Report};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    Table,
    Markdown,
    Json,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Write credit_by_kind.png and credit_by_turn.png here.
    #[arg(long)]
    pub plots: Option<PathBuf>,
}

/// The report's sections as (title, header, rows) in display form.
fn sections(r: &Report) -> Vec<(String, Vec<&'static str>, Vec<Vec<String>>)> {
    let f2 = |x: f64| format!("{x:.3}");
    let f1 = |x: f64| format!("{x:.1}");
    let e = &r.exposure;
    vec![
        (
            format!("Credit by command kind ({} scored turns)", r.scored_turns),
            vec!["cmd_kind", "turns", "share %", "mean credit", "% earning"],
            r.by_kind
                .iter()
                .map(|k| {
                    vec![
                        k.cmd_kind.clone(),
                        k.turns.to_string(),
                        f1(100.0 * k.share),
                        f2(k.mean_credit),
                        f1(k.pct_earning),
                    ]
                })
                .collect(),
        ),
        (
            "Credit by turn index".into(),
            vec!["t", "turns", "mean credit", "% earning"],
            r.by_turn
                .iter()
                .map(|t| {
                    vec![
                        t.t.to_string(),
                        t.turns.to_string(),
                        f2(t.mean_credit),
                        f1(t.pct_earning),
                    ]
                })
                .collect(),
        ),
        (
            "Exposure bias".into(),
            vec!["measure", "value"],
            vec![
                vec![
                    "turns after a failed observation (%)".into(),
                    f1(100.0 * e.share_after_failure),
                ],
                vec![
                    "% earning after a failure".into(),
                    f1(e.pct_earning_after_failure),
                ],
                vec!["% earning otherwise".into(), f1(e.pct_earning_otherwise)],
                vec![
                    "% earning, all scored turns (baseline)".into(),
                    f1(e.pct_earning_baseline),
                ],
                vec![
                    "relative cost of one bad command (%)".into(),
                    f1(100.0 * e.relative_cost),
                ],
            ],
        ),
        (
            "Credit by tag".into(),
            vec!["tag", "credit", "share %"],
            r.by_tag
                .iter()
                .map(|t| vec![t.tag.clone(), f1(t.credit), f1(100.0 * t.share)])
                .collect(),
        ),
        (
            "Citations".into(),
            vec!["measure", "value"],
            vec![
                vec![
                    "explanations that cite an output (%)".into(),
                    f1(100.0 * r.share_citing),
                ],
                vec![
                    "yes-answers citing nothing (%)".into(),
                    f1(100.0 * r.share_yes_uncited),
                ],
            ],
        ),
    ]
}

pub fn render<W: Write>(mut w: W, r: &Report, format: ReportFormat) -> std::io::Result<()> {
    match format {
        ReportFormat::Json => writeln!(w, "{}", serde_json::to_string_pretty(r)?),
        ReportFormat::Table => {
            for (title, header, rows) in sections(r) {
                let mut t = Table::new();
                t.set_header(header);
                for row in rows {
                    t.add_row(row);
                }
                writeln!(w, "{title}\n{t}\n")?;
            }
            Ok(())
        }
        ReportFormat::Markdown => {
            for (title, header, rows) in sections(r) {
                writeln!(
                    w,
                    "## {title}\n\n| {} |\n|{}|",
                    header.join(" | "),
                    header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
                )?;
                for row in rows {
                    writeln!(w, "| {} |", row.join(" | "))?;
                }
                writeln!(w)?;
            }
            Ok(())
        }
    }
}

pub async fn run(lake: &str, args: StatsArgs) -> anyhow::Result<ExitCode> {
    let lake = Lake::open(lake)?;
    let r = report(&lake).await?;
    render(std::io::stdout().lock(), &r, args.format)?;
    if let Some(dir) = &args.plots {
        write_plots(&r, dir)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn write_plots(r: &Report, dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let kind = dir.join("credit_by_kind.png");
    let turn = dir.join("credit_by_turn.png");
    crate::plot::credit_by_kind(r, &kind)
        .map_err(|e| anyhow::anyhow!("plotting {}: {e}", kind.display()))?;
    crate::plot::credit_by_turn(r, &turn)
        .map_err(|e| anyhow::anyhow!("plotting {}: {e}", turn.display()))?;
    eprintln!("plots: {} and {}", kind.display(), turn.display());
    Ok(())
}
