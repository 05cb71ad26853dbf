//! Where inputs and outputs live: a local path or an object-store URL
//! (`s3://bucket/prefix`, `file:///…`). Commands take a [`Location`] for
//! every raw input, pipeline file and export; the lake root goes through
//! [`store_for`]. S3 is configured from the standard AWS environment (see
//! [`s3`]).
//!
//! Readers run on blocking threads: the `*_blocking` methods stream a remote
//! object through the runtime without holding it whole.

pub mod blocking;
pub mod s3;
mod walk;

pub use walk::Listing;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{location}: {reason}")]
    Invalid { location: String, reason: String },
    #[error("{location}: no such file or folder")]
    NotFound { location: String },
    /// An object-store request that failed: the URL, the operation and what
    /// the server said (the whole of it, so the error is not chained again).
    #[error("{}", s3::describe(.operation, .location, .error))]
    Store {
        operation: &'static str,
        location: String,
        error: object_store::Error,
    },
    /// Bytes that do not decode as the file's format: a reader rejects the
    /// file's rows rather than retrying, unlike a failed request.
    #[error("{location}: {reason}")]
    Undecodable { location: String, reason: String },
    #[error("{location}: {operation}")]
    Io {
        operation: &'static str,
        location: String,
        #[source]
        source: std::io::Error,
    },
}

pub type StorageResult<T> = Result<T, StorageError>;

impl From<StorageError> for std::io::Error {
    fn from(e: StorageError) -> std::io::Error {
        match e {
            StorageError::NotFound { .. } => {
                std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())
            }
            // The cause goes into the text: a plain io::Error keeps no source.
            StorageError::Io { ref source, .. } => std::io::Error::new(
                source.kind(),
                crate::storage::s3::redact(&format!("{e}: {source}")),
            ),
            e => std::io::Error::other(crate::storage::s3::redact(&e.to_string())),
        }
    }
}

/// The object store serving `url` and the path of `url` inside it.
pub fn store_for(url: &Url) -> StorageResult<(Arc<dyn ObjectStore>, StorePath)> {
    match url.scheme() {
        "s3" | "s3a" => {
            let store = s3::store(url)?;
            let path = StorePath::from_url_path(url.path()).map_err(|e| StorageError::Invalid {
                location: url.to_string(),
                reason: e.to_string(),
            })?;
            Ok((store, path))
        }
        _ => object_store::parse_url(url)
            .map(|(s, p)| (Arc::from(s), p))
            .map_err(|error| StorageError::Store {
                operation: "opening",
                location: url.to_string(),
                error,
            }),
    }
}

/// A file or folder: on this machine, or in an object store.
#[derive(Debug, Clone)]
pub enum Location {
    Local(PathBuf),
    Remote(Remote),
}

/// An object or prefix in an object store.
#[derive(Clone)]
pub struct Remote {
    url: Url,
    store: Arc<dyn ObjectStore>,
    path: StorePath,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// One file found under a location, with its size.
#[derive(Debug, Clone)]
pub struct Entry {
    pub location: Location,
    pub size: u64,
    /// The object's ETag (remote objects), recorded instead of a sha256 that
    /// would cost a second download.
    pub etag: Option<String>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Local(p) => write!(f, "{}", p.display()),
            Location::Remote(r) => f.write_str(r.url.as_str()),
        }
    }
}

impl serde::Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::Local(p)
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::Local(p.to_path_buf())
    }
}

impl Location {
    /// A local path, a `file://` URL or an `s3://bucket/key` URL.
    pub fn parse(text: &str) -> StorageResult<Location> {
        let invalid = |reason: String| StorageError::Invalid {
            location: text.to_string(),
            reason,
        };
        match Url::parse(text) {
            Ok(url) if url.scheme() == "file" => url
                .to_file_path()
                .map(Location::Local)
                .map_err(|_| invalid("not a local file URL".into())),
            Ok(url) if matches!(url.scheme(), "s3" | "s3a") => {
                let (store, path) = store_for(&url)?;
                Ok(Location::Remote(Remote { url, store, path }))
            }
            Ok(url) if url.scheme().len() > 1 => Err(invalid(format!(
                "{}:// is not supported (use a local path, file:// or s3://)",
                url.scheme()
            ))),
            _ => Ok(Location::Local(PathBuf::from(text))),
        }
    }

    /// Path segments: an order that is the same for local and remote listings.
    pub fn sort_key(&self) -> Vec<String> {
        match self {
            Location::Local(p) => p
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect(),
            Location::Remote(r) => r.path.parts().map(|p| p.as_ref().to_string()).collect(),
        }
    }

    /// The same file or folder (`runs/` and `runs` are one folder).
    pub fn same(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::Local(a), Location::Local(b)) => a == b,
            (Location::Remote(a), Location::Remote(b)) => {
                a.url.host_str() == b.url.host_str() && a.path == b.path
            }
            _ => false,
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(self, Location::Remote(_))
    }

    pub fn as_local(&self) -> Option<&Path> {
        match self {
            Location::Local(p) => Some(p),
            Location::Remote(_) => None,
        }
    }

    /// `rel` under this location (a path relative to it, `/`-separated;
    /// `..` goes up a folder, as it does on disk).
    pub fn join(&self, rel: &str) -> Location {
        match self {
            Location::Local(p) => Location::Local(p.join(rel)),
            Location::Remote(r) => {
                let mut parts: Vec<object_store::path::PathPart> = r.path.parts().collect();
                for part in rel.split('/') {
                    match part {
                        "" | "." => {}
                        ".." => {
                            parts.pop();
                        }
                        p => parts.push(p.into()),
                    }
                }
                let path: StorePath = parts.into_iter().collect();
                let mut url = r.url.clone();
                url.set_path(&format!("/{}", path.as_ref()));
                Location::Remote(Remote {
                    url,
                    store: r.store.clone(),
                    path,
                })
            }
        }
    }

    /// A path from a file found at this location's folder: relative to it,
    /// unless it is absolute or a URL of its own.
    pub fn resolve(&self, text: &str) -> StorageResult<Location> {
        if Url::parse(text).is_ok_and(|u| u.scheme().len() > 1) || Path::new(text).is_absolute() {
            return Location::parse(text);
        }
        Ok(match self.parent() {
            Some(dir) => dir.join(text),
            None => Location::Local(PathBuf::from(text)),
        })
    }

    pub fn file_name(&self) -> Option<String> {
        match self {
            Location::Local(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Location::Remote(r) => r.path.filename().map(str::to_string),
        }
    }

    pub fn parent(&self) -> Option<Location> {
        match self {
            // `x.toml`'s folder is the empty path, so `x.toml`'s `corpus/` stays `corpus/`.
            Location::Local(p) => Some(Location::Local(
                p.parent().unwrap_or(Path::new("")).to_path_buf(),
            )),
            Location::Remote(r) => {
                let parts: Vec<_> = r.path.parts().collect();
                let path: StorePath = parts[..parts.len().saturating_sub(1)]
                    .iter()
                    .cloned()
                    .collect();
                let mut url = r.url.clone();
                url.set_path(&format!("/{}", path.as_ref()));
                Some(Location::Remote(Remote {
                    url,
                    store: r.store.clone(),
                    path,
                }))
            }
        }
    }

    fn store_err(
        &self,
        operation: &'static str,
    ) -> impl Fn(object_store::Error) -> StorageError + '_ {
        move |source| match source {
            object_store::Error::NotFound { .. } => StorageError::NotFound {
                location: self.to_string(),
            },
            error => StorageError::Store {
                operation,
                location: self.to_string(),
                error,
            },
        }
    }

    fn io_err(&self, operation: &'static str) -> impl Fn(std::io::Error) -> StorageError + '_ {
        move |source| match source.kind() {
            std::io::ErrorKind::NotFound => StorageError::NotFound {
                location: self.to_string(),
            },
            _ => StorageError::Io {
                operation,
                location: self.to_string(),
                source,
            },
        }
    }

    /// Every file at this location: itself if it is a file, else everything
    /// under it (recursively), in path order. Missing: an error.
    pub async fn files(&self) -> StorageResult<Vec<Entry>> {
        Ok(self.list().await?.entries)
    }

    /// [`Location::files`], with how many entries of a local folder the walk
    /// skipped (see [`walk`]: what is not a readable regular file, and
    /// symlinks to folders unless [`crate::limits`] says to follow them).
    pub async fn list(&self) -> StorageResult<Listing> {
        match self {
            Location::Local(p) => {
                let p = p.clone();
                let this = self.clone();
                let follow = crate::limits::get().follow;
                tokio::task::spawn_blocking(move || {
                    walk::local(&p, follow).map_err(this.io_err("listing"))
                })
                .await
                .map_err(|e| StorageError::Invalid {
                    location: self.to_string(),
                    reason: e.to_string(),
                })?
            }
            Location::Remote(r) => {
                // Objects under it make it a folder; otherwise it names one object.
                let listed: Vec<object_store::ObjectMeta> = r
                    .store
                    .list(Some(&r.path))
                    .try_collect()
                    .await
                    .map_err(self.store_err("listing"))?;
                if listed.is_empty() {
                    let meta = r
                        .store
                        .head(&r.path)
                        .await
                        .map_err(self.store_err("HEAD"))?;
                    return Ok(Listing {
                        entries: vec![Entry {
                            location: self.clone(),
                            size: meta.size,
                            etag: meta.e_tag,
                        }],
                        skipped: 0,
                    });
                }
                let mut out: Vec<Entry> = listed
                    .into_iter()
                    // A zero-byte `folder/` marker some tools write is not a file.
                    .filter(|m| m.location != r.path && !m.location.as_ref().ends_with('/'))
                    .map(|m| {
                        let mut url = r.url.clone();
                        url.set_path(&format!("/{}", m.location.as_ref()));
                        Entry {
                            location: Location::Remote(Remote {
                                url,
                                store: r.store.clone(),
                                path: m.location,
                            }),
                            size: m.size,
                            etag: m.e_tag,
                        }
                    })
                    .collect();
                out.sort_by_key(|e| e.location.sort_key());
                Ok(Listing {
                    entries: out,
                    skipped: 0,
                })
            }
        }
    }

    /// The whole file (pipeline files, configs, manifests: small files).
    pub async fn read(&self) -> StorageResult<Vec<u8>> {
        match self {
            Location::Local(p) => tokio::fs::read(p).await.map_err(self.io_err("reading")),
            Location::Remote(r) => {
                let got = r.store.get(&r.path).await.map_err(self.store_err("GET"))?;
                Ok(got.bytes().await.map_err(self.store_err("GET"))?.to_vec())
            }
        }
    }

    /// Create a local file's folder.
    async fn create_folder(&self, p: &Path) -> StorageResult<()> {
        match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => tokio::fs::create_dir_all(d)
                .await
                .map_err(self.io_err("creating its folder")),
            None => Ok(()),
        }
    }

    /// Write `bytes` as the whole file, atomically (a local file is written
    /// beside and renamed; an object PUT is atomic).
    pub async fn write(&self, bytes: Vec<u8>) -> StorageResult<()> {
        match self {
            Location::Local(p) => {
                self.create_folder(p).await?;
                let tmp = p.with_extension("partial");
                tokio::fs::write(&tmp, bytes)
                    .await
                    .map_err(self.io_err("writing"))?;
                tokio::fs::rename(&tmp, p)
                    .await
                    .map_err(self.io_err("writing"))
            }
            Location::Remote(r) => r
                .store
                .put(&r.path, PutPayload::from(bytes))
                .await
                .map(|_| ())
                .map_err(self.store_err("PUT")),
        }
    }

    /// Make the finished local file `from` this location: a rename for a
    /// local path, a streaming (multipart) upload for an object.
    pub async fn publish(&self, from: &Path) -> StorageResult<()> {
        match self {
            Location::Local(p) => {
                self.create_folder(p).await?;
                tokio::fs::rename(from, p)
                    .await
                    .map_err(self.io_err("writing"))
            }
            Location::Remote(r) => blocking::upload(&r.store, &r.path, from)
                .await
                .map_err(self.store_err("PUT (multipart)")),
        }
    }

    /// A streaming reader of the file, for a blocking thread (never call it
    /// on the async runtime's threads).
    pub fn open_blocking(&self) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        let entry = match self {
            Location::Local(_) => Entry {
                location: self.clone(),
                size: 0,
                etag: None,
            },
            Location::Remote(r) => {
                let meta = blocking::handle()
                    .map_err(std::io::Error::other)?
                    .block_on(r.store.head(&r.path))
                    .map_err(self.store_err("HEAD"))?;
                Entry {
                    location: self.clone(),
                    size: meta.size,
                    etag: meta.e_tag,
                }
            }
        };
        entry.open_blocking()
    }
}

impl Entry {
    /// The object as listed: its size, and its ETag that every read is pinned to.
    fn pinned(&self) -> Option<blocking::Pinned> {
        match &self.location {
            Location::Local(_) => None,
            Location::Remote(r) => Some(blocking::Pinned {
                store: r.store.clone(),
                path: r.path.clone(),
                size: self.size,
                etag: self.etag.clone(),
            }),
        }
    }

    /// A streaming reader of the file, for a blocking thread: a local file
    /// buffered, an object by ranged GETs pinned to the listed version.
    pub fn open_blocking(&self) -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        match (&self.location, self.pinned()) {
            (Location::Local(p), _) => Ok(Box::new(std::io::BufReader::with_capacity(
                1 << 20,
                std::fs::File::open(p)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?,
            ))),
            (_, Some(object)) => {
                let reader = blocking::ObjectReader::open(object, 0, Default::default())
                    .map_err(self.location.store_err("GET"))?;
                Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, reader)))
            }
            (Location::Remote(_), None) => unreachable!("a remote entry is pinned"),
        }
    }

    /// The whole file, from a blocking thread; one longer than the record
    /// limit ([`crate::limits`]) is an error, read no further than the limit.
    pub fn read_blocking(&self) -> std::io::Result<Vec<u8>> {
        let cap = crate::limits::get().record_bytes;
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(self.open_blocking()?, cap.saturating_add(1)),
            &mut out,
        )?;
        if out.len() as u64 > cap {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: more than {cap} bytes, the limit of one record (--max-record-bytes)",
                    self.location
                ),
            ));
        }
        Ok(out)
    }

    /// Parquet row batches of at most `batch_rows` rows (from a blocking
    /// thread), with the file's row count. A failed request is `Io`; bytes
    /// that do not decode are `Undecodable`.
    pub fn parquet_blocking(&self, batch_rows: usize) -> StorageResult<(i64, blocking::Batches)> {
        use blocking::FailureNote;
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let location = self.location.to_string();
        fn batches<R: parquet::file::reader::ChunkReader + 'static>(
            file: R,
            failed: FailureNote,
            batch_rows: usize,
            location: String,
        ) -> StorageResult<(i64, blocking::Batches)> {
            let classify = move |e: String| match failed.lock().expect("failure note").take() {
                Some(io) => StorageError::Io {
                    operation: "reading",
                    location: location.clone(),
                    source: std::io::Error::other(io),
                },
                None => StorageError::Undecodable {
                    location: location.clone(),
                    reason: e,
                },
            };
            let b = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| classify(e.to_string()))?;
            let rows = b.metadata().file_metadata().num_rows();
            let reader = b
                .with_batch_size(batch_rows)
                .build()
                .map_err(|e| classify(e.to_string()))?;
            let iter = reader.map(move |r| r.map_err(|e| classify(e.to_string())));
            Ok((rows, Box::new(iter)))
        }
        match (&self.location, self.pinned()) {
            (Location::Local(p), _) => batches(
                std::fs::File::open(p).map_err(self.location.io_err("opening"))?,
                FailureNote::default(),
                batch_rows,
                location,
            ),
            (_, Some(object)) => {
                let file =
                    blocking::RemoteFile::new(object).map_err(self.location.store_err("GET"))?;
                let failed = file.failed.clone();
                batches(file, failed, batch_rows, location)
            }
            (Location::Remote(_), None) => unreachable!("a remote entry is pinned"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_join_and_resolve_as_local_ones_do() {
        let url = Url::parse("s3://bkt/jobs/a/pipeline.toml").unwrap();
        let pipeline = Location::Remote(Remote {
            path: StorePath::from_url_path(url.path()).unwrap(),
            url,
            store: Arc::new(object_store::memory::InMemory::new()),
        });
        let resolved = |p: &str| pipeline.resolve(p).unwrap().to_string();
        assert_eq!(resolved("corpus/albedo"), "s3://bkt/jobs/a/corpus/albedo");
        assert_eq!(resolved("./x/../y.jsonl"), "s3://bkt/jobs/a/y.jsonl");
        assert_eq!(resolved("../out/mix.jsonl"), "s3://bkt/jobs/out/mix.jsonl");
        assert_eq!(resolved("/abs/x"), "/abs/x");
        assert_eq!(pipeline.parent().unwrap().to_string(), "s3://bkt/jobs/a");
        assert_eq!(pipeline.file_name().as_deref(), Some("pipeline.toml"));
        assert!(pipeline
            .parent()
            .unwrap()
            .same(&pipeline.resolve(".").unwrap()));

        let local = Location::parse("pipeline.toml").unwrap();
        assert_eq!(local.resolve("corpus").unwrap().to_string(), "corpus");
        assert!(Location::parse("ftp://host/x").is_err());
    }
}
