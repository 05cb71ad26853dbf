//! What a lake commit holds, table by table (version, rows, the step that
//! wrote it), and what changed between two: `snapshot show` and `snapshot
//! diff`, and the web app's lake page.

use serde::Serialize;
use std::collections::BTreeMap;

use super::provenance::Provenance;
use super::PipelineError;
use crate::engine::{self, EngineError};
use crate::lake::{Lake, LakeCommit};

/// One table as a lake commit holds it.
pub struct TableState {
    pub version: u64,
    pub rows: i64,
    /// The command of the last commit that changed the table, and its parameters.
    pub writer: Option<(String, serde_json::Value)>,
}

/// Every table of the lake at `root` as of `at` (a snapshot name, lake
/// version or timestamp), with the commit that is.
pub async fn state(
    root: &str,
    at: &str,
) -> Result<(LakeCommit, BTreeMap<String, TableState>), PipelineError> {
    let lake = Lake::open_as_of(root, at).await?;
    let view = lake.view().await?;
    let commit = view.commit.clone().expect("an --as-of view has its commit");
    let log = lake.log()?;
    let mut history: Vec<LakeCommit> = Vec::new();
    for v in log.versions().await? {
        if v <= commit.version {
            history.push(log.read(v).await?);
        }
    }
    let ctx = engine::session(&lake).await?;
    let mut out = BTreeMap::new();
    for (name, version) in &view.tables {
        let err = EngineError::query(format!("counting {name}"));
        let rows = ctx
            .table(name.as_str())
            .await
            .map_err(&err)?
            .count()
            .await
            .map_err(&err)? as i64;
        // The first commit that recorded this version wrote it.
        let writer = history
            .iter()
            .find(|c| c.tables.get(name) == Some(version))
            .map(|c| (c.command.clone(), c.params.clone()));
        out.insert(
            name.clone(),
            TableState {
                version: *version,
                rows,
                writer,
            },
        );
    }
    Ok((commit, out))
}

/// The parameters and SQL hash a step recorded, without its input versions
/// (those differ whenever the inputs moved, which the table rows already show)
/// or what it measured.
pub fn step_settings(params: &serde_json::Value) -> serde_json::Value {
    match Provenance::recorded(params) {
        Some(p) => serde_json::json!({"params": p.params, "sql_sha256": p.sql_sha256}),
        // Not a step's (ingest records what it read).
        None => serde_json::json!({"params": null, "sql_sha256": null}),
    }
}

/// One table between two lake commits A and B.
#[derive(Debug, Serialize)]
pub struct TableDiff {
    pub table: String,
    pub version_a: Option<i64>,
    pub version_b: Option<i64>,
    pub rows_a: Option<i64>,
    pub rows_b: Option<i64>,
    /// Whether the step that wrote it ran with other settings: same,
    /// changed, new or gone.
    pub settings: &'static str,
}

/// Every table of either commit, by name.
pub fn diff(a: &BTreeMap<String, TableState>, b: &BTreeMap<String, TableState>) -> Vec<TableDiff> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .map(|name| {
            let (x, y) = (a.get(name), b.get(name));
            let settings = match (
                x.and_then(|s| s.writer.as_ref()),
                y.and_then(|s| s.writer.as_ref()),
            ) {
                (Some((_, p)), Some((_, q))) if step_settings(p) != step_settings(q) => "changed",
                (None, Some(_)) => "new",
                (Some(_), None) => "gone",
                _ => "same",
            };
            TableDiff {
                table: name.clone(),
                version_a: x.map(|s| s.version as i64),
                version_b: y.map(|s| s.version as i64),
                rows_a: x.map(|s| s.rows),
                rows_b: y.map(|s| s.rows),
                settings,
            }
        })
        .collect()
}
