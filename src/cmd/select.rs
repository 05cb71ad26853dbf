//! `turnlake select [--config FILE]`: build the four products through the format gate.

use anyhow::Context;
use clap::Args;
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::lake::Lake;
use crate::pipeline::select::{build, SelectConfig, SelectSummary};

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Gates, finish_mini cap and mix shares (default: the embedded data/select.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
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
    let _ = s.reproduction.render_table(std::io::stdout().lock());
}

pub async fn run(lake: &str, args: SelectArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(args.config.as_ref())?;
    let lake = Lake::open(lake)?;
    let s = build(&lake, &config).await.context("select failed")?;
    print_summary(&s);
    Ok(ExitCode::SUCCESS)
}
