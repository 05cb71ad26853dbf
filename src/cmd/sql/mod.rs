//! `turnlake sql [-f FILE]… [-c SQL]… ["SQL"] [--format F] [--out PATH]`
//!
//! Runs the statements of every `-f` file, then every `-c`, then the query
//! (or, with none of these, what standard input holds), and prints each
//! statement's result in order. With none of these on a terminal, it opens
//! the interactive shell (`repl`). A pipeline step's SQL file runs on its own:
//! `-f sql/credit.sql --config data/credit.toml "SELECT …"` registers the
//! step's parameters as the step does, creates its views (writing no table)
//! and answers the query over them.

mod repl;
mod runner;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::engine;
use crate::output::{Format, TableCap};
use crate::pipeline::steps::{self, StepConfig};
use runner::{Output, Runner};

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// SQL to run, after any -f files and -c commands.
    pub query: Option<String>,
    /// SQL to run; repeatable, run in order after the -f files.
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub commands: Vec<String>,
    /// A file of SQL statements; repeatable, run first, in order.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The step config to register for a pipeline step's SQL file
    /// (sql/credit.sql, sql/select.sql, sql/mix.sql; default: the embedded one).
    #[arg(long, requires = "files")]
    pub config: Option<PathBuf>,
    /// The result's format (default: from --out's extension, .csv, .json,
    /// .ndjson/.jsonl or .parquet; else a table).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Write the last statement's result here, streamed (the statements
    /// before it run, printing nothing); required for parquet.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Rows of each result the table format shows; 0 shows every row.
    #[arg(long, default_value_t = 40)]
    pub maxrows: usize,
    /// Characters of one cell the table format shows; 0 shows every one.
    #[arg(long, default_value_t = 1000)]
    pub maxchars: usize,
    /// Say each statement's row count and elapsed time on standard error
    /// (the default when it is a terminal).
    #[arg(long)]
    pub timing: bool,
    /// Run statements that write (INSERT, UPDATE, DELETE into session
    /// tables, COPY … TO); the lake's own tables are never written.
    #[arg(long)]
    pub allow_writes: bool,
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
    let Some(setup) = steps::sql_file(name).map(|f| f.setup) else {
        return Ok(None);
    };
    let kind = setup.config();
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
    let format = args
        .format
        .unwrap_or_else(|| format_of(args.out.as_deref()));
    if format == FormatArg::Parquet && args.out.is_none() {
        bail!("--format parquet needs --out PATH");
    }
    let mut scripts = Vec::new();
    for f in &args.files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        scripts.push((f.display().to_string(), text));
    }
    for (i, c) in args.commands.iter().enumerate() {
        scripts.push((format!("-c #{}", i + 1), c.clone()));
    }
    if let Some(q) = &args.query {
        scripts.push(("query".to_string(), q.clone()));
    }
    let interactive = scripts.is_empty() && std::io::stdin().is_terminal();
    if scripts.is_empty() && !interactive {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading SQL from standard input")?;
        scripts.push(("standard input".to_string(), text));
    }
    let mut stmts = Vec::new();
    for (origin, text) in &scripts {
        stmts.extend(runner::split(text, origin)?);
    }
    if !interactive && stmts.is_empty() {
        bail!("no SQL statement in {}", scripts[0].0);
    }

    let lake = lake.open().await?;
    let ctx = engine::session(&lake).await?;
    let _scratch = register_steps(
        &ctx,
        &args.files,
        args.config.as_ref(),
        lake.cluster().is_some(),
    )
    .await?;
    let runner = Runner {
        ctx,
        format: format.into(),
        cap: TableCap {
            rows: (args.maxrows > 0).then_some(args.maxrows),
            chars: (args.maxchars > 0).then_some(args.maxchars),
        },
        timing: args.timing || std::io::stderr().is_terminal(),
        access: match args.allow_writes {
            true => engine::Access::Writes,
            false => engine::Access::ReadOnly,
        },
    };
    if interactive {
        repl::run(runner).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let (last_context, last) = stmts.pop().expect("checked above");
    // With --out, only the last statement's result is written (to the file).
    let (before, last_out) = match &args.out {
        Some(path) => (Output::Discard, Output::File(path)),
        None => (Output::Stdout, Output::Stdout),
    };
    for (context, sql) in &stmts {
        runner.run_statement(sql, context, before).await?;
    }
    runner.run_statement(&last, &last_context, last_out).await?;
    Ok(ExitCode::SUCCESS)
}

/// Register what each pipeline step's SQL file among `files` needs, the one
/// that takes a config given `config`. Returns the scratch folders the
/// steps' tables are kept in (hold them while the session reads them).
async fn register_steps(
    ctx: &datafusion::prelude::SessionContext,
    files: &[PathBuf],
    config: Option<&PathBuf>,
    on_cluster: bool,
) -> anyhow::Result<Vec<tempfile::TempDir>> {
    let takes_config = |f: &PathBuf| {
        let name = f.file_name().and_then(|s| s.to_str()).unwrap_or("");
        steps::sql_file(name).is_some_and(|s| s.setup.config().is_some())
    };
    if config.is_some() {
        match files.iter().filter(|f| takes_config(f)).count() {
            0 => bail!(
                "--config is for a pipeline step's SQL file (sql/credit.sql, sql/select.sql, sql/mix.sql)"
            ),
            1 => {}
            _ => bail!("--config: more than one -f file is a step that takes a config; give one"),
        }
    }
    let mut scratch = Vec::new();
    for f in files {
        let config = config.filter(|_| takes_config(f));
        scratch.extend(register_step(ctx, f, config, on_cluster).await?);
    }
    Ok(scratch)
}

/// The format `out`'s extension names; a table when it names none.
fn format_of(out: Option<&std::path::Path>) -> FormatArg {
    let extension = out
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("csv") => FormatArg::Csv,
        Some("json") => FormatArg::Json,
        Some("ndjson" | "jsonl") => FormatArg::Ndjson,
        Some("parquet") => FormatArg::Parquet,
        _ => FormatArg::Table,
    }
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
