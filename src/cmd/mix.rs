//! `turnlake mix [--config FILE]`: compose sft_mix and report its composition;
//! `turnlake mix sweep --grid ...`: rank candidate mixes by proxy models.

use anyhow::Context;
use clap::{Args, Subcommand};
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::pipeline::mix::MixReport;
use crate::pipeline::select::MixConfig;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct MixArgs {
    #[command(subcommand)]
    pub command: Option<MixCommand>,
    /// The [mix] section of this select config, or a file holding only
    /// [mix] (as `mix sweep` writes its winner), is used (default: the
    /// embedded data/select.toml's).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// With [mix] unit = "tokens": the Hugging Face model folder whose
    /// tokenizer and chat template count each row's trainable tokens
    /// (default: turnlake's own tokenizer with ChatML).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// `json` prints the composition and the reproduction table as one JSON object.
    #[arg(long, value_enum, default_value = "table")]
    pub format: super::stats::ReportFormat,
}

#[derive(Debug, Subcommand)]
pub enum MixCommand {
    /// Train proxy models per candidate share vector (same trainable-token budget, several seeds), rank them by loss on the target's held-out dev half, and write the winner as a [mix] block.
    Sweep(SweepArgs),
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Candidates separated by ';', each mix=share,...: "credit=1;finish_mini=1;credit=1,finish_mini=1".
    #[arg(long)]
    pub grid: String,
    /// Where the proxy runs, sweep.json and sweep.png go.
    #[arg(long)]
    pub out: PathBuf,
    /// The mix whose held-out rows are the target set.
    #[arg(long, default_value = "credit")]
    pub target: String,
    /// One proxy per candidate and seed; a seed draws the rows as well as
    /// the model's start, so the spread over seeds is the noise floor.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub seeds: Vec<u64>,
    /// How each candidate takes its quota within a mix: `random` (a seeded
    /// draw), `ranked` (best first by --quality), or both, each candidate
    /// once per selection.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random")]
    pub select: Vec<SelectArg>,
    /// Whether candidates keep every row (`none`) or only rows whose length
    /// lies in the target's central range (`target`: its 10th to 90th
    /// percentile), or both, each candidate once per setting.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    pub gate: Vec<GateArg>,
    /// The quality score `ranked` takes rows by: weights of the credit the
    /// row's train turns earned, its side's judge score and the local
    /// scorer's predicted credit (as [mix.quality]).
    #[arg(long, default_value = "credit=1")]
    pub quality: String,
    /// Trainable (train-turn) tokens each candidate trains on; the context
    /// is fed besides (default: the train config's steps x batch_size x seq_len).
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<usize>,
    /// The table of rows (default sft_mix).
    #[arg(long, default_value = "sft_mix")]
    pub table: String,
    /// Training settings of each proxy (default: the embedded data/train.toml).
    #[arg(long)]
    pub train_config: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "cpu")]
    pub device: super::train::DeviceArg,
    /// A Hugging Face model folder whose tokenizer and chat template render
    /// the rows (see `validate --model`; default: turnlake's own).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
}

/// `--gate`: whether a sweep's candidate keeps only rows in the target's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GateArg {
    None,
    Target,
}

/// `--select`: how a sweep's candidate takes its quota within a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SelectArg {
    Random,
    Ranked,
}

impl From<SelectArg> for crate::pipeline::select::Selection {
    fn from(s: SelectArg) -> Self {
        match s {
            SelectArg::Random => crate::pipeline::select::Selection::Random,
            SelectArg::Ranked => crate::pipeline::select::Selection::Ranked,
        }
    }
}

pub fn print_report(r: &MixReport) {
    let pct = |x: f64| format!("{:.1}", 100.0 * x);
    let mut t = Table::new();
    t.set_header(vec![
        "mix",
        "available",
        "rows",
        "% rows",
        "train turns",
        "% train turns",
        "recovery turns",
        "avg source score",
    ]);
    let tokens = r.unit == crate::pipeline::select::MixUnit::Tokens;
    if tokens {
        t.set_header(vec![
            "mix",
            "available tokens",
            "rows",
            "% rows",
            "train turns",
            "% train turns",
            "trainable tokens",
            "% trainable tokens",
            "recovery turns",
            "avg source score",
        ]);
    }
    for m in &r.mixes {
        let mut row = vec![
            m.mix.clone(),
            r.available.get(&m.mix).copied().unwrap_or(0).to_string(),
            m.rows.to_string(),
            pct(m.share_rows),
            m.train_turns.to_string(),
            pct(m.share_train),
        ];
        if tokens {
            row.push(m.train_tokens.unwrap_or(0).to_string());
            row.push(pct(m.share_tokens.unwrap_or(0.0)));
        }
        row.push(m.recovery_turns.to_string());
        row.push(
            m.avg_source_score
                .map(|s| format!("{s:.3}"))
                .unwrap_or_else(|| "-".into()),
        );
        t.add_row(row);
    }
    println!("{t}");
    let mut t = Table::new();
    t.set_header(vec!["train turns by command kind", "turns", "%"]);
    for (k, n, s) in &r.commands {
        t.add_row(vec![k.clone(), n.to_string(), pct(*s)]);
    }
    println!("{t}");
    for (title, list) in [
        ("earned tags of all train turns", &r.tags),
        ("credit set: command mix", &r.credit_cmd),
        ("credit set: earned tags", &r.credit_tags),
        (
            "credit set: earned question categories",
            &r.credit_categories,
        ),
    ] {
        let mut t = Table::new();
        t.set_header(vec![title, "turns", "%"]);
        for (k, n, s) in list {
            t.add_row(vec![k.clone(), n.to_string(), pct(*s)]);
        }
        println!("{t}");
    }
    let _ = r.reproduction.render_table(std::io::stdout().lock());
}

pub async fn run(lake: &LakeArg, args: MixArgs) -> anyhow::Result<ExitCode> {
    if let Some(MixCommand::Sweep(_)) = args.command {
        return super::train::delegate();
    }
    let config = super::load_config(
        args.config.as_ref(),
        || crate::pipeline::select::SelectConfig::default_config().mix,
        MixConfig::from_toml,
    )?;
    let lake = lake.open().await?;
    let r = crate::job::mix::compose(&lake, &config, args.model.as_deref())
        .await
        .context("mix failed")?;
    match args.format {
        super::stats::ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&r)?),
        _ => print_report(&r),
    }
    Ok(ExitCode::SUCCESS)
}
