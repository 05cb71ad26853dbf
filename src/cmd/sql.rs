//! `turnlake sql "SELECT …" | -f FILE [--config TOML] ["SELECT …"] [--format F] [--out PATH]`
//!
//! A pipeline step's SQL file runs on its own: `-f sql/credit.sql --config
//! data/credit.toml "SELECT …"` registers the step's parameters as the step
//! does, creates its views (writing no table) and answers the query over them.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::engine;
use crate::output::{write_batches, Format};
use crate::pipeline::sqlstep::statements;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The SQL to run; with -f, a query over the file's views.
    pub query: Option<String>,
    /// Read SQL from a file; its statements run in order, and the query's (or
    /// else the last statement's) result is printed.
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// The step config to register for a pipeline step's SQL file
    /// (sql/credit.sql, sql/select.sql, sql/mix.sql; default: the embedded one).
    #[arg(long, requires = "file")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Write the result here instead of stdout (required for parquet).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// What a pipeline step's SQL file needs registered before it runs, as the
/// step registers it: its parameters (from `config`, else the embedded
/// default) and, for mix.sql, its candidates; for the mix's report files,
/// the rows they describe (sft_mix). Returns the scratch folder the step's
/// tables are kept in, if it has one (hold it while the session reads
/// them).
async fn register_step(
    ctx: &datafusion::prelude::SessionContext,
    file: &std::path::Path,
    config: Option<&PathBuf>,
    on_cluster: bool,
) -> anyhow::Result<Option<tempfile::TempDir>> {
    let step = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    match step {
        "credit" => {
            let c = super::load_config(
                config,
                crate::pipeline::credit::CreditConfig::default_config,
                crate::pipeline::credit::CreditConfig::from_toml,
            )?;
            crate::pipeline::credit::register_config(ctx, &c)?;
        }
        "select" => {
            // What the file reads of the sides and runs, built as the step builds it.
            use crate::pipeline::{select::prepare_parts, select_parts::PartSizes};
            let c = super::select::load_config(config)?;
            return Ok(prepare_parts(ctx, &c, PartSizes::default(), on_cluster).await?);
        }
        "select_runs" | "select_runs_input" | "select_sides" => {
            let c = super::select::load_config(config)?;
            crate::pipeline::select::register_config(ctx, &c)?;
            if step == "select_runs" {
                use crate::pipeline::select_parts::{INPUT_SQL, INPUT_SQL_FILE};
                crate::pipeline::sqlstep::run_script(ctx, INPUT_SQL_FILE, INPUT_SQL).await?;
            }
        }
        "mix" => {
            let c = super::select::load_config(config)?;
            crate::pipeline::mix::register_quota(ctx, &c.mix).await?;
            crate::pipeline::mix::register_candidates(ctx).await?;
        }
        "mix_report" | "mix_report_input" | "train_turns" if config.is_none() => {
            // Over the whole mix: the report's chunks are a hash's shares of these views.
            use crate::pipeline::{mix, sqlstep::run_script};
            let _ = ctx.deregister_table("rows_in");
            ctx.sql("CREATE VIEW rows_in AS SELECT * FROM sft_mix")
                .await?;
            if step != "train_turns" {
                run_script(ctx, "sql/train_turns.sql", mix::TRAIN_TURNS_SQL).await?;
            }
            if step == "mix_report" {
                run_script(ctx, mix::REPORT_INPUT_SQL_FILE, mix::REPORT_INPUT_SQL).await?;
            }
        }
        _ if config.is_some() => {
            bail!(
                "{}: --config is for a pipeline step's SQL file (sql/credit.sql, sql/select.sql)",
                file.display()
            )
        }
        _ => {}
    }
    Ok(None)
}

pub async fn run(lake: &LakeArg, args: SqlArgs) -> anyhow::Result<ExitCode> {
    let (text, origin) = match (&args.query, &args.file) {
        (Some(q), None) => (q.clone(), "query".to_string()),
        (_, Some(f)) => (
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
            f.display().to_string(),
        ),
        (None, None) => bail!("give a query, or -f FILE"),
    };
    if args.format == FormatArg::Parquet && args.out.is_none() {
        bail!("--format parquet needs --out PATH");
    }
    let lake = lake.open().await?;
    let ctx = engine::session(&lake).await?;
    let _scratch = match &args.file {
        Some(file) => {
            register_step(&ctx, file, args.config.as_ref(), lake.cluster().is_some()).await?
        }
        None => None,
    };
    let mut stmts = statements(&text);
    if let (Some(q), Some(_)) = (&args.query, &args.file) {
        stmts.push(q.clone());
    }
    if stmts.is_empty() {
        bail!("{origin}: no SQL statement");
    }
    let mut last = Vec::new();
    for (i, s) in stmts.iter().enumerate() {
        let context = format!(
            "{origin}, statement {} ({})",
            i + 1,
            s.lines().next().unwrap_or("")
        );
        last = engine::run_sql(&ctx, s, &context).await?;
    }
    match &args.out {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            write_batches(std::io::BufWriter::new(f), &last, args.format.into())?;
        }
        None => write_batches(std::io::stdout(), &last, args.format.into())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Output formats for tables of results.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FormatArg {
    Table,
    Csv,
    Json,
    Ndjson,
    Parquet,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Ndjson => Format::Ndjson,
            FormatArg::Parquet => Format::Parquet,
        }
    }
}
