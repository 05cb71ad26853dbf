//! `turnlake ingest albedo|mini-coder|mswea|swebench-results PATH...`

use anyhow::Context;
use clap::Subcommand;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::pipeline::ingest::{ingest, IngestReport, InputKind};
use crate::storage::Location;

#[derive(Debug, Subcommand)]
pub enum IngestSource {
    /// Albedo eval-run folders (or folders of them): local paths or s3:// prefixes.
    Albedo {
        /// Ingest even when an artifact's sha256 differs from verdict.json.
        #[arg(long)]
        no_verify: bool,
        /// The dashboard's dashboard.json (local or s3://): who played each
        /// run, for runs without their own dashboard-entry.json.
        #[arg(long)]
        dashboard: Option<String>,
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// mini-coder Parquet shards or JSONL files (or folders of them), local or s3://.
    MiniCoder {
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// mini-swe-agent *.traj.json files (or folders of them, such as a
    /// `mini-extra swebench` output folder), local or s3://. A changed file
    /// (a `--redo-existing` rerun) replaces the trajectory it gave before.
    Mswea {
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// SWE-bench reports of one's own runs (the harness's run report,
    /// sb-cli's, or folders of per-instance report.json): set `verified` of
    /// the mswea trajectories of each judged instance.
    SwebenchResults {
        /// Only the trajectories whose files lie under this folder (one batch run).
        #[arg(long)]
        under: Option<String>,
        #[arg(required = true)]
        paths: Vec<String>,
    },
}

pub async fn run(lake: &LakeArg, source: IngestSource) -> anyhow::Result<ExitCode> {
    let lake = lake.open_or_create().await?;
    if let IngestSource::SwebenchResults { under, paths } = source {
        return swebench_results(&lake, under, paths).await;
    }
    let mut players = crate::source::albedo::Players::default();
    let (kind, paths) = match source {
        IngestSource::Albedo {
            no_verify,
            dashboard,
            paths,
        } => {
            if let Some(d) = dashboard {
                players = read_players(&d).await?;
            }
            (InputKind::Albedo { verify: !no_verify }, paths)
        }
        IngestSource::MiniCoder { paths } => (InputKind::MiniCoder, paths),
        IngestSource::Mswea { paths } => (InputKind::Mswea, paths),
        IngestSource::SwebenchResults { .. } => unreachable!("handled above"),
    };
    let paths = paths
        .iter()
        .map(|p| Location::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    let report = ingest(&lake, kind, paths, players)
        .await
        .context("ingest failed")?;
    print_report(&report);
    Ok(if report.nothing_usable() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Who played each run of a dashboard.json, by eval run id.
async fn read_players(at: &str) -> anyhow::Result<crate::source::albedo::Players> {
    let bytes = Location::parse(at)?.read().await?;
    let d = crate::source::dashboard::parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{at}: {}: {}", e.field, e.reason))?;
    for e in &d.refused {
        eprintln!("note: {at}: {}: {} (entry skipped)", e.field, e.reason);
    }
    Ok(std::sync::Arc::new(
        d.runs
            .into_iter()
            .map(|r| (r.eval_run_id.clone(), r))
            .collect(),
    ))
}

/// The closing summary: notes on stderr, counts on stdout.
pub fn print_report(r: &IngestReport) {
    for n in &r.notes {
        eprintln!("note: {n}");
    }
    println!(
        "read {} = written {} + unchanged {} + rejected {}{}",
        r.read,
        r.written,
        r.unchanged,
        r.rejected,
        if r.reconciles() {
            ""
        } else {
            "  (DOES NOT RECONCILE)"
        }
    );
    println!(
        "new rows: {} trajectories, {} turns, {} messages",
        r.trajectories, r.turns, r.messages
    );
    if r.replaced > 0 {
        println!(
            "replaced: {} trajectories of changed files (their rows were dropped)",
            r.replaced
        );
    }
    if r.skipped > 0 {
        println!(
            "skipped: {} entries of the input folders that are not readable regular files (warned about above)",
            r.skipped
        );
    }
    if r.rejected > 0 {
        println!("rejected records are in table `rejects` (turnlake sql \"SELECT input_file, line, field, reason FROM rejects\")");
    }
}

/// `ingest swebench-results`: set the verdicts, print what they matched.
async fn swebench_results(
    lake: &crate::lake::Lake,
    under: Option<String>,
    paths: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let paths = paths
        .iter()
        .map(|p| Location::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    let under = under.as_deref().map(Location::parse).transpose()?;
    let r = crate::pipeline::outcomes::ingest(lake, paths, under)
        .await
        .context("ingest swebench-results failed")?;
    println!(
        "{} reports: {} instances resolved, {} unresolved; verified set on {} mswea trajectories",
        r.reports, r.resolved, r.unresolved, r.trajectories
    );
    if r.skipped > 0 {
        println!(
            "skipped: {} entries of the report folders that are not readable regular files (warned about above)",
            r.skipped
        );
    }
    if r.unmatched > 0 {
        eprintln!(
            "note: {} judged instances have no mswea trajectory in the lake (ingest the runs first, or check --under)",
            r.unmatched
        );
    }
    Ok(ExitCode::SUCCESS)
}
