//! `turnlake export sft --out PATH [--format jsonl|parquet] [--table sft_mix]`,
//! with `PATH.manifest.json` beside it, and `turnlake rebuild MANIFEST`.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::LakeArg;
use crate::export::manifest;
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

/// Export `table` of `lake` as `format` to `out` (written beside, then renamed,
/// so a failed export leaves nothing half-written).
async fn export_sft(
    lake: &crate::lake::Lake,
    table: &str,
    format: SftFormat,
    out: &Path,
) -> anyhow::Result<sft::ExportSummary> {
    let rows = sft::rows(lake, table).await.context("export failed")?;
    let tmp = out.with_extension("partial");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let s = sft::write(std::io::BufWriter::new(file), &rows, format)?;
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))?;
    Ok(s)
}

/// Where an export's manifest goes: `PATH.manifest.json`.
pub fn manifest_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".manifest.json");
    out.with_file_name(name)
}

fn format_name(f: SftFormat) -> &'static str {
    match f {
        SftFormat::Jsonl => "jsonl",
        SftFormat::Parquet => "parquet",
    }
}

pub async fn run(lake: &LakeArg, cmd: ExportCommand) -> anyhow::Result<ExitCode> {
    let ExportCommand::Sft(args) = cmd;
    let lake = lake.open().await?;
    let format = match args.format {
        SftFormatArg::Jsonl => SftFormat::Jsonl,
        SftFormatArg::Parquet => SftFormat::Parquet,
    };
    let s = export_sft(&lake, &args.table, format, &args.out).await?;
    let export =
        serde_json::json!({"kind": "sft", "table": args.table, "format": format_name(format)});
    let m = manifest::build(&lake, export, &[args.out.as_path()]).await?;
    let mpath = manifest_path(&args.out);
    manifest::write(&m, &mpath).with_context(|| format!("writing {}", mpath.display()))?;
    println!(
        "exported {} rows, {} messages, {} train turns to {} (lake commit {}, manifest {})",
        s.rows,
        s.messages,
        s.train_turns,
        args.out.display(),
        m.lake_commit,
        mpath.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct RebuildArgs {
    /// A manifest an export wrote (`PATH.manifest.json`).
    pub manifest: PathBuf,
    /// Keep the rebuilt files here (default: rebuilt in a temporary folder, only checked).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Reproduce an export from the lake commit its manifest records and check
/// every file's hash; a mismatch names the file.
pub async fn rebuild(args: RebuildArgs) -> anyhow::Result<ExitCode> {
    let m = manifest::read(&args.manifest).map_err(anyhow::Error::msg)?;
    let lake = crate::lake::Lake::open_as_of(&m.lake, &m.lake_commit.to_string()).await?;
    let scratch;
    let dir = match &args.out {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => {
            scratch = tempfile::tempdir().context("creating a scratch folder")?;
            scratch.path().to_path_buf()
        }
    };
    let kind = m.export["kind"].as_str().unwrap_or("");
    anyhow::ensure!(
        kind == "sft",
        "{}: cannot rebuild an export of kind {kind:?}",
        args.manifest.display()
    );
    let table = m.export["table"].as_str().unwrap_or("sft_mix");
    let format = match m.export["format"].as_str() {
        Some("parquet") => SftFormat::Parquet,
        _ => SftFormat::Jsonl,
    };
    let file = m.files.first().context("the manifest lists no file")?;
    export_sft(&lake, table, format, &dir.join(&file.path)).await?;
    let bad = manifest::verify(&m, &dir);
    if bad.is_empty() {
        println!(
            "rebuilt {} file(s) from lake commit {}: every sha256 matches",
            m.files.len(),
            m.lake_commit
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for b in &bad {
            eprintln!("mismatch: {b}");
        }
        anyhow::bail!(
            "{} of {} rebuilt file(s) differ from the manifest",
            bad.len(),
            m.files.len()
        )
    }
}
