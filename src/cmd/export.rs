//! `turnlake export sft --out PATH [--format jsonl|parquet] [--table sft_mix] [--for axolotl|trl|kto]`,
//! with `PATH.manifest.json` beside it; `turnlake export verl --out DIR`,
//! with `DIR/manifest.json`; and `turnlake rebuild MANIFEST`.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::export::sft::SftFormat;
use crate::export::trainers::Trainer;
use crate::export::verl;
use crate::job::export::{export_sft, export_verl};
use crate::storage::Location;

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Chat rows with a per-message `train` flag (JSONL or Parquet).
    Sft(SftArgs),
    /// Trajectories with per-turn and per-trajectory rewards for verl (JSONL, RL and SFT Parquet, summary, manifest).
    Verl(VerlArgs),
    /// Known judged Albedo samples as the inputs your model continues (prompt, context, task, sample id), for `scorer report`.
    Samples(SamplesArgs),
}

#[derive(Debug, Args)]
pub struct SamplesArgs {
    /// A folder (local or s3://bucket/prefix); samples.jsonl goes in it.
    #[arg(long)]
    pub out: String,
    /// Only samples of these eval runs.
    #[arg(long, value_delimiter = ',')]
    pub runs: Vec<String>,
    /// At most this many samples (by sample id); the seed advises 500-1000.
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
}

/// Write `export samples`: one JSON line per known sample.
async fn export_samples(lake: &crate::lake::Lake, args: &SamplesArgs) -> anyhow::Result<()> {
    let samples = crate::export::samples::known_samples(lake, &args.runs, args.n).await?;
    anyhow::ensure!(
        !samples.is_empty(),
        "the lake has no judged Albedo sample{}: ingest eval runs first",
        if args.runs.is_empty() {
            ""
        } else {
            " of those runs"
        }
    );
    let mut text = Vec::new();
    for s in &samples {
        serde_json::to_writer(&mut text, s)?;
        text.push(b'\n');
    }
    let at = Location::parse(&args.out)?.join("samples.jsonl");
    at.write(text)
        .await
        .with_context(|| format!("writing {at}"))?;
    let runs: std::collections::BTreeSet<&str> =
        samples.iter().map(|s| s.eval_run_id.as_str()).collect();
    println!(
        "exported {} samples of {} eval runs to {at}: run your model on each (its prompt, or its messages), then `turnlake scorer report RUNS`",
        samples.len(),
        runs.len()
    );
    if samples.len() < 500 {
        println!(
            "note: {} samples; a margin of 0.025 needs about 539 to resolve (500-1000 advised)",
            samples.len()
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct VerlArgs {
    /// A folder (local or s3://bucket/prefix); manifest.json goes in it.
    #[arg(long)]
    pub out: String,
    /// Sources to export (albedo: judged sides with judge labels; mini_coder, mswea: the scorer's labels).
    #[arg(long, value_delimiter = ',', default_value = "albedo,mini_coder,mswea")]
    pub sources: Vec<String>,
    /// Least held-out kappa of the turn-credit model whose labels are exported.
    #[arg(long, default_value_t = 0.4)]
    pub min_kappa: f64,
    /// The trainer's weight of the trajectory-level advantage (written to the manifest).
    #[arg(long, default_value_t = 0.9)]
    pub alpha: f64,
    /// A Hugging Face model folder whose tokenizer and chat template count
    /// summary.json's prompt and response tokens (default: turnlake's own).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
}

/// The summary a person reads after a verl export.
pub fn print_verl_summary(s: &verl::VerlSummary) {
    println!(
        "   {} trajectories, {} turns (r_turn +1: {}, -1: {}), r_format pass {:.1}%, r_outcome null {}",
        s.trajectories,
        s.turns,
        s.r_turn_positive,
        s.r_turn_negative,
        100.0 * s.r_format_pass_rate,
        s.r_outcome_null
    );
    let join = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "   by source: {}; turn labels from: {}",
        join(&s.by_source),
        join(&s.label_sources)
    );
    println!("   r_exit: {}", join(&s.r_exit));
    let evidence: Vec<String> = s
        .t_last_evidence
        .iter()
        .map(|(t, n)| format!("{t}: {n}"))
        .chain((s.t_last_evidence_null > 0).then(|| format!("null: {}", s.t_last_evidence_null)))
        .collect();
    println!("   t_last_evidence: {}", evidence.join(", "));
    let t = &s.tokens;
    println!(
        "   tokens under {}: prompt p50 {} p90 {} max {}; response p50 {} p90 {} max {}",
        t.tokenizer,
        t.prompt.p50,
        t.prompt.p90,
        t.prompt.max,
        t.response.p50,
        t.response.p90,
        t.response.max
    );
    if let Some(c) = &s.calibration {
        println!(
            "   scorer labels from turn-credit model {} (held-out kappa {:.3} >= {})",
            c.model_id, c.kappa, c.min_kappa
        );
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SftFormatArg {
    Jsonl,
    Parquet,
}

#[derive(Debug, Args)]
pub struct SftArgs {
    /// A local path or s3://bucket/key; the manifest goes beside it.
    #[arg(long)]
    pub out: String,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: SftFormatArg,
    /// The rows to export: sft_mix, or one product table.
    #[arg(long, default_value = "sft_mix")]
    pub table: String,
    /// Shape the rows for a trainer: `axolotl` (the rows, with the axolotl
    /// config that loads them beside the file), `trl` (a prompt/completion
    /// pair per train turn), `kto` (a labelled pair per train turn and per
    /// other judged turn).
    #[arg(long = "for", value_enum, value_name = "TRAINER")]
    pub trainer: Option<TrainerArg>,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum TrainerArg {
    Axolotl,
    Trl,
    Kto,
}

pub async fn run(lake: &LakeArg, cmd: ExportCommand) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let args = match cmd {
        ExportCommand::Sft(args) => args,
        ExportCommand::Samples(args) => {
            export_samples(&lake, &args).await?;
            return Ok(ExitCode::SUCCESS);
        }
        ExportCommand::Verl(args) => {
            let opts = verl::VerlOptions {
                sources: args.sources,
                min_kappa: args.min_kappa,
                alpha: args.alpha,
                model: args.model,
            };
            let out = Location::parse(&args.out)?;
            let (s, m, mpath) = export_verl(&lake, &opts, &out).await?;
            println!(
                "exported to {out} (lake commit {}, manifest {mpath})",
                m.lake_commit
            );
            print_verl_summary(&s);
            return Ok(ExitCode::SUCCESS);
        }
    };
    let format = match args.format {
        SftFormatArg::Jsonl => SftFormat::Jsonl,
        SftFormatArg::Parquet => SftFormat::Parquet,
    };
    let out = Location::parse(&args.out)?;
    let trainer = args.trainer.map(|t| match t {
        TrainerArg::Axolotl => Trainer::Axolotl,
        TrainerArg::Trl => Trainer::Trl,
        TrainerArg::Kto => Trainer::Kto,
    });
    let (s, m, mpath) = export_sft(&lake, &args.table, format, trainer, &out).await?;
    println!(
        "exported {} rows, {} messages, {} train turns to {out} (lake commit {}, manifest {mpath})",
        s.rows, s.messages, s.train_turns, m.lake_commit,
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct RebuildArgs {
    /// A manifest an export wrote (`PATH.manifest.json`), local or s3://.
    pub manifest: String,
    /// Keep the rebuilt files here (default: rebuilt in a temporary folder, only checked).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `turnlake rebuild`: reproduce an export from the lake commit its manifest
/// records and check every file's hash; a mismatch names the file. It reads
/// `lake` when the user named one (`--lake`, `TURNLAKE_LAKE`), else the
/// lake the manifest names.
pub async fn rebuild(args: RebuildArgs, lake: Option<&str>) -> anyhow::Result<ExitCode> {
    let manifest = Location::parse(&args.manifest)?;
    let r = crate::job::export::rebuild(&manifest, args.out.as_deref(), lake).await?;
    if r.mismatches.is_empty() {
        println!(
            "rebuilt {} file(s) from lake commit {}: every sha256 matches",
            r.files, r.lake_commit
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for b in &r.mismatches {
            eprintln!("mismatch: {b}");
        }
        anyhow::bail!(
            "{} of {} rebuilt file(s) differ from the manifest",
            r.mismatches.len(),
            r.files
        )
    }
}
