//! Where tables live and how they are written: one Delta table per name
//! under a root URL (a local folder or an object-store URL). Every write is an
//! atomic, numbered Delta version; all table I/O goes through object_store.

mod schema;

pub use schema::{table_schema, TableSchema};

use arrow::array::Array;
use arrow::record_batch::RecordBatch;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use std::path::Path;
use url::Url;

#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("unknown table {0:?}")]
    UnknownTable(String),
    #[error("schema file for table {table}: {reason}")]
    Schema { table: String, reason: String },
    #[error("lake root {root:?}: {reason}")]
    Root { root: String, reason: String },
    #[error("table {table}: batch does not match schemas/{table}.json: {reason}")]
    SchemaMismatch { table: String, reason: String },
    #[error("table {table}")]
    Delta {
        table: String,
        #[source]
        source: deltalake::DeltaTableError,
    },
    #[error("listing the lake at {root}")]
    List {
        root: String,
        #[source]
        source: object_store::Error,
    },
}

pub type LakeResult<T> = Result<T, LakeError>;

/// `batch` in the exact shape of the table's schema file: columns picked by
/// name and cast to the declared types; a null in a non-nullable column is an error.
pub fn conform(schema: &TableSchema, batch: &RecordBatch) -> LakeResult<RecordBatch> {
    let mismatch = |reason: String| LakeError::SchemaMismatch {
        table: schema.name.clone(),
        reason,
    };
    let mut columns = Vec::with_capacity(schema.schema.fields().len());
    for field in schema.schema.fields() {
        let col = batch
            .column_by_name(field.name())
            .ok_or_else(|| mismatch(format!("no column {}", field.name())))?;
        let col = if col.data_type() == field.data_type() {
            col.clone()
        } else {
            arrow::compute::cast(col, field.data_type())
                .map_err(|e| mismatch(format!("column {}: {e}", field.name())))?
        };
        if !field.is_nullable() && col.null_count() > 0 {
            return Err(mismatch(format!(
                "column {} holds {} null(s) but is not nullable",
                field.name(),
                col.null_count()
            )));
        }
        columns.push(col);
    }
    RecordBatch::try_new(schema.schema.clone(), columns).map_err(|e| mismatch(e.to_string()))
}

/// Facts about one table for `turnlake tables`.
#[derive(Debug, Clone)]
pub struct TableInfo {
    pub name: String,
    pub version: u64,
    pub partition_by: Vec<String>,
}

/// A lake root: `./lake`, `/abs/path`, `file:///…` or `s3://bucket/prefix`.
#[derive(Debug, Clone)]
pub struct Lake {
    root: Url,
}

impl Lake {
    /// Open (and for a local path, create) the lake at `root`.
    pub fn open(root: &str) -> LakeResult<Lake> {
        let err = |reason: String| LakeError::Root {
            root: root.to_string(),
            reason,
        };
        let url = match Url::parse(root) {
            Ok(u) if u.scheme().len() > 1 => u,
            _ => {
                let path = Path::new(root);
                std::fs::create_dir_all(path).map_err(|e| err(e.to_string()))?;
                let abs = path.canonicalize().map_err(|e| err(e.to_string()))?;
                Url::from_directory_path(&abs).map_err(|_| err("not an absolute path".into()))?
            }
        };
        let mut url = url;
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        Ok(Lake { root: url })
    }

    pub fn root(&self) -> &Url {
        &self.root
    }

    pub fn table_url(&self, name: &str) -> Url {
        self.root
            .join(&format!("{name}/"))
            .expect("table name is a valid url segment")
    }

    /// For a local lake, the table's folder (delta-rs wants it to exist).
    fn local_dir(&self, name: &str) -> Option<std::path::PathBuf> {
        (self.root.scheme() == "file")
            .then(|| self.table_url(name).to_file_path().ok())
            .flatten()
    }

    /// The table at its latest version, or `None` if it was never written.
    pub async fn table(&self, name: &str) -> LakeResult<Option<DeltaTable>> {
        if self.local_dir(name).is_some_and(|d| !d.exists()) {
            return Ok(None);
        }
        let t = DeltaTable::try_from_url(self.table_url(name))
            .await
            .map_err(|source| LakeError::Delta {
                table: name.to_string(),
                source,
            })?;
        Ok(t.version().map(|_| t))
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
        let delta = |source| LakeError::Delta {
            table: name.to_string(),
            source,
        };
        if let Some(dir) = self.local_dir(name) {
            std::fs::create_dir_all(&dir).map_err(|e| LakeError::Root {
                root: dir.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let table = DeltaTable::try_from_url(self.table_url(name))
            .await
            .map_err(delta)?;
        let batches = if batches.is_empty() {
            vec![RecordBatch::new_empty(schema.schema.clone())]
        } else {
            batches
        };
        let mut write = table
            .write(batches)
            .with_save_mode(mode)
            .with_partition_columns(schema.partition_by.clone());
        if let Some(p) = provenance {
            write = write.with_commit_properties(
                CommitProperties::default().with_metadata([("turnlake".to_string(), p)]),
            );
        }
        write.await.map_err(delta)?;
        Ok(())
    }

    /// Delete the rows matching a SQL `predicate`, as one new version.
    pub async fn delete_where(
        &self,
        name: &str,
        predicate: datafusion::prelude::Expr,
    ) -> LakeResult<()> {
        let delta = |source| LakeError::Delta {
            table: name.to_string(),
            source,
        };
        if let Some(table) = self.table(name).await? {
            table
                .delete()
                .with_predicate(predicate)
                .await
                .map_err(delta)?;
        }
        Ok(())
    }

    /// Every table under the root, sorted by name.
    pub async fn tables(&self) -> LakeResult<Vec<TableInfo>> {
        let list_err = |source| LakeError::List {
            root: self.root.to_string(),
            source,
        };
        let (store, prefix) = object_store::parse_url(&self.root).map_err(list_err)?;
        let listing = store
            .list_with_delimiter(Some(&prefix))
            .await
            .map_err(list_err)?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            if let Some(t) = self.table(&name).await? {
                let snapshot = t.snapshot().map_err(|source| LakeError::Delta {
                    table: name.clone(),
                    source,
                })?;
                out.push(TableInfo {
                    name,
                    version: t.version().unwrap_or(0),
                    partition_by: snapshot.metadata().partition_columns().to_vec(),
                });
            }
        }
        Ok(out)
    }
}
