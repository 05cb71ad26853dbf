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
use crate::pipeline::steps::{self, StepConfig};

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

/// What a pipeline step's SQL file needs registered before it runs, as its
/// step declares it (`pipeline::steps::SQL_FILES`), with its parameters from
/// `config` (else the embedded default). Returns the scratch folder the
/// step's tables are kept in, if it has one (hold it while the session
/// reads them).
async fn register_step(
    ctx: &datafusion::prelude::SessionContext,
    file: &std::path::Path,
    config: Option<&PathBuf>,
    on_cluster: bool,
) -> anyhow::Result<Option<tempfile::TempDir>> {
    let name = file.file_name().and_then(|s| s.to_str()).unwrap_or("");
    let setup = steps::sql_file(name).map(|f| f.setup);
    let kind = match (setup.and_then(|s| s.config()), config) {
        (None, Some(_)) => bail!(
            "{}: --config is for a pipeline step's SQL file (sql/credit.sql, sql/select.sql)",
            file.display()
        ),
        (kind, _) => kind,
    };
    let Some(setup) = setup else {
        return Ok(None);
    };
    let config = match kind {
        None => None,
        Some(kind) => {
            let text = config
                .map(|p| {
                    std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
                })
                .transpose()?;
            Some(StepConfig::parse(kind, text.as_deref()).map_err(|e| {
                anyhow::anyhow!(
                    "{}: {e}",
                    config.map_or("default".into(), |p| p.display().to_string())
                )
            })?)
        }
    };
    Ok(steps::prepare(ctx, setup, config.as_ref(), on_cluster).await?)
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
    let mut stmts = statements(&text).with_context(|| format!("{origin}: splitting statements"))?;
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
