//! The SFT export: one JSON object per row,
//! `{"row_id", "mix", "messages": [{"role", "content", "train"}], "train_meta": [...]}`,
//! as JSONL or Parquet. Message content comes byte-exact from `messages` and
//! is checked against its stored hash; rows are written in `row_id` order, so
//! the same lake and config give a byte-identical file.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use crate::columns::{bools, f64s, i64s, strings};
use crate::engine::{self, EngineError};
use crate::lake::{Lake, LakeError};
use crate::pipeline::mix::describe_rows;
use crate::pipeline::select::SelectError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SftFormat {
    Jsonl,
    Parquet,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Select(#[from] SelectError),
    #[error("the lake has no {0} table: run `turnlake select` and `turnlake mix` first")]
    Missing(String),
    #[error("row {row_id}: message {idx} of {traj_id} does not match its stored content hash; refusing to export altered bytes")]
    Corrupt {
        row_id: String,
        traj_id: String,
        idx: i64,
    },
    #[error("writing the export")]
    Io(#[from] std::io::Error),
    #[error("writing Parquet")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("writing Parquet")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    pub rows: usize,
    pub messages: usize,
    pub train_turns: usize,
}

/// The `tags` list of each row (empty where null).
fn tag_lists(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, ExportError> {
    let mut out = Vec::new();
    for b in batches {
        let tags = b.column_by_name("tags").expect("train_turns_v has tags");
        for i in 0..b.num_rows() {
            if tags.is_null(i) {
                out.push(Vec::new());
                continue;
            }
            let l = cast(&tags.as_list::<i32>().value(i), &DataType::Utf8)?;
            out.push(
                l.as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// Rows a consumer gets at a time, at most.
const CHUNK_ROWS: usize = 256;

/// The memory a stream of rows may use, in MiB (`TURNLAKE_STREAM_MEMORY`,
/// default 256, at least 16): each of the two queries' operators get half of
/// it (beyond it the sort by row_id spills to the temporary folder; the
/// train-turn query stays far below), and the chunks in flight between the
/// reader and its consumer half.
pub(crate) fn stream_memory() -> usize {
    std::env::var("TURNLAKE_STREAM_MEMORY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|mib| *mib >= 16)
        .unwrap_or(256)
        << 20
}

/// Rows per batch inside the messages query: one batch of long transcripts
/// stays far below the memory a stream may use, and a sort that spilled
/// merges one batch per spill file. Smaller batches cost more per row than
/// the sort itself (64 rows took validate twice as long).
const MESSAGE_BATCH_ROWS: usize = 512;
/// Rows per batch inside the train-turns query (a few short columns).
const META_BATCH_ROWS: usize = 4096;

/// Each row's messages. The only join builds on the rows (small); which
/// messages train comes from the train_meta stream (their `msg_idx`).
///
/// Strings are plain Utf8 before the sort (the session's lake tables give
/// them so; the casts keep it so whatever a session gives): a joined string view
/// keeps pointing into the whole batch it came from, which the sort would
/// count (ten times over) against its memory budget.
fn messages_sql() -> String {
    format!(
        "SELECT arrow_cast(r.row_id, 'Utf8') AS row_id, \
        arrow_cast(r.mix, 'Utf8') AS mix, arrow_cast(r.traj_id, 'Utf8') AS traj_id, m.idx, \
        arrow_cast(m.role, 'Utf8') AS role, arrow_cast(m.content, 'Utf8') AS content, \
        {} AS intact \
 FROM rows_in r \
 JOIN messages m ON m.traj_id = r.traj_id AND (r.upto_msg IS NULL OR m.idx <= r.upto_msg) \
 WHERE m.role <> 'exit' \
 ORDER BY 1, 4",
        super::content_intact_sql()
    )
}

/// Each row's train turns, with the message each one is.
/// Strings are plain, as in [`messages_sql`]: a view column
/// a join outputs keeps the whole build side's string buffers alive, so the
/// sort would count every batch as gigabytes and refuse its budget.
const META_SQL: &str = "SELECT arrow_cast(row_id, 'Utf8') AS row_id, t, msg_idx, \
        arrow_cast(cmd_kind, 'Utf8') AS cmd_kind, weight, arrow_cast(tags, 'List(Utf8)') AS tags, is_recovery \
 FROM train_turns_v ORDER BY row_id, t";

/// One train turn of a row: the message it is, and its train_meta entry.
struct TrainTurn {
    row_id: String,
    msg_idx: i64,
    meta: Value,
}

/// The train turns of a stream ordered by row_id, taken row by row.
struct MetaCursor {
    stream: SendableRecordBatchStream,
    pending: VecDeque<TrainTurn>,
}

impl MetaCursor {
    /// The train turns of `row_id` (those of rows before it are skipped).
    async fn take(&mut self, row_id: &str) -> Result<Vec<TrainTurn>, ExportError> {
        let mut out = Vec::new();
        loop {
            let Some(TrainTurn { row_id: id, .. }) = self.pending.front() else {
                match self.stream.next().await {
                    Some(batch) => {
                        let batch = batch.map_err(query_error("train turns"))?;
                        self.pending.extend(meta_entries(&batch)?)
                    }
                    None => return Ok(out),
                }
                continue;
            };
            match id.as_str().cmp(row_id) {
                std::cmp::Ordering::Less => {
                    self.pending.pop_front();
                }
                std::cmp::Ordering::Equal => out.push(self.pending.pop_front().expect("front")),
                std::cmp::Ordering::Greater => return Ok(out),
            }
        }
    }
}

/// A failed query of the stream `what` (messages or train turns).
fn query_error(what: &'static str) -> impl Fn(datafusion::error::DataFusionError) -> ExportError {
    move |e| {
        ExportError::Engine(EngineError::Query {
            context: format!("export: reading the rows' {what}"),
            source: Box::new(e),
        })
    }
}

fn meta_entries(batch: &RecordBatch) -> Result<Vec<TrainTurn>, ExportError> {
    let b = std::slice::from_ref(batch);
    let (row_id, kinds, t, msg_idx, weight, recovery) = (
        strings(b, "row_id"),
        strings(b, "cmd_kind"),
        i64s(b, "t"),
        i64s(b, "msg_idx"),
        f64s(b, "weight"),
        bools(b, "is_recovery"),
    );
    let tags = tag_lists(b)?;
    Ok((0..row_id.len())
        .map(|i| {
            let entry = json!({
                "t": t[i], "cmd_kind": kinds[i], "weight": weight[i].unwrap_or(0.0),
                "tags": tags[i], "is_recovery": recovery[i] == Some(true),
            });
            TrainTurn {
                row_id: row_id[i].clone().unwrap_or_default(),
                msg_idx: msg_idx[i].unwrap_or(-1),
                meta: entry,
            }
        })
        .collect())
}

/// Stream the rows of `table` in row_id order, in chunks (at most
/// `CHUNK_ROWS` rows, and an eighth of [`stream_memory`] of content), into
/// `consume` on a blocking thread (it tokenizes or writes); only a few
/// chunks are in memory at once. Returns the consumer's final state.
pub async fn stream_rows<C, F>(
    lake: &Lake,
    table: &str,
    state: C,
    mut consume: F,
) -> Result<C, ExportError>
where
    C: Send + 'static,
    F: FnMut(&mut C, Vec<Value>) -> Result<(), ExportError> + Send + 'static,
{
    if lake.table(table).await?.is_none() {
        return Err(ExportError::Missing(table.to_string()));
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Value>>(2);
    let consumer = tokio::task::spawn_blocking(move || {
        let mut state = state;
        while let Some(rows) = rx.blocking_recv() {
            consume(&mut state, rows)?;
        }
        Ok::<C, ExportError>(state)
    });
    let produced = produce(lake, table, &tx).await;
    drop(tx);
    let consumed = consumer.await.expect("row consumer panicked");
    produced?;
    consumed
}

/// Read the rows and send them in chunks; stops early when the consumer has.
async fn produce(
    lake: &Lake,
    table: &str,
    tx: &tokio::sync::mpsc::Sender<Vec<Value>>,
) -> Result<(), ExportError> {
    // One session per stream: two jobs running at once in one Ballista
    // session can be handed each other's stage plans.
    let stream = |sql: String, what: &'static str, batch_rows: usize| async move {
        let ctx = engine::bounded_session(lake, stream_memory() / 2, batch_rows).await?;
        describe_rows(&ctx, table).await?;
        ctx.sql(&sql)
            .await
            .map_err(query_error(what))?
            .execute_stream()
            .await
            .map_err(query_error(what))
    };
    let mut messages = stream(messages_sql(), "messages", MESSAGE_BATCH_ROWS).await?;
    let mut out = Chunker {
        meta: MetaCursor {
            stream: stream(META_SQL.to_string(), "train turns", META_BATCH_ROWS).await?,
            pending: VecDeque::new(),
        },
        chunk: Vec::with_capacity(CHUNK_ROWS),
        chunk_bytes: 0,
        // Four chunks are in flight at most: being built, two queued, consumed.
        max_chunk_bytes: stream_memory() / 8,
        tx,
    };
    let mut current: Option<OpenRow> = None;
    while let Some(batch) = messages.next().await {
        let b = &[batch.map_err(query_error("messages"))?];
        let (row_id, mix, traj, role, content) = (
            strings(b, "row_id"),
            strings(b, "mix"),
            strings(b, "traj_id"),
            strings(b, "role"),
            strings(b, "content"),
        );
        let (idx, intact) = (i64s(b, "idx"), bools(b, "intact"));
        for i in 0..row_id.len() {
            let id = row_id[i].as_deref().unwrap_or("");
            if current.as_ref().is_none_or(|r| r.row["row_id"] != id) {
                if let Some(done) = current.take() {
                    if !out.push(done).await? {
                        return Ok(());
                    }
                }
                current = Some(OpenRow {
                    row: json!({"messages": [], "train_meta": [], "mix": mix[i], "row_id": id}),
                    idx: Vec::new(),
                    bytes: 0,
                });
            }
            if intact[i] != Some(true) {
                return Err(ExportError::Corrupt {
                    row_id: id.to_string(),
                    traj_id: traj[i].clone().unwrap_or_default(),
                    idx: idx[i].unwrap_or(-1),
                });
            }
            let open = current.as_mut().expect("a row is open");
            open.idx.push(idx[i].unwrap_or(-1));
            open.bytes += content[i].as_deref().map_or(0, str::len);
            open.row["messages"]
                .as_array_mut()
                .expect("list")
                .push(json!({"role": role[i], "content": content[i], "train": false}));
        }
    }
    if let Some(done) = current {
        if !out.push(done).await? {
            return Ok(());
        }
    }
    if !out.chunk.is_empty() {
        let _ = out.tx.send(out.chunk).await;
    }
    Ok(())
}

/// A row whose messages are still arriving, with each message's index.
struct OpenRow {
    row: Value,
    idx: Vec<i64>,
    /// Content bytes so far.
    bytes: usize,
}

/// Completed rows, with their train flags and train_meta, sent on in chunks.
struct Chunker<'a> {
    meta: MetaCursor,
    chunk: Vec<Value>,
    /// Content bytes in `chunk`, and the most a chunk holds.
    chunk_bytes: usize,
    max_chunk_bytes: usize,
    tx: &'a tokio::sync::mpsc::Sender<Vec<Value>>,
}

impl Chunker<'_> {
    /// Add a complete row; `false` once the consumer has stopped.
    async fn push(&mut self, open: OpenRow) -> Result<bool, ExportError> {
        let OpenRow {
            mut row,
            idx,
            bytes,
        } = open;
        let id = row["row_id"].as_str().unwrap_or("").to_string();
        let turns = self.meta.take(&id).await?;
        for (m, i) in row["messages"]
            .as_array_mut()
            .expect("list")
            .iter_mut()
            .zip(&idx)
        {
            m["train"] = Value::Bool(turns.iter().any(|t| t.msg_idx == *i));
        }
        row["train_meta"] = Value::Array(turns.into_iter().map(|t| t.meta).collect());
        self.chunk.push(row);
        self.chunk_bytes += bytes;
        if self.chunk.len() < CHUNK_ROWS && self.chunk_bytes < self.max_chunk_bytes {
            return Ok(true);
        }
        self.chunk_bytes = 0;
        Ok(self.tx.send(std::mem::take(&mut self.chunk)).await.is_ok())
    }
}

/// Every row of `table` in row_id order (for consumers that need them all).
pub async fn rows(lake: &Lake, table: &str) -> Result<Vec<Value>, ExportError> {
    stream_rows(lake, table, Vec::new(), |all: &mut Vec<Value>, rows| {
        all.extend(rows);
        Ok(())
    })
    .await
}

fn parquet_schema() -> Arc<Schema> {
    let message = Fields::from(vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
        Field::new("train", DataType::Boolean, false),
    ]);
    let meta = Fields::from(vec![
        Field::new("t", DataType::Int32, false),
        Field::new("cmd_kind", DataType::Utf8, true),
        Field::new("weight", DataType::Float64, false),
        Field::new(
            "tags",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("is_recovery", DataType::Boolean, false),
    ]);
    Arc::new(Schema::new(vec![
        Field::new("row_id", DataType::Utf8, false),
        Field::new("mix", DataType::Utf8, false),
        Field::new(
            "messages",
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(message),
                true,
            ))),
            false,
        ),
        Field::new(
            "train_meta",
            DataType::List(Arc::new(Field::new("item", DataType::Struct(meta), true))),
            false,
        ),
    ]))
}

/// Rows per Parquet batch (and row group input): fixed, so the file's bytes
/// do not depend on how the rows arrived.
const PARQUET_BATCH: usize = 1024;

/// Rows per Parquet row group of an export.
const PARQUET_ROW_GROUP: usize = 8 * PARQUET_BATCH;

/// Writes rows as they stream in: JSONL line by line; Parquet in batches of
/// `PARQUET_BATCH` rows (fewer when their JSON passes a sixteenth of
/// [`stream_memory`]) and row groups of at most `PARQUET_ROW_GROUP` rows and
/// a thirty-second of it in encoded pages. Same rows, same bytes.
pub struct SftWriter<W: Write + Send> {
    sink: Sink<W>,
    /// Parquet: serialized rows not yet in a batch, and the most it holds.
    lines: Vec<u8>,
    buffered: usize,
    max_batch_bytes: usize,
    max_row_group_bytes: usize,
    summary: ExportSummary,
}

enum Sink<W: Write + Send> {
    Jsonl(W),
    Parquet(parquet::arrow::ArrowWriter<W>),
}

impl<W: Write + Send> SftWriter<W> {
    pub fn new(w: W, format: SftFormat) -> Result<SftWriter<W>, ExportError> {
        let sink = match format {
            SftFormat::Jsonl => Sink::Jsonl(w),
            SftFormat::Parquet => {
                // Row groups of a bounded size, so the writer never holds
                // more than one of them.
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_max_row_group_row_count(Some(PARQUET_ROW_GROUP))
                    .build();
                Sink::Parquet(parquet::arrow::ArrowWriter::try_new(
                    w,
                    parquet_schema(),
                    Some(props),
                )?)
            }
        };
        Ok(SftWriter {
            sink,
            lines: Vec::new(),
            buffered: 0,
            max_batch_bytes: stream_memory() / 16,
            max_row_group_bytes: stream_memory() / 32,
            summary: ExportSummary::default(),
        })
    }

    pub fn write(&mut self, rows: &[Value]) -> Result<(), ExportError> {
        for r in rows {
            self.summary.rows += 1;
            self.summary.messages += r["messages"].as_array().map_or(0, Vec::len);
            self.summary.train_turns += r["train_meta"].as_array().map_or(0, Vec::len);
            serde_json::to_writer(&mut self.lines, r).map_err(std::io::Error::from)?;
            self.lines.push(b'\n');
            self.buffered += 1;
            match &mut self.sink {
                Sink::Jsonl(w) => {
                    w.write_all(&self.lines)?;
                    self.lines.clear();
                }
                Sink::Parquet(_)
                    if self.buffered == PARQUET_BATCH
                        || self.lines.len() >= self.max_batch_bytes =>
                {
                    self.flush_batch()?
                }
                Sink::Parquet(_) => {}
            }
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), ExportError> {
        if let Sink::Parquet(pw) = &mut self.sink {
            let lines = std::mem::take(&mut self.lines);
            let reader = arrow::json::ReaderBuilder::new(parquet_schema())
                .with_batch_size(PARQUET_BATCH)
                .build(std::io::Cursor::new(lines))?;
            for batch in reader {
                pw.write(&batch?)?;
            }
            // A row group ends at a byte budget too: long transcripts would
            // otherwise hold thousands of rows' pages in memory.
            if pw.in_progress_size() >= self.max_row_group_bytes {
                pw.flush()?;
            }
        }
        self.buffered = 0;
        Ok(())
    }

    pub fn finish(mut self) -> Result<ExportSummary, ExportError> {
        self.flush_batch()?;
        match self.sink {
            Sink::Jsonl(mut w) => w.flush()?,
            Sink::Parquet(pw) => {
                pw.close()?;
            }
        }
        Ok(self.summary)
    }
}
