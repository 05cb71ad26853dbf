//! Writing the lake: the writer lock and its recovery (`Lake::begin`), table
//! writes as whole Delta versions checked against the schema files, and the
//! `Writer` whose commits make a command's table versions visible together.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::operations::write::{SchemaMode, WriteBuilder};
use deltalake::protocol::SaveMode;

use super::stream_source::{ConformedStream, StreamOutcome};
use super::{
    lock, table_schema, InputFile, Lake, LakeCommit, LakeError, LakeResult, TableSchema, View,
};

/// `batch` in the exact shape of the table's schema file: columns picked by
/// name and cast to the declared types; a null in a non-nullable column is an error.
pub fn conform(schema: &TableSchema, batch: &RecordBatch) -> LakeResult<RecordBatch> {
    crate::columns::conform(&schema.schema, batch).map_err(|reason| LakeError::SchemaMismatch {
        table: schema.name.clone(),
        reason,
    })
}

impl Lake {
    /// Take the writer lock for `command` and make the tables agree with the
    /// latest lake commit again: a table version a dead writer left past it
    /// is restored to the committed version, a table it created is removed.
    pub async fn begin(&self, command: &str, params: serde_json::Value) -> LakeResult<Writer> {
        if self.pinned {
            return Err(LakeError::ReadOnly);
        }
        let (store, prefix) = self.store()?;
        let lock =
            lock::WriterLock::acquire(store.clone(), &prefix, self.root.as_str(), command).await?;
        let latest = self.log()?.latest().await?;
        let newest = self.newest_versions().await?;
        let mut restored = Vec::new();
        if let Some(commit) = &latest {
            for (name, version) in &newest {
                match commit.tables.get(name) {
                    Some(v) if v < version => {
                        self.restore(name, *v).await?;
                        restored.push(format!("{name} {version} -> {v}"));
                    }
                    Some(_) => {}
                    None => {
                        self.remove_table(&store, &prefix, name).await?;
                        restored.push(format!("{name} (uncommitted) removed"));
                    }
                }
            }
        }
        *self.view.lock().expect("view lock") = None;
        let mut writer = Writer {
            lake: self.clone(),
            lock: Some(lock),
            command: command.to_string(),
            params,
            inputs: Vec::new(),
            restored,
        };
        // A restore is itself a new table version: record it at once, so the
        // next writer finds nothing to undo. A lake without a log gets its
        // first commit here: empty for a new lake (so a first command that
        // dies leaves nothing visible), adopting the tables of a lake written
        // before the lake log as they are.
        if !writer.restored.is_empty() || latest.is_none() {
            writer.commit().await?;
        }
        Ok(writer)
    }

    /// Remove the writer lock whoever holds it; the holder it removed, if any.
    pub async fn unlock(&self) -> LakeResult<Option<lock::Holder>> {
        let (store, prefix) = self.store()?;
        lock::force_unlock(store, &prefix)
            .await
            .map_err(|source| LakeError::List {
                root: self.root.to_string(),
                error: source,
            })
    }

    async fn restore(&self, name: &str, version: u64) -> LakeResult<()> {
        let table = self
            .newest(name)
            .await?
            .ok_or_else(|| LakeError::UnknownTable(name.to_string()))?;
        table
            .restore()
            .with_version_to_restore(version)
            .await
            .map_err(|source| LakeError::delta(name, source))?;
        Ok(())
    }

    async fn remove_table(
        &self,
        store: &Arc<dyn object_store::ObjectStore>,
        prefix: &object_store::path::Path,
        name: &str,
    ) -> LakeResult<()> {
        use futures::TryStreamExt;
        use object_store::ObjectStoreExt;
        let dir = prefix.clone().join(name);
        let err = |source| LakeError::List {
            root: self.table_url(name).to_string(),
            error: source,
        };
        let mut files: Vec<object_store::ObjectMeta> =
            store.list(Some(&dir)).try_collect().await.map_err(err)?;
        // The Delta log first, newest entry first, so a crash part-way leaves a
        // table that is either still whole up to a version or gone.
        files.sort_by_key(|f| {
            let p = f.location.as_ref().to_string();
            (!p.contains("/_delta_log/"), std::cmp::Reverse(p))
        });
        for f in files {
            store.delete(&f.location).await.map_err(err)?;
        }
        if let Some(d) = self.local_dir(name) {
            let _ = std::fs::remove_dir_all(d);
        }
        Ok(())
    }

    /// Append rows as one new version (creating the table on first write).
    pub async fn append(&self, name: &str, batches: Vec<RecordBatch>) -> LakeResult<()> {
        self.write(name, batches, SaveMode::Append, None).await
    }

    /// Replace the table's rows as one new version, recording `provenance`
    /// (inputs, parameters, SQL) in the commit.
    pub async fn overwrite(
        &self,
        name: &str,
        batches: Vec<RecordBatch>,
        provenance: serde_json::Value,
    ) -> LakeResult<()> {
        self.write(name, batches, SaveMode::Overwrite, Some(provenance))
            .await
    }

    /// Replace the table's rows with those `rows` yields, written as they
    /// come (never held together), as one new version recording `provenance`.
    /// Returns how many rows were written. If `rows` fails, no version is
    /// committed (files already written stay unreferenced until `vacuum`).
    pub async fn overwrite_stream(
        &self,
        name: &str,
        rows: impl futures::Stream<Item = datafusion::error::Result<RecordBatch>> + Send + 'static,
        provenance: serde_json::Value,
    ) -> LakeResult<usize> {
        let schema = table_schema(name)?;
        let outcome = Arc::new(StreamOutcome::default());
        let source = ConformedStream::new(schema.clone(), rows, Arc::clone(&outcome));
        let plan = source.into_plan().map_err(|source| LakeError::Delta {
            table: name.to_string(),
            source: Box::new(source.into()),
        })?;
        let written = self
            .write_input(
                name,
                &schema,
                |w| w.with_input_plan(plan),
                SaveMode::Overwrite,
                Some(provenance),
            )
            .await;
        // A failed input is reported as itself, its causes and all.
        match (written, outcome.take_failure()) {
            (Ok(()), _) => Ok(outcome.written()),
            (Err(_), Some(failure)) => Err(LakeError::Rows {
                table: name.to_string(),
                source: Box::new(failure),
            }),
            (Err(e), None) => Err(e),
        }
    }

    async fn write(
        &self,
        name: &str,
        batches: Vec<RecordBatch>,
        mode: SaveMode,
        provenance: Option<serde_json::Value>,
    ) -> LakeResult<()> {
        let schema = table_schema(name)?;
        let batches = batches
            .iter()
            .map(|b| conform(&schema, b))
            .collect::<LakeResult<Vec<_>>>()?;
        if batches.iter().all(|b| b.num_rows() == 0) && mode == SaveMode::Append {
            return Ok(());
        }
        let batches = if batches.is_empty() {
            vec![RecordBatch::new_empty(schema.schema.clone())]
        } else {
            batches
        };
        self.write_input(
            name,
            &schema,
            |w| w.with_input_batches(batches),
            mode,
            provenance,
        )
        .await
    }

    /// One Delta write of `name`, its rows given by `input`.
    async fn write_input(
        &self,
        name: &str,
        schema: &TableSchema,
        input: impl FnOnce(WriteBuilder) -> WriteBuilder,
        mode: SaveMode,
        provenance: Option<serde_json::Value>,
    ) -> LakeResult<()> {
        let delta = |source| LakeError::delta(name, source);
        if let Some(dir) = self.local_dir(name) {
            std::fs::create_dir_all(&dir).map_err(|e| LakeError::Root {
                root: dir.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let table = self.load_or_new(name).await?;
        // Snapshots and manifests name old versions: keep every table's log
        // (delta-rs would otherwise drop log files past 30 days at a checkpoint).
        // One partition: rows land in the files in the order they come (more
        // would deal batches round-robin to parallel streams).
        let one_partition = std::collections::HashMap::from([(
            "datafusion.execution.target_partitions".to_string(),
            "1".to_string(),
        )]);
        let session = deltalake::delta_datafusion::DeltaSessionContext::new_with_session_overrides(
            &one_partition,
        )
        .map_err(delta)?;
        // A table written before its schema file gained a nullable column
        // takes it on: rows added merge it in (at the end), rows replaced
        // take the schema file's as it is (the lake's writes replace whole
        // tables).
        let schema_mode = match mode {
            SaveMode::Overwrite => SchemaMode::Overwrite,
            _ => SchemaMode::Merge,
        };
        let mut write = input(table.write(Vec::new()))
            .with_session_state(Arc::new(session.state()))
            .with_save_mode(mode)
            .with_schema_mode(schema_mode)
            .with_partition_columns(schema.partition_by.clone())
            .with_configuration([("delta.enableExpiredLogCleanup", Some("false"))])
            .with_writer_properties(crate::output::parquet_properties());
        if let Some(p) = provenance {
            write = write.with_commit_properties(
                CommitProperties::default().with_metadata([("turnlake".to_string(), p)]),
            );
        }
        write.await.map_err(delta)?;
        crate::failpoint::hit(&format!("after-table-write:{name}"));
        Ok(())
    }

    /// Delete the rows matching a SQL `predicate`, as one new version.
    pub async fn delete_where(
        &self,
        name: &str,
        predicate: datafusion::prelude::Expr,
    ) -> LakeResult<()> {
        if let Some(table) = self.newest(name).await? {
            table
                .delete()
                .with_predicate(predicate)
                .await
                .map_err(|e| LakeError::delta(name, e))?;
        }
        Ok(())
    }

    /// Set `column` to `value` in the rows matching `predicate`, as one new version.
    pub async fn update_where(
        &self,
        name: &str,
        predicate: datafusion::prelude::Expr,
        column: &str,
        value: datafusion::prelude::Expr,
    ) -> LakeResult<()> {
        if let Some(table) = self.newest(name).await? {
            table
                .update()
                .with_predicate(predicate)
                .with_update(column, value)
                .await
                .map_err(|e| LakeError::delta(name, e))?;
        }
        Ok(())
    }
}

/// A command's hold on the lake: its table writes become visible together in
/// each `commit`, and nothing it wrote after its last commit survives it.
#[derive(Debug)]
pub struct Writer {
    lake: Lake,
    lock: Option<lock::WriterLock>,
    command: String,
    params: serde_json::Value,
    inputs: Vec<InputFile>,
    /// What recovery undid before this writer started, for the user to hear.
    pub restored: Vec<String>,
}

impl Writer {
    /// What the next commit records as the command's parameters.
    pub fn set_params(&mut self, params: serde_json::Value) {
        self.params = params;
    }

    /// Input files this command read, recorded in its next commit.
    pub fn add_inputs(&mut self, inputs: impl IntoIterator<Item = InputFile>) {
        self.inputs.extend(inputs);
    }

    /// Record the newest version of every table as the next lake commit.
    pub async fn commit(&mut self) -> LakeResult<LakeCommit> {
        let log = self.lake.log()?;
        let version = log.latest().await?.map_or(0, |c| c.version + 1);
        let commit = LakeCommit {
            version,
            timestamp: lock::now_rfc3339(),
            command: self.command.clone(),
            params: self.params.clone(),
            inputs: std::mem::take(&mut self.inputs),
            tables: self.lake.newest_versions().await?,
            turnlake: env!("CARGO_PKG_VERSION").to_string(),
        };
        crate::failpoint::hit("before-lake-commit");
        crate::failpoint::pause("before-lake-commit").await;
        if self.lock.as_ref().is_some_and(|l| l.is_lost()) {
            return Err(LakeError::LockLost {
                root: self.lake.root.to_string(),
            });
        }
        log.write(&commit).await?;
        *self.lake.view.lock().expect("view lock") = Some(View {
            tables: commit.tables.clone(),
            commit: Some(commit.clone()),
        });
        Ok(commit)
    }

    /// Commit what is left and release the lock.
    pub async fn finish(mut self) -> LakeResult<LakeCommit> {
        let commit = self.commit().await?;
        self.release().await?;
        Ok(commit)
    }

    /// Release the lock without another commit (after a final `commit`).
    pub async fn release(mut self) -> LakeResult<()> {
        match self.lock.take() {
            Some(lock) => lock.release().await,
            None => Ok(()),
        }
    }
}
