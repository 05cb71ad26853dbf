//! The SFT export: one JSON object per row,
//! `{"row_id", "mix", "messages": [{"role", "content", "train", ...}], "train_meta": [...], "tools"?}`,
//! as JSONL or Parquet (`schemas/exports/sft.json`). Each message carries its
//! recorded `reasoning_content`, `tool_calls` and `tool_call_id` where it has
//! them; a response the agent rejected (recovered) is not among them, since
//! the model never saw it. Message content comes byte-exact from `messages` and
//! is checked against its stored hash; rows are written in `row_id` order, so
//! the same lake and config give a byte-identical file.

use arrow::datatypes::{DataType, Field, Fields, Schema};
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

use super::sft_rows::stream_memory;
use super::trainers::{kto_parquet_schema, kto_rows, trl_pairs, trl_parquet_schema, Trainer};
use super::ExportError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SftFormat {
    Jsonl,
    Parquet,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    pub rows: usize,
    pub messages: usize,
    pub train_turns: usize,
}

fn parquet_schema() -> Arc<Schema> {
    let mut message = vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
        Field::new("train", DataType::Boolean, false),
    ];
    message.extend(super::recorded_fields());
    let message = Fields::from(message);
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
        Field::new("tools", DataType::Utf8, true),
    ]))
}

/// The lists of messages a written row holds: a row's, or a pair's.
const MESSAGE_LISTS: [&str; 3] = ["messages", "prompt", "completion"];

/// A row as the Parquet file types it: tool calls with string arguments
/// ([`super::tool_calls_for_parquet`]) and `tools` as its JSON text.
fn parquet_row(r: &Value) -> std::borrow::Cow<'_, Value> {
    let calls = |m: &Value| m.get("tool_calls").and_then(super::tool_calls_for_parquet);
    let mut messages = MESSAGE_LISTS
        .iter()
        .filter_map(|k| r.get(*k).and_then(Value::as_array))
        .flatten();
    if r.get("tools").is_none() && !messages.any(|m| calls(m).is_some()) {
        return std::borrow::Cow::Borrowed(r);
    }
    let mut row = r.clone();
    if let Some(tools) = row.get_mut("tools") {
        *tools = Value::String(tools.to_string());
    }
    for key in MESSAGE_LISTS {
        for m in row
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(fixed) = calls(m) {
                m["tool_calls"] = fixed;
            }
        }
    }
    std::borrow::Cow::Owned(row)
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
    /// Whom the rows are shaped for (see [`Trainer`]).
    trainer: Option<Trainer>,
    schema: Arc<Schema>,
    /// Parquet: serialized rows not yet in a batch, and the most it holds.
    lines: Vec<u8>,
    buffered: usize,
    max_batch_bytes: usize,
    max_row_group_bytes: usize,
    summary: ExportSummary,
}

enum Sink<W: Write + Send> {
    Jsonl(W),
    Parquet(Box<parquet::arrow::ArrowWriter<W>>),
}

impl<W: Write + Send> SftWriter<W> {
    /// A writer of `format`, the rows shaped for `trainer` (as they are
    /// when none is named).
    pub fn new(
        w: W,
        format: SftFormat,
        trainer: Option<Trainer>,
    ) -> Result<SftWriter<W>, ExportError> {
        let schema = match trainer {
            Some(Trainer::Trl) => trl_parquet_schema(),
            Some(Trainer::Kto) => kto_parquet_schema(),
            Some(Trainer::Axolotl) | None => parquet_schema(),
        };
        let sink = match format {
            SftFormat::Jsonl => Sink::Jsonl(w),
            SftFormat::Parquet => {
                // Row groups of a bounded size, so the writer never holds
                // more than one of them.
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_max_row_group_row_count(Some(PARQUET_ROW_GROUP))
                    .build();
                Sink::Parquet(Box::new(parquet::arrow::ArrowWriter::try_new(
                    w,
                    Arc::clone(&schema),
                    Some(props),
                )?))
            }
        };
        Ok(SftWriter {
            sink,
            trainer,
            schema,
            lines: Vec::new(),
            buffered: 0,
            max_batch_bytes: stream_memory() / 16,
            max_row_group_bytes: stream_memory() / 32,
            summary: ExportSummary::default(),
        })
    }

    pub fn write(&mut self, rows: &[Value]) -> Result<(), ExportError> {
        for r in rows {
            self.summary.train_turns += r["train_meta"].as_array().map_or(0, Vec::len);
            match self.trainer {
                Some(Trainer::Trl) => trl_pairs(r).iter().try_for_each(|p| self.write_one(p))?,
                Some(Trainer::Kto) => kto_rows(r).iter().try_for_each(|p| self.write_one(p))?,
                Some(Trainer::Axolotl) | None => self.write_one(r)?,
            }
        }
        Ok(())
    }

    /// Write one written row: a row, or a pair.
    fn write_one(&mut self, r: &Value) -> Result<(), ExportError> {
        self.summary.rows += 1;
        self.summary.messages += MESSAGE_LISTS
            .iter()
            .filter_map(|k| r.get(*k).and_then(Value::as_array))
            .map(Vec::len)
            .sum::<usize>();
        match &self.sink {
            Sink::Jsonl(_) => serde_json::to_writer(&mut self.lines, r),
            Sink::Parquet(_) => serde_json::to_writer(&mut self.lines, &parquet_row(r)),
        }
        .map_err(std::io::Error::from)?;
        self.lines.push(b'\n');
        self.buffered += 1;
        match &mut self.sink {
            Sink::Jsonl(w) => {
                w.write_all(&self.lines)?;
                self.lines.clear();
            }
            Sink::Parquet(_)
                if self.buffered == PARQUET_BATCH || self.lines.len() >= self.max_batch_bytes =>
            {
                self.flush_batch()?
            }
            Sink::Parquet(_) => {}
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), ExportError> {
        if let Sink::Parquet(pw) = &mut self.sink {
            let lines = std::mem::take(&mut self.lines);
            let reader = arrow::json::ReaderBuilder::new(Arc::clone(&self.schema))
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
