//! `turnlake harvest DASHBOARD --out DIR|s3://bucket/prefix`: the judge
//! artifacts of the dashboard's eval runs, fetched resumably into one
//! folder per run that `ingest albedo` reads.

use anyhow::Context;
use clap::Args;
use comfy_table::Table;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use crate::pipeline::harvest::{self, HarvestOptions, RunOutcome, EXTRAS};
use crate::source::dashboard::{self, DashboardRun};
use crate::storage::Location;

#[derive(Debug, Args)]
pub struct HarvestArgs {
    /// The dashboard's index of eval runs: a dashboard.json file or its http(s) URL.
    pub dashboard: String,
    /// The folder (local or s3://bucket/prefix) each run's folder goes in.
    #[arg(long)]
    pub out: Option<String>,
    /// Only runs finished on or after this date (2026-08-01, or an RFC 3339 time).
    #[arg(long)]
    pub since: Option<String>,
    /// Only these eval run ids.
    #[arg(long, value_delimiter = ',')]
    pub runs: Vec<String>,
    /// At most this many runs (after the other filters, in the dashboard's order).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Also fetch these artifacts where a run lists them: progress, logs, transcript, judge.
    #[arg(long = "with", value_delimiter = ',')]
    pub with: Vec<String>,
    /// Downloads at a time.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
    /// How long a connection may stay silent before the attempt fails (30s, 2s, 500ms, 1m).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Further attempts after a transient failure, with doubling waits from 1s.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
    /// List the runs and the files that would be fetched; fetch nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `30s`, `500ms`, `2m`, or a number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = n.parse().map_err(|_| format!("not a duration: {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("not a duration: {s:?} (use ms, s or m)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

pub async fn run(args: HarvestArgs) -> anyhow::Result<ExitCode> {
    for flag in &args.with {
        anyhow::ensure!(
            EXTRAS.iter().any(|(f, _, _)| f == flag),
            "--with {flag}: not an artifact harvest knows (progress, logs, transcript, judge)"
        );
    }
    let client = harvest::client(args.timeout)?;
    let bytes = read_dashboard(&client, &args.dashboard, args.timeout).await?;
    let parsed = dashboard::parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {}: {}", args.dashboard, e.field, e.reason))?;
    for e in &parsed.refused {
        eprintln!(
            "note: {}: {}: {} (run skipped)",
            args.dashboard, e.field, e.reason
        );
    }
    let runs = chosen(parsed.runs, &args)?;
    let extras: BTreeSet<String> = args.with.iter().cloned().collect();
    if args.dry_run {
        print_plan(&runs, &extras);
        return Ok(ExitCode::SUCCESS);
    }
    let out = Location::parse(
        args.out
            .as_deref()
            .context("give --out DIR (or --dry-run)")?,
    )?;
    let opts = HarvestOptions {
        extras,
        jobs: args.jobs,
        timeout: args.timeout,
        retries: args.retries,
        backoff: Duration::from_secs(1),
    };
    let bar = crate::progress::transfer_bar("harvest");
    let reports = harvest::harvest(&client, &runs, &out, &opts, &bar).await;
    bar.finish_and_clear();

    let mut table = Table::new();
    table.set_header(vec!["eval run", "outcome", "files", "bytes", "failure"]);
    let (mut complete, mut there, mut failed) = (0, 0, 0);
    for r in &reports {
        let row = match &r.outcome {
            RunOutcome::Complete { files, bytes } => {
                complete += 1;
                vec![
                    "complete".into(),
                    files.to_string(),
                    bytes.to_string(),
                    String::new(),
                ]
            }
            RunOutcome::AlreadyThere => {
                there += 1;
                vec![
                    "already there".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]
            }
            RunOutcome::Failed { url, reason } => {
                failed += 1;
                vec![
                    "FAILED".into(),
                    String::new(),
                    String::new(),
                    format!("{url}: {reason}"),
                ]
            }
        };
        let mut cells = vec![r.eval_run_id.clone()];
        cells.extend(row);
        table.add_row(cells);
    }
    println!("{table}");
    println!(
        "harvest: {} runs: {complete} complete, {there} already there, {failed} failed, into {out}",
        reports.len()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The dashboard's bytes, from a file or an http(s) URL.
async fn read_dashboard(
    client: &reqwest::Client,
    at: &str,
    timeout: Duration,
) -> anyhow::Result<Vec<u8>> {
    if at.starts_with("http://") || at.starts_with("https://") {
        let response = tokio::time::timeout(timeout, client.get(at).send())
            .await
            .with_context(|| format!("{at}: no answer within {timeout:?}"))?
            .with_context(|| format!("fetching {at}"))?
            .error_for_status()
            .with_context(|| format!("fetching {at}"))?;
        let bytes = tokio::time::timeout(timeout, response.bytes())
            .await
            .with_context(|| format!("{at}: stalled"))?
            .with_context(|| format!("reading {at}"))?;
        Ok(bytes.to_vec())
    } else {
        Ok(Location::parse(at)?.read().await?)
    }
}

/// The runs the filters keep, in the dashboard's order.
fn chosen(runs: Vec<DashboardRun>, args: &HarvestArgs) -> anyhow::Result<Vec<DashboardRun>> {
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let ids: BTreeSet<&str> = args.runs.iter().map(String::as_str).collect();
    let mut out: Vec<DashboardRun> = runs
        .into_iter()
        .filter(|r| ids.is_empty() || ids.contains(r.eval_run_id.as_str()))
        .filter(|r| {
            since.is_none_or(|s| {
                r.finished_at
                    .as_deref()
                    .and_then(|f| chrono::DateTime::parse_from_rfc3339(f).ok())
                    .is_some_and(|f| f >= s)
            })
        })
        .collect();
    if let Some(n) = args.limit {
        out.truncate(n);
    }
    Ok(out)
}

fn parse_since(s: &str) -> anyhow::Result<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t);
    }
    let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .with_context(|| format!("--since {s}: give a date (2026-08-01) or an RFC 3339 time"))?;
    Ok(day
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc()
        .fixed_offset())
}

/// What a harvest of `runs` would fetch, without fetching it.
fn print_plan(runs: &[DashboardRun], with: &BTreeSet<String>) {
    let mut table = Table::new();
    table.set_header(vec!["eval run", "finished", "challenger", "king", "files"]);
    let mut files = 0;
    for r in runs {
        let listed = harvest::wanted_kinds(r, with)
            .iter()
            .filter(|(kind, _)| r.artifacts.contains_key(*kind))
            .count();
        files += listed;
        table.add_row(vec![
            r.eval_run_id.clone(),
            r.finished_at.clone().unwrap_or_default(),
            r.challenger.model_uri.clone().unwrap_or_default(),
            r.king.model_uri.clone().unwrap_or_default(),
            listed.to_string(),
        ]);
    }
    println!("{table}");
    let models: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| [&r.challenger.model_uri, &r.king.model_uri])
        .filter_map(|m| m.as_deref())
        .collect();
    println!(
        "plan: {} runs, {files} files to fetch, {} models (nothing fetched)",
        runs.len(),
        models.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("2h").is_err());
    }
}
