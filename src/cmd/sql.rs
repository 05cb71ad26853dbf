//! `turnlake sql "SELECT …" | -f FILE [--format F] [--out PATH]`

use anyhow::{bail, Context};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::FormatArg;
use crate::cli::LakeArg;
use crate::engine;
use crate::output::write_batches;
use crate::pipeline::sqlstep::statements;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The SQL to run (or use -f).
    pub query: Option<String>,
    /// Read the SQL from a file; its statements run in order, the last one's result is printed.
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Write the result here instead of stdout (required for parquet).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub async fn run(lake: &LakeArg, args: SqlArgs) -> anyhow::Result<ExitCode> {
    let (text, origin) = match (&args.query, &args.file) {
        (Some(q), None) => (q.clone(), "query".to_string()),
        (None, Some(f)) => (
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
            f.display().to_string(),
        ),
        _ => bail!("give either a query or -f FILE"),
    };
    if args.format == FormatArg::Parquet && args.out.is_none() {
        bail!("--format parquet needs --out PATH");
    }
    let lake = lake.open().await?;
    let ctx = engine::session(&lake).await?;
    let stmts = statements(&text);
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
