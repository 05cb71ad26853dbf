//! Object-store I/O for blocking threads: a `Read` over ranged GETs (a
//! chunk in memory at a time), a Parquet source whose column chunks are range
//! GETs, and a streaming multipart upload. Each call waits on the async
//! runtime through its handle, so callers must be on a blocking thread.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::ObjectStore;
use tokio::runtime::Handle;

/// Row batches of a Parquet file: a failed request is `StorageError::Io` (the
/// ingest stops and a rerun completes it), bytes that do not decode are
/// `StorageError::Undecodable` (the file's rows are rejected).
pub type Batches =
    Box<dyn Iterator<Item = Result<arrow::record_batch::RecordBatch, super::StorageError>> + Send>;

pub(crate) fn handle() -> Result<Handle, object_store::Error> {
    Handle::try_current().map_err(|e| object_store::Error::Generic {
        store: "turnlake",
        source: format!("no async runtime to read through: {e}").into(),
    })
}

/// The most one request fetches: a request's timeout bounds a transfer of
/// this size, never the time a reader takes to consume a file.
const CHUNK: u64 = 8 << 20;
/// The first request of a reader fetches this much, then each doubles up to
/// [`CHUNK`]: a Parquet page header costs a small GET, a JSONL file streams.
const FIRST_CHUNK: u64 = 64 << 10;

/// Where a storage failure is noted: the Parquet reader turns errors into
/// text, so this is how a failed request is told from undecodable bytes.
pub type FailureNote = Arc<std::sync::Mutex<Option<String>>>;

/// One object as its listing saw it: reads are pinned to that version
/// (`If-Match` its ETag), so a file replaced mid-read fails instead of mixing.
#[derive(Clone)]
pub struct Pinned {
    pub store: Arc<dyn ObjectStore>,
    pub path: StorePath,
    pub size: u64,
    pub etag: Option<String>,
}

impl Pinned {
    /// Bytes `range` of the object, in one request.
    fn get(&self, handle: &Handle, range: std::ops::Range<u64>) -> object_store::Result<Bytes> {
        let options = object_store::GetOptions {
            range: Some(range.into()),
            if_match: self.etag.clone(),
            ..Default::default()
        };
        handle.block_on(async {
            self.store
                .get_opts(&self.path, options)
                .await?
                .bytes()
                .await
        })
    }
}

/// An object read as `std::io::Read`, one ranged GET at a time.
pub struct ObjectReader {
    handle: Handle,
    object: Pinned,
    pos: u64,
    next_len: u64,
    chunk: Bytes,
    failed: FailureNote,
}

impl ObjectReader {
    /// The object from byte `start` on.
    pub fn open(object: Pinned, start: u64, failed: FailureNote) -> object_store::Result<Self> {
        Ok(ObjectReader {
            handle: handle()?,
            object,
            pos: start,
            next_len: FIRST_CHUNK,
            chunk: Bytes::new(),
            failed,
        })
    }
}

impl std::io::Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunk.is_empty() {
            let end = self.object.size;
            if self.pos >= end {
                return Ok(0);
            }
            let range = self.pos..end.min(self.pos + self.next_len);
            self.next_len = (self.next_len * 2).min(CHUNK);
            self.chunk = self.object.get(&self.handle, range).map_err(|e| {
                let text = super::s3::redact(&e.to_string());
                *self.failed.lock().expect("failure note") = Some(text.clone());
                std::io::Error::other(text)
            })?;
            if self.chunk.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: the object ended before its listed size",
                        self.object.path
                    ),
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

/// A remote file read by the synchronous Parquet reader. It asks for each
/// page header and each page: those are served from one window of up to
/// [`CHUNK`] bytes fetched at a time, so a shard costs about one request per
/// window and never sits in memory whole.
pub struct RemoteFile {
    handle: Handle,
    object: Pinned,
    window: std::sync::Mutex<(u64, Bytes)>,
    pub failed: FailureNote,
}

impl RemoteFile {
    pub fn new(object: Pinned) -> object_store::Result<Self> {
        Ok(RemoteFile {
            handle: handle()?,
            object,
            window: std::sync::Mutex::new((0, Bytes::new())),
            failed: Default::default(),
        })
    }

    /// Bytes `start..start+len`, from the window or a new one.
    fn bytes(&self, start: u64, len: u64) -> parquet::errors::Result<Bytes> {
        let mut window = self.window.lock().expect("window");
        let (at, ref data) = *window;
        if start >= at && start + len <= at + data.len() as u64 {
            let from = (start - at) as usize;
            return Ok(data.slice(from..from + len as usize));
        }
        let end = self.object.size.min(start + len.max(CHUNK));
        let data = self.object.get(&self.handle, start..end).map_err(|e| {
            *self.failed.lock().expect("failure note") = Some(super::s3::redact(&e.to_string()));
            parquet::errors::ParquetError::External(Box::new(e))
        })?;
        let out = data.slice(..(len as usize).min(data.len()));
        *window = (start, data);
        Ok(out)
    }
}

impl parquet::file::reader::Length for RemoteFile {
    fn len(&self) -> u64 {
        self.object.size
    }
}

impl parquet::file::reader::ChunkReader for RemoteFile {
    type T = std::io::Chain<bytes::buf::Reader<Bytes>, ObjectReader>;

    /// What the window holds from `start`, then the rest of the object as needed.
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use bytes::Buf;
        // An empty read makes the window cover `start`.
        self.bytes(start, 0)?;
        let head = {
            let window = self.window.lock().expect("window");
            let (at, ref data) = *window;
            data.slice((start - at) as usize..)
        };
        let rest = ObjectReader::open(
            self.object.clone(),
            start + head.len() as u64,
            self.failed.clone(),
        )
        .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
        Ok(std::io::Read::chain(head.reader(), rest))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.bytes(start, length as u64)
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
