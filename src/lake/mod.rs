//! Where tables live and how a reader sees them: one Delta table per name
//! under a root URL (a local folder or an object-store URL), opened at the
//! versions of one lake commit. Every write (`write`) is an atomic, numbered
//! Delta version; all table I/O goes through object_store.
//!
//! A command that writes takes the lake's writer lock (`Lake::begin`), and
//! its table versions become visible together in one lake commit
//! (`Writer::commit`). Readers see every table at the versions of one lake
//! commit: the latest, or the one `--as-of` names.

pub mod lock;
pub mod log;
pub mod maintain;
mod schema;
pub mod snapshot;
mod stream_source;
mod write;

pub use log::{InputFile, LakeCommit, LakeLog};
pub use schema::{table_schema, TableSchema};
pub use write::{conform, Writer};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

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
    #[error("no lake at {root}: name yours with --lake or TURNLAKE_LAKE, or create one with turnlake ingest")]
    Missing { root: String },
    #[error("table {table}: batch does not match schemas/{table}.json: {reason}")]
    SchemaMismatch { table: String, reason: String },
    #[error("table {table}: computing its rows")]
    Rows {
        table: String,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
    #[error("table {table}")]
    Delta {
        table: String,
        #[source]
        source: Box<deltalake::DeltaTableError>,
    },
    #[error("{}", crate::storage::s3::describe("listing", .root, .error))]
    List {
        root: String,
        error: object_store::Error,
    },
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    #[error("lake log at {root}: {reason}")]
    Log { root: String, reason: String },
    #[error(
        "lake {root}: another writer committed lake version {version} first; run the command again"
    )]
    Conflict { root: String, version: u64 },
    #[error("lake {root} is being written by {holder}; try again when it is done (if that writer died on another machine: turnlake unlock)")]
    Busy { root: String, holder: String },
    #[error("lake {root}: {reason}")]
    AsOf { root: String, reason: String },
    #[error("the lake is opened --as-of an earlier commit: it can be read, not written")]
    ReadOnly,
    #[error("lake {root}: this writer stopped renewing its lock for longer than its lease and another writer took it over; nothing more is committed (run the command again)")]
    LockLost { root: String },
}

impl LakeError {
    /// A Delta error of table `table`.
    pub fn delta(table: &str, source: deltalake::DeltaTableError) -> Self {
        LakeError::Delta {
            table: table.to_string(),
            source: Box::new(source),
        }
    }
}

pub type LakeResult<T> = Result<T, LakeError>;

/// Facts about one table for `turnlake tables`.
#[derive(Debug, Clone)]
pub struct TableInfo {
    pub name: String,
    pub version: u64,
    pub partition_by: Vec<String>,
}

/// Which version of every table a reader sees: one lake commit's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// The lake commit, or `None` for a lake written before the lake log.
    pub commit: Option<LakeCommit>,
    pub tables: BTreeMap<String, u64>,
}

/// A lake root: `./lake`, `/abs/path`, `file:///…` or `s3://bucket/prefix`.
#[derive(Debug, Clone)]
pub struct Lake {
    root: Url,
    /// The view readers use, resolved once (and moved on by this process's commits).
    view: Arc<Mutex<Option<View>>>,
    /// Tables loaded at a version (a version never changes): on S3 each load
    /// is several requests, and a command reads the same tables many times.
    loaded: Arc<Mutex<BTreeMap<(String, u64), DeltaTable>>>,
    /// Set by `--as-of`: the lake is read at that commit and cannot be written.
    pinned: bool,
    /// Set by `--cluster`: the Ballista scheduler that runs this lake's SQL.
    cluster: Option<String>,
}

impl Lake {
    /// Open the lake at `root`, which must exist (a local folder that does
    /// not is an error naming it; a typo must not create a lake).
    pub fn open_existing(root: &str) -> LakeResult<Lake> {
        let local = !matches!(Url::parse(root), Ok(u) if u.scheme().len() > 1);
        if local && !Path::new(root).exists() {
            return Err(LakeError::Missing {
                root: root.to_string(),
            });
        }
        Lake::open(root)
    }

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
        Ok(Lake {
            root: url,
            view: Arc::new(Mutex::new(None)),
            loaded: Arc::default(),
            pinned: false,
            cluster: None,
        })
    }

    /// The lake as of a snapshot name, a lake commit version or an RFC 3339
    /// timestamp (the last commit at or before it): readable, not writable.
    pub async fn open_as_of(root: &str, as_of: &str) -> LakeResult<Lake> {
        let mut lake = Lake::open_existing(root)?;
        let log = lake.log()?;
        let err = |reason: String| LakeError::AsOf {
            root: root.to_string(),
            reason,
        };
        let versions = log.versions().await?;
        let version = if let Ok(v) = as_of.parse::<u64>() {
            if !versions.contains(&v) {
                return Err(err(format!(
                    "no lake commit {v} (the log holds {} commits)",
                    versions.len()
                )));
            }
            v
        } else if let Ok(ts) = chrono::DateTime::parse_from_rfc3339(as_of) {
            let mut found = None;
            for v in &versions {
                let c = log.read(*v).await?;
                let at = chrono::DateTime::parse_from_rfc3339(&c.timestamp)
                    .map_err(|e| err(format!("lake commit {v} has a bad timestamp: {e}")))?;
                if at <= ts {
                    found = Some(*v);
                }
            }
            found.ok_or_else(|| err(format!("no lake commit at or before {as_of}")))?
        } else {
            snapshot::read(&lake, as_of).await?.lake_version
        };
        let commit = log.read(version).await?;
        let view = View {
            tables: commit.tables.clone(),
            commit: Some(commit),
        };
        *lake.view.lock().expect("view lock") = Some(view);
        lake.pinned = true;
        Ok(lake)
    }

    /// The object store of the root and the root's path in it.
    fn store(&self) -> LakeResult<(Arc<dyn object_store::ObjectStore>, object_store::path::Path)> {
        Ok(crate::storage::store_for(&self.root)?)
    }

    /// A builder for table `name`; a remote lake's tables share the lake's
    /// store (its credentials, timeouts, retries and conditional writes).
    fn delta_builder(&self, name: &str) -> LakeResult<deltalake::DeltaTableBuilder> {
        let url = self.table_url(name);
        let delta = |source| LakeError::delta(name, source);
        let builder = deltalake::DeltaTableBuilder::from_url(url.clone()).map_err(delta)?;
        if self.root.scheme() == "file" {
            return Ok(builder);
        }
        let (store, _) = self.store()?;
        Ok(builder.with_storage_backend(store, url))
    }

    /// Table `name` at its newest version, or uninitialized where it has no log yet.
    async fn load_or_new(&self, name: &str) -> LakeResult<DeltaTable> {
        let delta = |source| LakeError::delta(name, source);
        let mut table = self.delta_builder(name)?.build().map_err(delta)?;
        match table.load().await {
            Ok(()) | Err(deltalake::DeltaTableError::NotATable(_)) => Ok(table),
            Err(e) => Err(delta(e)),
        }
    }

    pub fn log(&self) -> LakeResult<LakeLog> {
        let (store, prefix) = self.store()?;
        Ok(LakeLog::new(store, &prefix, self.root.as_str()))
    }

    /// What readers see: the pinned or latest lake commit's table versions
    /// (for a lake from before the lake log, each table's newest version).
    pub async fn view(&self) -> LakeResult<View> {
        if let Some(v) = self.view.lock().expect("view lock").clone() {
            return Ok(v);
        }
        let view = match self.log()?.latest().await? {
            Some(commit) => View {
                tables: commit.tables.clone(),
                commit: Some(commit),
            },
            None => View {
                commit: None,
                tables: self.newest_versions().await?,
            },
        };
        *self.view.lock().expect("view lock") = Some(view.clone());
        Ok(view)
    }

    /// The table folders under the root (turnlake's own `_turnlake` excluded).
    async fn table_names(&self) -> LakeResult<Vec<String>> {
        let list_err = |source| LakeError::List {
            root: self.root.to_string(),
            error: source,
        };
        let (store, prefix) = self.store()?;
        let listing = store
            .list_with_delimiter(Some(&prefix))
            .await
            .map_err(list_err)?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .filter(|n| !n.starts_with('_') && !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Each table's newest Delta version, committed to the lake or not.
    /// One listing of each table's `_delta_log/` (its newest commit file
    /// names the version), not a table load: on S3 a load is several requests.
    async fn newest_versions(&self) -> LakeResult<BTreeMap<String, u64>> {
        use futures::TryStreamExt;
        let (store, prefix) = self.store()?;
        let mut out = BTreeMap::new();
        for name in self.table_names().await? {
            let dir = prefix.clone().join(name.as_str()).join("_delta_log");
            let listed: Vec<object_store::ObjectMeta> = store
                .list(Some(&dir))
                .try_collect()
                .await
                .map_err(|error| LakeError::List {
                    root: self.table_url(&name).to_string(),
                    error,
                })?;
            let newest = listed
                .iter()
                .filter_map(|m| m.location.filename()?.strip_suffix(".json"))
                .filter(|n| n.len() == 20)
                .filter_map(|n| n.parse::<u64>().ok())
                .max();
            if let Some(v) = newest {
                out.insert(name, v);
            }
        }
        Ok(out)
    }

    /// Opened `--as-of` an earlier commit: readable, not writable.
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Run this lake's SQL on the Ballista cluster at `url` (`df://host:port`).
    pub fn with_cluster(mut self, url: Option<String>) -> Lake {
        self.cluster = url;
        self
    }

    /// The cluster this lake's SQL runs on, if any.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
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

    /// The table as readers see it (at the view's version), or `None` if the
    /// view has no such table.
    pub async fn table(&self, name: &str) -> LakeResult<Option<DeltaTable>> {
        let Some(version) = self.view().await?.tables.get(name).copied() else {
            return Ok(None);
        };
        self.table_at(name, version).await.map(Some)
    }

    /// `name` at `version`, loaded once per process.
    pub async fn table_at(&self, name: &str, version: u64) -> LakeResult<DeltaTable> {
        let key = (name.to_string(), version);
        if let Some(t) = self.loaded.lock().expect("table cache").get(&key) {
            return Ok(t.clone());
        }
        let t = self
            .delta_builder(name)?
            .with_version(version)
            .load()
            .await
            .map_err(|source| LakeError::delta(name, source))?;
        self.loaded
            .lock()
            .expect("table cache")
            .insert(key, t.clone());
        Ok(t)
    }

    /// Where table `name` lives, as other engines open it: a path for a
    /// local lake, a URL otherwise.
    pub fn table_location(&self, name: &str) -> String {
        match self.local_dir(name) {
            // Collected from its components: without the URL's trailing `/`.
            Some(dir) => dir
                .components()
                .collect::<std::path::PathBuf>()
                .display()
                .to_string(),
            None => self.table_url(name).to_string(),
        }
    }

    /// The data files of `name` at `version`, each as [`Self::table_location`]
    /// gives its table, sorted: what an engine that reads Parquet (not the
    /// Delta log) reads to see exactly that version.
    pub async fn data_files(&self, name: &str, version: u64) -> LakeResult<Vec<String>> {
        let table = self.table_at(name, version).await?;
        let snapshot = table
            .snapshot()
            .map_err(|source| LakeError::delta(name, source))?;
        let mut files: Vec<String> = snapshot
            .log_data()
            .iter()
            .map(|f| {
                let rel = f.object_store_path();
                match self.local_dir(name) {
                    Some(dir) => rel
                        .parts()
                        .fold(dir, |d, p| d.join(p.as_ref()))
                        .display()
                        .to_string(),
                    None => format!("{}{rel}", self.table_url(name)),
                }
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// The size of every file under a table's folder, by its path relative to the table.
    async fn file_sizes(&self, name: &str) -> LakeResult<BTreeMap<String, u64>> {
        use futures::TryStreamExt;
        let (store, prefix) = self.store()?;
        let dir = prefix.clone().join(name);
        let metas: Vec<object_store::ObjectMeta> = store
            .list(Some(&dir))
            .try_collect()
            .await
            .map_err(|source| LakeError::List {
                root: self.table_url(name).to_string(),
                error: source,
            })?;
        let base = format!("{}/", dir.as_ref());
        Ok(metas
            .into_iter()
            .map(|m| {
                let p = m.location.as_ref();
                (p.strip_prefix(&base).unwrap_or(p).to_string(), m.size)
            })
            .collect())
    }

    /// The table at its newest Delta version, committed or not (for writers and recovery).
    async fn newest(&self, name: &str) -> LakeResult<Option<DeltaTable>> {
        if self.local_dir(name).is_some_and(|d| !d.exists()) {
            return Ok(None);
        }
        let t = self.load_or_new(name).await?;
        Ok(t.version().map(|_| t))
    }

    /// Every table of the view, sorted by name.
    pub async fn tables(&self) -> LakeResult<Vec<TableInfo>> {
        let view = self.view().await?;
        let mut out = Vec::new();
        for name in view.tables.keys() {
            if let Some(t) = self.table(name).await? {
                let snapshot = t
                    .snapshot()
                    .map_err(|source| LakeError::delta(name, source))?;
                out.push(TableInfo {
                    name: name.clone(),
                    version: t.version().unwrap_or(0),
                    partition_by: snapshot.metadata().partition_columns().to_vec(),
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Int32Array, StringArray};
    use arrow::record_batch::RecordBatch;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// Text zstd only halves: hex digits of a xorshift sequence.
    fn noise(rows: usize, chars: usize) -> Vec<String> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..rows)
            .map(|_| {
                (0..chars)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        char::from_digit((x % 16) as u32, 16).unwrap()
                    })
                    .collect()
            })
            .collect()
    }

    #[tokio::test]
    async fn a_lake_write_ends_its_row_groups_at_the_byte_bound() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path().join("lake").to_str().unwrap()).unwrap();
        // Hex noise of 4 bounds' worth: about 2 bounds once compressed.
        let rows = 4 * crate::output::ROW_GROUP_BYTES / 128;
        let reasons = noise(rows, 128);
        let schema = table_schema("gate_demotions").unwrap();
        let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as arrow::array::ArrayRef;
        let batch = RecordBatch::try_new(
            schema.schema.clone(),
            vec![
                text(vec!["m".to_string(); rows]),
                text((0..rows).map(|i| format!("m/{i:06}")).collect()),
                text(vec!["t".to_string(); rows]),
                Arc::new(Int32Array::from(vec![1; rows])),
                text(reasons),
                Arc::new(BooleanArray::from(vec![false; rows])),
            ],
        )
        .unwrap();
        let writer = lake.begin("look", serde_json::json!({})).await.unwrap();
        lake.append("gate_demotions", vec![batch]).await.unwrap();
        writer.finish().await.unwrap();

        let mut groups = Vec::new();
        for entry in std::fs::read_dir(dir.path().join("lake/gate_demotions")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "parquet") {
                let reader =
                    SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
                for g in reader.metadata().row_groups() {
                    groups.push((g.num_rows(), g.compressed_size()));
                }
            }
        }
        assert_eq!(groups.iter().map(|g| g.0).sum::<i64>(), rows as i64);
        assert!(
            groups.len() >= 2,
            "one row group for the whole write: {groups:?}"
        );
        for (_, bytes) in &groups {
            assert!(
                *bytes as usize <= crate::output::ROW_GROUP_BYTES,
                "{groups:?}"
            );
        }
    }
}
