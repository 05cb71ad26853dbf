//! `turnlake select [--config FILE]`: build the four products through the format gate.

use anyhow::Context;
use clap::Args;
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::pipeline::select::{build, SelectConfig, SelectSummary};

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Gates, finish_mini cap and mix shares (default: the embedded data/select.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// `json` prints the summary and the reproduction table as one JSON object.
    #[arg(long, value_enum, default_value = "table")]
    pub format: super::stats::ReportFormat,
    /// A synthetic corpus's truth.json: its planted product sizes get a column of their own.
    #[arg(long)]
    pub truth: Option<PathBuf>,
}

/// Put a synthetic corpus's planted escape counts beside the lake's.
pub fn plant_truth(s: &mut SelectSummary, truth: &serde_json::Value) {
    let counts = &truth["counts"];
    s.reproduction.plant(
        "select.escape_duel.rows",
        counts["escape_duel_rows"].as_f64(),
    );
    s.reproduction.plant(
        "select.escape_mini.rows",
        counts["escape_mini_rows"].as_f64(),
    );
    s.reproduction
        .plant("corpus.sides", counts["sides"].as_f64());
}

/// The summary as JSON (the accounting as rows, since its keys are pairs).
pub fn summary_json(s: &SelectSummary) -> serde_json::Value {
    serde_json::json!({
        "products": s.products.iter().map(|(mix, (mined, kept, train))| {
            serde_json::json!({"mix": mix, "rows_mined": mined, "rows": kept, "train_turns": train,
                               "rows_dropped": s.dropped_rows.get(mix).copied().unwrap_or(0)})
        }).collect::<Vec<_>>(),
        "accounting": s.accounting.iter().map(|((mix, outcome), n)| {
            serde_json::json!({"mix": mix, "outcome": outcome, "turns": n})
        }).collect::<Vec<_>>(),
        "escape_duel_from_rejected": s.escape_duel_from_rejected,
        "finish_instances": s.finish_instances,
        "credit_recurring": s.credit_recurring,
        "reproduction": s.reproduction,
    })
}

pub fn load_config(path: Option<&PathBuf>) -> anyhow::Result<SelectConfig> {
    super::load_config(path, SelectConfig::default_config, SelectConfig::from_toml)
}

pub fn print_summary(s: &SelectSummary) {
    let mut t = Table::new();
    t.set_header(vec![
        "product",
        "rows mined",
        "rows kept",
        "train turns",
        "rows dropped by the gate",
    ]);
    for (mix, (mined, kept, train)) in &s.products {
        t.add_row(vec![
            mix.clone(),
            mined.to_string(),
            kept.to_string(),
            train.to_string(),
            s.dropped_rows.get(mix).copied().unwrap_or(0).to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "escape_duel rows from sides the credit gates rejected: {:.1}%; finish_mini mined from {} instances",
        100.0 * s.escape_duel_from_rejected,
        s.finish_instances
    );
    let mut t = Table::new();
    t.set_header(vec!["product", "candidate train turns", "count"]);
    for ((mix, outcome), n) in &s.accounting {
        t.add_row(vec![mix.clone(), outcome.clone(), n.to_string()]);
    }
    println!("{t}");
    if !s.credit_recurring.is_empty() {
        println!(
            "credit takes one side per sample_id: of the sides passing its gates in any eval run, \
             the highest judge score (then the lowest traj_id). Samples that recur across runs:"
        );
        let mut t = Table::new();
        t.set_header(vec!["sample_id", "eval runs", "side kept", "its score"]);
        for r in &s.credit_recurring {
            t.add_row(vec![
                r.sample_id.clone(),
                r.runs.to_string(),
                r.kept.clone(),
                r.kept_score.map_or("-".into(), |v| format!("{v:.3}")),
            ]);
        }
        println!("{t}");
    }
    let _ = s.reproduction.render_table(std::io::stdout().lock());
}

pub async fn run(lake: &LakeArg, args: SelectArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(args.config.as_ref())?;
    let lake = lake.open().await?;
    let mut s = build(&lake, &config).await.context("select failed")?;
    if let Some(path) = &args.truth {
        plant_truth(&mut s, &super::stats::read_truth(path)?);
    }
    match args.format {
        super::stats::ReportFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&summary_json(&s))?)
        }
        _ => print_summary(&s),
    }
    Ok(ExitCode::SUCCESS)
}
