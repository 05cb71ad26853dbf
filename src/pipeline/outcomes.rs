//! `turnlake ingest swebench-results`: the SWE-bench harness's (or sb-cli's)
//! verdicts on one's own runs set `trajectories.verified` of the matching
//! mini-swe-agent trajectories, by instance id (and, with `--under`, only
//! those whose files lie under a folder: one batch run). Each report's rows
//! are kept in `swebench_results` with its file and time; a later report of
//! an instance replaces an earlier one's verdict.

use datafusion::functions::expr_fn::starts_with;
use datafusion::prelude::{col, lit, Expr};
use serde::Serialize;
use std::collections::BTreeMap;

use super::PipelineError;
use crate::columns::{i64s, strings};
use crate::engine;
use crate::lake::{table_schema, InputFile, Lake};
use crate::source::{mswea, swebench};
use crate::storage::{Location, StorageError};

pub const TABLE: &str = "swebench_results";

/// What an ingest of reports did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OutcomeReport {
    pub reports: u64,
    pub resolved: u64,
    pub unresolved: u64,
    /// mswea trajectories whose `verified` was set.
    pub trajectories: u64,
    /// Judged instances no mswea trajectory has.
    pub unmatched: u64,
    /// Entries of the report folders the walk skipped (each warned about).
    pub skipped: u64,
}

#[derive(Serialize)]
struct ResultRow<'a> {
    report_file: &'a str,
    report_sha: &'a str,
    ingested_at: &'a str,
    run_id: Option<&'a str>,
    under: Option<&'a str>,
    instance_id: &'a str,
    resolved: bool,
    trajectories: i64,
}

/// The report files `paths` name: a file as given, a folder's `report.json`
/// files (the harness's per-instance layout), in path order; and how many
/// entries the walks skipped.
async fn report_files(
    paths: &[Location],
) -> Result<(Vec<crate::storage::Entry>, u64), StorageError> {
    let mut out = Vec::new();
    let mut skipped = 0;
    for p in paths {
        let listing = p.list().await?;
        skipped += listing.skipped;
        out.extend(listing.entries.into_iter().filter(|e| {
            e.location.same(p) || e.location.file_name().as_deref() == Some("report.json")
        }));
    }
    Ok((out, skipped))
}

/// The mswea trajectories an outcome applies to: by instance, under a folder.
fn scope(instances: &[&str], under: Option<&str>) -> Expr {
    let ids = instances.iter().map(|i| lit(*i)).collect();
    let matching = col("source")
        .eq(lit(mswea::SOURCE))
        .and(col("instance_id").in_list(ids, false));
    match under {
        Some(folder) => matching.and(starts_with(col("input_file"), lit(folder))),
        None => matching,
    }
}

/// Ingest the reports at `paths` into `lake`.
pub async fn ingest(
    lake: &Lake,
    paths: Vec<Location>,
    under: Option<Location>,
) -> Result<OutcomeReport, PipelineError> {
    let (files, skipped) = report_files(&paths).await?;
    if files.is_empty() {
        return Err(PipelineError::Reader(format!(
            "no SWE-bench report under {}",
            paths
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // Every report is read and checked before the lake is touched.
    let mut reports = Vec::new();
    let mut inputs = Vec::new();
    for f in &files {
        let bytes = f.location.read().await?;
        let path = f.location.to_string();
        let report = swebench::parse(&bytes, &path).map_err(|e| {
            let at = if e.field.is_empty() {
                String::new()
            } else {
                format!(", field {}", e.field)
            };
            PipelineError::Reader(format!("{path}{at}: {}", e.reason))
        })?;
        let sha = crate::digest::sha256_hex(&bytes);
        inputs.push(InputFile {
            path: path.clone(),
            size: bytes.len() as u64,
            sha256: Some(sha.clone()),
            etag: None,
        });
        reports.push((
            path,
            sha[..crate::digest::STORED_SHA_HEX].to_string(),
            report,
        ));
    }
    // The latest report of each instance decides it.
    let mut verdicts: BTreeMap<&str, bool> = BTreeMap::new();
    for (_, _, r) in &reports {
        for (id, resolved) in &r.outcomes {
            verdicts.insert(id, *resolved);
        }
    }
    let under = under.map(|u| u.to_string());
    let mut writer = lake
        .begin(
            "ingest swebench-results",
            serde_json::json!({"paths": paths, "under": under}),
        )
        .await?;
    let counts = trajectories_per_instance(lake, &verdicts, under.as_deref()).await?;
    let mut out = OutcomeReport {
        reports: reports.len() as u64,
        skipped,
        ..Default::default()
    };
    for resolved in [true, false] {
        let ids: Vec<&str> = verdicts
            .iter()
            .filter(|(id, r)| **r == resolved && counts.contains_key(**id))
            .map(|(id, _)| *id)
            .collect();
        if !ids.is_empty() {
            lake.update_where(
                "trajectories",
                scope(&ids, under.as_deref()),
                "verified",
                lit(resolved),
            )
            .await?;
        }
    }
    for (id, resolved) in &verdicts {
        match resolved {
            true => out.resolved += 1,
            false => out.unresolved += 1,
        }
        match counts.get(*id) {
            Some(n) => out.trajectories += *n as u64,
            None => out.unmatched += 1,
        }
    }
    let now = crate::lake::lock::now_rfc3339();
    let rows: Vec<ResultRow> = reports
        .iter()
        .flat_map(|(file, sha, r)| {
            let (now, under, counts) = (&now, &under, &counts);
            r.outcomes.iter().map(move |(id, resolved)| ResultRow {
                report_file: file,
                report_sha: sha,
                ingested_at: now,
                run_id: r.run_id.as_deref(),
                under: under.as_deref(),
                instance_id: id,
                resolved: *resolved,
                trajectories: counts.get(id.as_str()).copied().unwrap_or(0),
            })
        })
        .collect();
    let fields = table_schema(TABLE)?.schema.fields().to_vec();
    let batch = serde_arrow::to_record_batch(&fields, &rows)
        .map_err(|e| PipelineError::Reader(format!("building {TABLE} rows: {e}")))?;
    lake.append(TABLE, vec![batch]).await?;
    writer.add_inputs(inputs);
    writer.finish().await?;
    Ok(out)
}

/// How many mswea trajectories (under `under`) each judged instance has.
async fn trajectories_per_instance(
    lake: &Lake,
    verdicts: &BTreeMap<&str, bool>,
    under: Option<&str>,
) -> Result<BTreeMap<String, i64>, PipelineError> {
    if !lake.view().await?.tables.contains_key("trajectories") || verdicts.is_empty() {
        return Ok(BTreeMap::new());
    }
    let ctx = engine::session(lake).await?;
    let ids: Vec<&str> = verdicts.keys().copied().collect();
    let context = "counting the reports' trajectories";
    let frame = ctx
        .table("trajectories")
        .await
        .and_then(|t| t.filter(scope(&ids, under)))
        .and_then(|t| {
            t.aggregate(
                vec![col("instance_id")],
                vec![datafusion::functions_aggregate::count::count(lit(1)).alias("n")],
            )
        })
        .map_err(engine::EngineError::query(context))?;
    let batches = frame
        .collect()
        .await
        .map_err(engine::EngineError::query(context))?;
    Ok(strings(&batches, "instance_id")
        .into_iter()
        .zip(i64s(&batches, "n"))
        .filter_map(|(id, n)| Some((id?, n?)))
        .collect())
}
