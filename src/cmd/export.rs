//! `turnlake export sft --out PATH [--format jsonl|parquet] [--table sft_mix]`

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::LakeArg;
use crate::export::sft::{self, SftFormat};

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Chat rows with a per-message `train` flag (JSONL or Parquet).
    Sft(SftArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SftFormatArg {
    Jsonl,
    Parquet,
}

#[derive(Debug, Args)]
pub struct SftArgs {
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: SftFormatArg,
    /// The rows to export: sft_mix, or one product table.
    #[arg(long, default_value = "sft_mix")]
    pub table: String,
}

pub async fn run(lake: &LakeArg, cmd: ExportCommand) -> anyhow::Result<ExitCode> {
    let ExportCommand::Sft(args) = cmd;
    let lake = lake.open().await?;
    let rows = sft::rows(&lake, &args.table)
        .await
        .context("export failed")?;
    let format = match args.format {
        SftFormatArg::Jsonl => SftFormat::Jsonl,
        SftFormatArg::Parquet => SftFormat::Parquet,
    };
    // Write beside the target, then rename, so a failed export leaves nothing half-written.
    let tmp = args.out.with_extension("partial");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let s = sft::write(std::io::BufWriter::new(file), &rows, format)?;
    std::fs::rename(&tmp, &args.out).with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "exported {} rows, {} messages, {} train turns to {}",
        s.rows,
        s.messages,
        s.train_turns,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
