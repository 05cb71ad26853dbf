//! `turnlake stats [--format table|markdown|json] [--plots DIR]`: where credit lives.

use anyhow::Context;
use clap::{Args, ValueEnum};
use comfy_table::Table;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
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
    /// Write credit_by_kind.png, credit_by_turn.png and exposure_bias.png here.
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// A synthetic corpus's truth.json: its planted figures get a column of their own.
    #[arg(long)]
    pub truth: Option<PathBuf>,
}

/// Put a synthetic corpus's planted figures (`realized` in truth.json) beside the lake's.
pub fn plant_truth(r: &mut Report, truth: &serde_json::Value) {
    let fig = &truth["realized"];
    let get = |ptr: &str| fig.pointer(ptr).and_then(serde_json::Value::as_f64);
    let t = &mut r.reproduction;
    for (label, key) in [("cat -n", "cat_n"), ("find/ls", "find_ls")] {
        t.plant(
            &format!("stats.{key}.mean_credit"),
            get(&format!(
                "/credit_by_kind/{}/mean_credit",
                label.replace('/', "~1")
            )),
        );
        t.plant(
            &format!("stats.{key}.pct_earning"),
            get(&format!(
                "/credit_by_kind/{}/pct_earning",
                label.replace('/', "~1")
            )),
        );
    }
    t.plant(
        "stats.turn1.mean_credit",
        get("/credit_by_turn/1/mean_credit"),
    );
    t.plant(
        "stats.turn15.mean_credit",
        get("/credit_by_turn/15/mean_credit"),
    );
    t.plant(
        "stats.failed_own",
        get("/failed_own_share").map(|v| 100.0 * v),
    );
    t.plant(
        "stats.earning_after_failure",
        get("/pct_earning_after_failure"),
    );
    t.plant("stats.earning_all", get("/pct_earning_baseline"));
    let counts = &truth["counts"];
    t.plant("corpus.samples", counts["samples"].as_f64());
    t.plant("corpus.sides", counts["sides"].as_f64());
    t.plant("corpus.albedo_turns", counts["albedo_turns"].as_f64());
    t.plant(
        "corpus.mini_coder.trajectories",
        counts["mini_coder_trajectories"].as_f64(),
    );
    if let (Some(turns), Some(n)) = (
        counts["mini_coder_turns"].as_f64(),
        counts["mini_coder_trajectories"]
            .as_f64()
            .filter(|n| *n > 0.0),
    ) {
        t.plant("corpus.mini_coder.mean_turns", Some(turns / n));
    }
}

/// Read a truth.json written by `turnlake synth`.
pub fn read_truth(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

pub fn render<W: Write>(mut w: W, r: &Report, format: ReportFormat) -> std::io::Result<()> {
    match format {
        ReportFormat::Json => writeln!(w, "{}", serde_json::to_string_pretty(r)?),
        ReportFormat::Table => {
            for (title, header, rows) in r.sections() {
                let mut t = Table::new();
                t.set_header(header);
                for row in rows {
                    t.add_row(row);
                }
                writeln!(w, "{title}\n{t}\n")?;
            }
            r.reproduction.render_table(w)
        }
        ReportFormat::Markdown => {
            for (title, header, rows) in r.sections() {
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
            r.reproduction.render_markdown(w)
        }
    }
}

pub async fn run(lake: &LakeArg, args: StatsArgs) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let mut r = report(&lake).await?;
    if let Some(path) = &args.truth {
        plant_truth(&mut r, &read_truth(path)?);
    }
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
    crate::plot::CreditPlot::ByKind
        .png(r, &kind)
        .map_err(|e| anyhow::anyhow!("plotting {}: {e}", kind.display()))?;
    crate::plot::CreditPlot::ByTurn
        .png(r, &turn)
        .map_err(|e| anyhow::anyhow!("plotting {}: {e}", turn.display()))?;
    let exposure = dir.join("exposure_bias.png");
    crate::plot::CreditPlot::Exposure
        .png(r, &exposure)
        .map_err(|e| anyhow::anyhow!("plotting {}: {e}", exposure.display()))?;
    eprintln!(
        "plots: {}, {} and {}",
        kind.display(),
        turn.display(),
        exposure.display()
    );
    Ok(())
}
