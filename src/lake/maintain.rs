//! Maintenance: `optimize` compacts the small files every ingest flush adds;
//! `vacuum` deletes data files no longer needed. Both run under the writer
//! lock and end in one lake commit; vacuum keeps every file that a named
//! snapshot or the latest lake commit still reads.

use std::collections::{BTreeMap, BTreeSet};

use super::{snapshot, Lake, LakeError, LakeResult};

/// What one maintenance command did, per table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// table -> (files added, files removed or deleted)
    pub tables: BTreeMap<String, (u64, u64)>,
    /// Bytes of data files deleted (vacuum).
    pub bytes_freed: u64,
}

fn delta(name: &str) -> impl Fn(deltalake::DeltaTableError) -> LakeError + '_ {
    move |source| LakeError::delta(name, source)
}

/// Compact every table's small files into larger ones (one new version each).
pub async fn optimize(lake: &Lake) -> LakeResult<Maintenance> {
    let writer = lake.begin("optimize", serde_json::json!({})).await?;
    let mut out = Maintenance::default();
    for name in lake.view().await?.tables.keys() {
        let Some(table) = lake.newest(name).await? else {
            continue;
        };
        let (_, metrics) = table
            .optimize()
            .with_writer_properties(crate::output::parquet_properties())
            .await
            .map_err(delta(name))?;
        out.tables.insert(
            name.clone(),
            (metrics.num_files_added, metrics.num_files_removed),
        );
    }
    writer.finish().await?;
    Ok(out)
}

/// Delete data files older than `retention_hours` that neither a named
/// snapshot nor the latest lake commit reads.
pub async fn vacuum(lake: &Lake, retention_hours: i64) -> LakeResult<Maintenance> {
    let writer = lake
        .begin(
            "vacuum",
            serde_json::json!({"retention_hours": retention_hours}),
        )
        .await?;
    let log = lake.log()?;
    // Every lake commit that must stay readable, and so every table version.
    let mut keep_commits: BTreeSet<u64> = snapshot::list(lake)
        .await?
        .into_iter()
        .map(|s| s.lake_version)
        .collect();
    if let Some(latest) = log.latest().await? {
        keep_commits.insert(latest.version);
    }
    let mut keep: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for v in keep_commits {
        for (table, version) in log.read(v).await?.tables {
            keep.entry(table).or_default().insert(version);
        }
    }
    let mut out = Maintenance::default();
    for name in lake.view().await?.tables.keys() {
        let Some(table) = lake.newest(name).await? else {
            continue;
        };
        let versions: Vec<u64> = keep
            .get(name)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let sizes = lake.file_sizes(name).await?;
        let (_, metrics) = table
            .vacuum()
            .with_retention_period(chrono::Duration::hours(retention_hours))
            .with_enforce_retention_duration(false)
            .with_keep_versions(&versions)
            .with_mode(deltalake::operations::vacuum::VacuumMode::Full)
            .await
            .map_err(delta(name))?;
        out.bytes_freed += metrics
            .files_deleted
            .iter()
            .filter_map(|f| sizes.get(f.trim_start_matches('/')))
            .sum::<u64>();
        out.tables
            .insert(name.clone(), (0, metrics.files_deleted.len() as u64));
    }
    writer.finish().await?;
    Ok(out)
}
