//! Validate's table step: every train turn of a table through the tokenizer
//! and chat template, and the rows that pass written to sft_validated in one
//! lake commit (unless read --as-of, which writes nothing).

use anyhow::Context;
use clap::ValueEnum;
use std::path::PathBuf;

use crate::engine;
use crate::export::sft_rows;
use crate::lake::Lake;
use crate::pipeline::provenance::Provenance;
use crate::tokenize::hf::HfEncoder;
use crate::tokenize::model::Model;
use crate::tokenize::template::{ChatTemplate, Template};
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

/// What to validate and how: the table, the tokenizer (a Hugging Face
/// tokenizer.json, a tiktoken rank file with its pattern, else the shipped
/// one), the chat template (else ChatML), the length limit and what to do
/// with rows over it, and how conversations are tokenized.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    pub table: String,
    pub tokenizer: Option<PathBuf>,
    pub tiktoken: Option<PathBuf>,
    pub pattern: String,
    pub template: Option<PathBuf>,
    /// A Hugging Face model folder: its tokenizer and chat template, in
    /// place of the four above.
    pub model: Option<PathBuf>,
    /// With `model`: render every assistant turn's reasoning.
    pub preserve_thinking: bool,
    pub limit: usize,
    pub over_limit: OverLimit,
    pub mode: Mode,
}

impl ValidateOptions {
    /// sft_mix through the shipped tokenizer and ChatML, whole conversations, rows over `limit` kept.
    pub fn defaults(limit: usize) -> ValidateOptions {
        ValidateOptions {
            table: "sft_mix".into(),
            tokenizer: None,
            tiktoken: None,
            pattern: QWEN_PATTERN.into(),
            template: None,
            model: None,
            preserve_thinking: false,
            limit,
            over_limit: OverLimit::Keep,
            mode: Mode::Whole,
        }
    }
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

/// The tokenizer and template `args` name: a model folder's, else the
/// tokenizer and TOML template given (turnlake's own by default).
pub fn tokenizer_and_template(
    args: &ValidateOptions,
) -> anyhow::Result<(Box<dyn TextEncoder>, Template)> {
    if let Some(dir) = &args.model {
        let model = Model::open(dir)?;
        let template = Template::Model {
            template: Box::new(model.template),
            preserve_thinking: args.preserve_thinking,
        };
        return Ok((Box::new(model.encoder), template));
    }
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
    Ok((enc, Template::Toml(template)))
}

/// The tokenizer and template `args` name, in words, for the report.
pub fn describe(args: &ValidateOptions) -> String {
    let shown = |p: &PathBuf| p.display().to_string();
    if let Some(dir) = &args.model {
        let thinking = match args.preserve_thinking {
            true => "every assistant turn's reasoning rendered (preserve_thinking)",
            false => "reasoning rendered as the template does by default (only after the last user message)",
        };
        return format!(
            "the model folder {}'s tokenizer and chat template, {thinking}",
            shown(dir)
        );
    }
    let tokenizer = match (&args.tokenizer, &args.tiktoken) {
        (_, Some(t)) => format!("the tiktoken vocabulary {}", shown(t)),
        (Some(t), None) => format!("the tokenizer {}", shown(t)),
        (None, None) => "turnlake's shipped BPE".to_string(),
    };
    let template = args
        .template
        .as_ref()
        .map_or("ChatML (data/chatml.toml)".to_string(), shown);
    format!("{tokenizer} with the template {template}")
}

/// The validation's parameters, as its lake commit records them and `build` compares them.
pub fn params(args: &ValidateOptions) -> serde_json::Value {
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
        "model_sha256": args.model.as_ref().map(|dir| match Model::open(dir) {
            Ok(m) => m.sha256,
            Err(e) => format!("unreadable: {e}"),
        }),
        "preserve_thinking": args.preserve_thinking,
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
pub async fn validate_table(lake: &Lake, args: &ValidateOptions) -> anyhow::Result<Validated> {
    let (enc, template) = tokenizer_and_template(args)?;
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
