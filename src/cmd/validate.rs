//! `turnlake validate [--table T] [--tokenizer F | --tiktoken F] [--template F] [--limit N] [--over-limit keep|drop]`

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::engine;
use crate::export::sft_rows;
use crate::lake::Lake;
use crate::pipeline::provenance::Provenance;
use crate::pipeline::reproduction::{Reproduction, Unit};
use crate::tokenize::hf::HfEncoder;
use crate::tokenize::template::ChatTemplate;
use crate::tokenize::tiktoken::{TiktokenEncoder, QWEN_PATTERN};
use crate::tokenize::validate::{check_rows, Mode, Tally, ValidationReport};
use crate::tokenize::{TextEncoder, CHATML_SPECIALS, DEFAULT_TOKENIZER};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OverLimit {
    /// Keep rows over the limit and report them.
    Keep,
    /// Leave them out of sft_validated and count them.
    Drop,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The rows to check: sft_mix or a product table.
    #[arg(long, default_value = "sft_mix")]
    pub table: String,
    /// A Hugging Face tokenizer.json (default: the one turnlake ships).
    #[arg(long, conflicts_with = "tiktoken")]
    pub tokenizer: Option<PathBuf>,
    /// A tiktoken-format rank file (Qwen's pattern and ChatML specials).
    #[arg(long)]
    pub tiktoken: Option<PathBuf>,
    /// The pre-tokenization pattern for --tiktoken.
    #[arg(long, default_value = QWEN_PATTERN)]
    pub pattern: String,
    /// Chat template TOML (default: data/chatml.toml).
    #[arg(long)]
    pub template: Option<PathBuf>,
    /// Sequence length limit in tokens.
    #[arg(long, default_value_t = 32768)]
    pub limit: usize,
    #[arg(long, value_enum, default_value = "keep")]
    pub over_limit: OverLimit,
    /// `json` prints the report and the reproduction table as one JSON object.
    #[arg(long, value_enum, default_value = "table")]
    pub format: super::stats::ReportFormat,
    /// `whole`: tokenize each rendered conversation as one string, as
    /// chat-template trainers do; `segments`: each message's content on its own.
    #[arg(long, value_enum, default_value = "whole")]
    pub mode: Mode,
}

pub fn encoder(
    tokenizer: Option<&PathBuf>,
    tiktoken: Option<&PathBuf>,
    pattern: &str,
) -> anyhow::Result<Box<dyn TextEncoder>> {
    Ok(match (tokenizer, tiktoken) {
        (_, Some(t)) => {
            let specials: Vec<(&str, Option<u32>)> =
                CHATML_SPECIALS.iter().map(|s| (*s, None)).collect();
            Box::new(TiktokenEncoder::from_file(t, pattern, &specials).map_err(anyhow::Error::msg)?)
        }
        (Some(f), None) => Box::new(HfEncoder::from_file(f).map_err(anyhow::Error::msg)?),
        (None, None) => {
            Box::new(HfEncoder::from_bytes(DEFAULT_TOKENIZER).map_err(anyhow::Error::msg)?)
        }
    })
}

/// The reference's credit-set token figures beside the lake's.
pub fn reproduction(r: &ValidationReport) -> Reproduction {
    let mut t = Reproduction::new("Reproduction: validation (turnlake validate)");
    let credit = r.lengths.iter().find(|l| l.mix == "credit");
    t.add("select.credit.rows", credit.map(|l| l.rows as f64));
    t.add(
        "select.credit.train_turns",
        credit.map(|l| l.train_turns as f64),
    );
    t.add(
        "validate.credit.trainable_tokens",
        credit.map(|l| l.trainable_tokens as f64),
    );
    t.add("validate.credit.mean_tokens", credit.map(|l| l.mean));
    t.add_own(
        "validate.credit.median_tokens",
        "credit set median sequence length (tokens)",
        Unit::Count,
        credit.map(|l| l.median as f64),
    );
    t.add(
        "validate.credit.over_limit",
        credit.map(|l| 100.0 * l.over_limit as f64 / l.rows.max(1) as f64),
    );
    t.note("token counts depend on the tokenizer: the reference used the trainer's (Qwen) vocabulary, the default here is turnlake's small BPE");
    t
}

pub fn print_report(r: &ValidationReport) {
    println!(
        "{} rows, {} train turns ({:?} mode): {:.2}% decode back exactly; {} tokens, {} trainable",
        r.rows,
        r.train_turns,
        r.mode,
        100.0 * r.pass_rate(),
        r.total_tokens,
        r.trainable_tokens
    );
    let mut t = Table::new();
    t.set_header(vec![
        "mix",
        "rows",
        "train turns",
        "trainable tokens",
        "mean tokens",
        "median",
        "p95",
        "max",
        &format!("over {}", r.limit),
    ]);
    for l in &r.lengths {
        t.add_row(vec![
            l.mix.clone(),
            l.rows.to_string(),
            l.train_turns.to_string(),
            l.trainable_tokens.to_string(),
            format!("{:.0}", l.mean),
            l.median.to_string(),
            l.p95.to_string(),
            l.max.to_string(),
            format!(
                "{} ({:.2}%)",
                l.over_limit,
                100.0 * l.over_limit as f64 / l.rows.max(1) as f64
            ),
        ]);
    }
    println!("{t}");
    if r.boundary_merges > 0 {
        println!(
            "{} train turn(s) have a token merged across their boundary",
            r.boundary_merges
        );
    }
    if !r.special_text_rows.is_empty() {
        println!(
            "{} row(s) hold special-token text in their content ({}): a trainer's tokenizer reads it as special tokens{}",
            r.special_text_rows.len(),
            r.special_text_rows.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if r.special_text_rows.len() > 5 { ", ..." } else { "" }
        );
    }
    let _ = reproduction(r).render_table(std::io::stdout().lock());
    for f in &r.failures {
        println!(
            "FAIL row {} message {} (t={}): {}",
            f.row_id,
            f.message,
            f.t.map_or("-".into(), |t| t.to_string()),
            f.reason
        );
    }
}

impl ValidateArgs {
    /// sft_mix through the shipped tokenizer and ChatML, whole conversations, rows over `limit` kept.
    pub fn defaults(limit: usize) -> ValidateArgs {
        ValidateArgs {
            table: "sft_mix".into(),
            tokenizer: None,
            tiktoken: None,
            pattern: QWEN_PATTERN.into(),
            template: None,
            limit,
            over_limit: OverLimit::Keep,
            format: super::stats::ReportFormat::Table,
            mode: Mode::Whole,
        }
    }
}

/// The validation's parameters, as its lake commit records them and `build` compares them.
pub fn params(args: &ValidateArgs) -> serde_json::Value {
    // A file's content, not its path, decides what validate would say.
    let digest = |p: &Option<PathBuf>| {
        p.as_ref().map(|p| match crate::digest::hash_file(p) {
            Ok((_, sha)) => sha,
            Err(e) => format!("unreadable: {e}"),
        })
    };
    serde_json::json!({
        "table": args.table,
        "tokenizer_sha256": digest(&args.tokenizer),
        "tiktoken_sha256": digest(&args.tiktoken),
        "pattern": args.pattern,
        "template_sha256": digest(&args.template),
        "limit": args.limit,
        "over_limit": format!("{:?}", args.over_limit),
        "mode": args.mode,
    })
}

/// What one validation found and wrote.
pub struct Validated {
    pub report: ValidationReport,
    pub secs: f64,
    /// Rows written to sft_validated (`None` when read --as-of, which writes nothing).
    pub kept: Option<usize>,
}

/// Validate `args.table` of `lake` and, unless it is read --as-of or a train
/// turn fails, write the rows that pass to sft_validated in one lake commit.
pub async fn validate_table(lake: &Lake, args: &ValidateArgs) -> anyhow::Result<Validated> {
    let enc = encoder(
        args.tokenizer.as_ref(),
        args.tiktoken.as_ref(),
        &args.pattern,
    )?;
    let template = match &args.template {
        None => ChatTemplate::chatml(),
        Some(p) => ChatTemplate::from_toml(
            &std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?,
    };
    // What is validated is what the lake holds now: take the writer lock first
    // (unless reading --as-of an earlier commit, which writes nothing).
    let writer = if lake.is_pinned() {
        None
    } else {
        Some(lake.begin("validate", params(args)).await?)
    };
    let input_version = lake.view().await?.tables.get(&args.table).copied();
    // Rows stream from the lake in chunks; each chunk is checked on the
    // blocking pool and only its findings are kept.
    let ctx = engine::session(lake).await?;
    // A missing table is named by the stream below.
    let total = match lake.table(&args.table).await? {
        Some(_) => ctx.table(args.table.as_str()).await?.count().await? as u64,
        None => 0,
    };
    let bar = crate::progress::bar(total, "validate");
    let started = std::time::Instant::now();
    let (progress, mode) = (bar.clone(), args.mode);
    let tally = Tally::new(args.limit, mode);
    let report = sft_rows::stream_rows(lake, &args.table, tally, move |tally, rows| {
        let tick = || progress.inc(1);
        tally.add(check_rows(enc.as_ref(), &template, &rows, mode, &tick));
        Ok(())
    })
    .await
    .context("reading the rows to validate")?
    .report();
    let secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let (Some(mut writer), true) = (writer, report.failures.is_empty()) else {
        return Ok(Validated {
            report,
            secs,
            kept: None,
        });
    };
    // sft_validated: the rows that passed, less those over the limit when dropping.
    let dropped: Vec<String> = if args.over_limit == OverLimit::Drop {
        report.over_limit_rows.clone()
    } else {
        Vec::new()
    };
    let provenance = Provenance {
        dropped: Some(dropped.len() as u64),
        ..Provenance::new(
            "validate",
            [(args.table.clone(), input_version)].into(),
            params(args),
            None,
        )
    }
    .to_value();
    let kept = {
        use datafusion::prelude::{col, lit};
        let dropped_ids = dropped.iter().map(|r| lit(r.as_str())).collect();
        // The sort spills past a small budget: its memory does not grow with the mix.
        let bounded = engine::bounded_session(
            lake,
            sft_rows::SMALL_SORT_BUDGET,
            sft_rows::SMALL_BATCH_ROWS,
        )
        .await?;
        bounded
            .table(args.table.as_str())
            .await?
            .filter(col("row_id").in_list(dropped_ids, true))?
            .sort(vec![col("row_id").sort(true, false)])?
    };
    let kept = engine::stream(kept, "validate: keeping rows").await?;
    let n_kept = lake
        .overwrite_stream("sft_validated", kept, provenance.clone())
        .await?;
    writer.set_params(provenance);
    writer.finish().await?;
    Ok(Validated {
        report,
        secs,
        kept: Some(n_kept),
    })
}

pub async fn run(lake: &LakeArg, args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let Validated { report, secs, kept } = validate_table(&lake, &args).await?;
    match args.format {
        super::stats::ReportFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "report": report,
                "reproduction": reproduction(&report),
            }))?
        ),
        _ => print_report(&report),
    }
    eprintln!(
        "tokenized {} tokens in {secs:.2} s ({:.0} tokens/s)",
        report.total_tokens,
        report.total_tokens as f64 / secs.max(1e-9)
    );
    if !report.failures.is_empty() {
        bail!(
            "{} of {} train turns do not decode back to their content",
            report.failures.len(),
            report.train_turns
        );
    }
    match kept {
        None => println!("read --as-of an earlier lake commit: sft_validated is not written"),
        Some(_) => println!(
            "{} row(s) over {} tokens {}; sft_validated written",
            report.over_limit_rows.len(),
            args.limit,
            if args.over_limit == OverLimit::Drop {
                "dropped"
            } else {
                "kept"
            }
        ),
    }
    Ok(ExitCode::SUCCESS)
}
