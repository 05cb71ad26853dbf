//! Object-store I/O for blocking threads: a `Read` over ranged GETs (a
//! chunk in memory at a time), a Parquet source whose column chunks are range
//! GETs, and a streaming multipart upload. Each call waits on the async
//! runtime through its handle, so callers must be on a blocking thread.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::runtime::Handle;

/// Why a row batch did not come: the storage failed (the ingest stops and a
/// rerun completes it) or the file's bytes do not decode (its rows are rejected).
#[derive(Debug)]
pub enum BatchError {
    Io(std::io::Error),
    Decode(String),
}

/// Row batches of a Parquet file.
pub type Batches =
    Box<dyn Iterator<Item = Result<arrow::record_batch::RecordBatch, BatchError>> + Send>;

fn handle() -> Result<Handle, object_store::Error> {
    Handle::try_current().map_err(|e| object_store::Error::Generic {
        store: "turnlake",
        source: format!("no async runtime to read through: {e}").into(),
    })
}

/// How much of an object one request fetches: a request's timeout bounds a
/// transfer of this size, never the time a reader takes to consume a file.
const CHUNK: u64 = 8 << 20;

/// An object read as `std::io::Read`, one ranged GET of at most [`CHUNK`]
/// bytes at a time.
pub struct ObjectReader {
    handle: Handle,
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    pos: u64,
    end: u64,
    chunk: Bytes,
}

impl ObjectReader {
    /// The object from byte `start` to `end` (its size).
    pub fn open(
        store: Arc<dyn ObjectStore>,
        path: StorePath,
        start: u64,
        end: Option<u64>,
    ) -> object_store::Result<Self> {
        let handle = handle()?;
        let end = match end {
            Some(e) => e,
            None => {
                let (store, path) = (store.clone(), path.clone());
                handle.block_on(async move { store.head(&path).await })?.size
            }
        };
        Ok(ObjectReader {
            handle,
            store,
            path,
            pos: start,
            end,
            chunk: Bytes::new(),
        })
    }
}

impl std::io::Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunk.is_empty() {
            if self.pos >= self.end {
                return Ok(0);
            }
            let range = self.pos..self.end.min(self.pos + CHUNK);
            self.chunk = self
                .handle
                .block_on(self.store.get_range(&self.path, range))
                .map_err(|e| std::io::Error::other(super::s3::redact(&e.to_string())))?;
            if self.chunk.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{}: the object ended before its listed size", self.path),
                ));
            }
            self.pos += self.chunk.len() as u64;
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        Ok(n)
    }
}

/// A remote file read by the synchronous Parquet reader: the footer and each
/// column chunk it asks for are one range GET, so a row group at a time is
/// in memory, never the file.
pub struct RemoteFile {
    handle: Handle,
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    size: u64,
    /// The last failed request: the Parquet reader turns errors into text,
    /// so this is how a storage failure is told from undecodable bytes.
    pub failed: Arc<std::sync::Mutex<Option<String>>>,
}

impl RemoteFile {
    pub fn new(store: Arc<dyn ObjectStore>, path: StorePath, size: u64) -> object_store::Result<Self> {
        Ok(RemoteFile {
            handle: handle()?,
            store,
            path,
            size,
            failed: Default::default(),
        })
    }

    fn note(&self, e: object_store::Error) -> parquet::errors::ParquetError {
        let text = super::s3::redact(&e.to_string());
        *self.failed.lock().expect("failure note") = Some(text);
        parquet::errors::ParquetError::External(Box::new(e))
    }
}

impl parquet::file::reader::Length for RemoteFile {
    fn len(&self) -> u64 {
        self.size
    }
}

impl parquet::file::reader::ChunkReader for RemoteFile {
    type T = ObjectReader;

    fn get_read(&self, start: u64) -> parquet::errors::Result<ObjectReader> {
        ObjectReader::open(self.store.clone(), self.path.clone(), start, Some(self.size))
            .map_err(|e| self.note(e))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.handle
            .block_on(self.store.get_range(&self.path, start..start + length as u64))
            .map_err(|e| self.note(e))
    }
}

/// Upload a finished local file as one object, in parts, never holding it whole.
pub async fn upload(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    from: &std::path::Path,
) -> object_store::Result<()> {
    use object_store::buffered::BufWriter;
    use tokio::io::AsyncWriteExt;
    let io = |e: std::io::Error| object_store::Error::Generic {
        store: "turnlake",
        source: format!("{}: {e}", from.display()).into(),
    };
    let mut file = tokio::fs::File::open(from).await.map_err(io)?;
    let mut out = BufWriter::new(store.clone(), path.clone());
    let copied = tokio::io::copy(&mut file, &mut out).await;
    match copied {
        Ok(_) => out.shutdown().await.map_err(io),
        Err(e) => {
            let _ = out.abort().await;
            Err(io(e))
        }
    }
}
