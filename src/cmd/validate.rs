//! `turnlake validate [--table T] [--model DIR [--preserve-thinking] | --tokenizer F | --tiktoken F] [--template F] [--limit N] [--over-limit keep|drop]`

use anyhow::bail;
use clap::Args;
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::job::validate::{validate_table, Validated};
pub use crate::job::validate::{OverLimit, ValidateOptions};
use crate::pipeline::reproduction::{Reproduction, Unit};
use crate::tokenize::tiktoken::QWEN_PATTERN;
use crate::tokenize::validate::{Mode, ValidationReport};

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
    /// A Hugging Face model folder (tokenizer.json or a *.tiktoken
    /// vocabulary, tokenizer_config.json, chat_template.jinja): the model's
    /// own tokenizer and chat template.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tokenizer", "tiktoken", "template"])]
    pub model: Option<PathBuf>,
    /// With --model: render every assistant turn's reasoning, not only the
    /// turns after the last user message (the template's preserve_thinking).
    #[arg(long, requires = "model")]
    pub preserve_thinking: bool,
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

/// The reference's credit-set token figures beside the lake's.
pub fn reproduction(r: &ValidationReport, tokenizer: &str) -> Reproduction {
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
    t.note(&format!(
        "token counts depend on the tokenizer and template: the reference used the model's own (Qwen); these used {tokenizer}"
    ));
    t
}

pub fn print_report(r: &ValidationReport, tokenizer: &str) {
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
    let _ = reproduction(r, tokenizer).render_table(std::io::stdout().lock());
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
    pub fn options(&self) -> ValidateOptions {
        ValidateOptions {
            table: self.table.clone(),
            tokenizer: self.tokenizer.clone(),
            tiktoken: self.tiktoken.clone(),
            pattern: self.pattern.clone(),
            template: self.template.clone(),
            model: self.model.clone(),
            preserve_thinking: self.preserve_thinking,
            limit: self.limit,
            over_limit: self.over_limit,
            mode: self.mode,
        }
    }
}

pub async fn run(lake: &LakeArg, args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let options = args.options();
    let Validated { report, secs, kept } = validate_table(&lake, &options).await?;
    let tokenizer = crate::job::validate::describe(&options);
    match args.format {
        super::stats::ReportFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "tokenizer": tokenizer,
                "report": report,
                "reproduction": reproduction(&report, &tokenizer),
            }))?
        ),
        _ => {
            println!("tokenizer and template: {tokenizer}");
            print_report(&report, &tokenizer)
        }
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
    let outcome = match kept {
        None => "read --as-of an earlier lake commit: sft_validated is not written".to_string(),
        Some(_) => format!(
            "{} row(s) over {} tokens {}; sft_validated written",
            report.over_limit_rows.len(),
            args.limit,
            if args.over_limit == OverLimit::Drop {
                "dropped"
            } else {
                "kept"
            }
        ),
    };
    // JSON on standard output is the report alone.
    match args.format {
        super::stats::ReportFormat::Json => eprintln!("{outcome}"),
        _ => println!("{outcome}"),
    }
    Ok(ExitCode::SUCCESS)
}
