//! `turnlake credit [--config FILE]`: build credit_citations, turn_credit, side_credit.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::pipeline::credit::{build, CreditConfig};

#[derive(Debug, Args)]
pub struct CreditArgs {
    /// Tag weights and the multi-citation rule (default: the embedded data/credit.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn load_config(path: Option<&PathBuf>) -> anyhow::Result<CreditConfig> {
    super::load_config(path, CreditConfig::default_config, CreditConfig::from_toml)
}

pub async fn run(lake: &LakeArg, args: CreditArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(args.config.as_ref())?;
    let lake = lake.open().await?;
    let s = build(&lake, &config).await.context("credit failed")?;
    println!(
        "credit: {} citations ({} invalid, kept in credit_citations with their reason), {} scored turns, {} sides",
        s.citations, s.invalid_citations, s.turns, s.sides
    );
    Ok(ExitCode::SUCCESS)
}
