//! The SFT export: one JSON object per row,
//! `{"row_id", "mix", "messages": [{"role", "content", "train"}], "train_meta": [...]}`,
//! as JSONL or Parquet. Message content comes byte-exact from `messages` and
//! is checked against its stored hash; rows are written in `row_id` order, so
//! the same lake and config give a byte-identical file.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use serde_json::{json, Value};
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

/// The rows of `table` as JSON values, in row_id order.
pub async fn rows(lake: &Lake, table: &str) -> Result<Vec<Value>, ExportError> {
    if lake.table(table).await?.is_none() {
        return Err(ExportError::Missing(table.to_string()));
    }
    let ctx = engine::session(lake).await?;
    describe_rows(&ctx, table).await?;
    let messages = engine::run_sql(
        &ctx,
        "SELECT r.row_id, r.mix, r.traj_id, m.idx, m.role, m.content, \
                CAST(u.t IS NOT NULL AND array_has(r.train_turns, u.t) AS BOOLEAN) AS train, \
                encode(sha256(m.content), 'hex') = m.content_sha AS intact \
         FROM rows_in r \
         JOIN messages m ON m.traj_id = r.traj_id AND (r.upto_msg IS NULL OR m.idx <= r.upto_msg) \
         LEFT JOIN turns u ON u.traj_id = m.traj_id AND u.msg_idx = m.idx \
         WHERE m.role <> 'exit' \
         ORDER BY r.row_id, m.idx",
        "export: messages",
    )
    .await?;
    let meta = engine::run_sql(
        &ctx,
        "SELECT row_id, t, cmd_kind, weight, tags, is_recovery FROM train_turns_v ORDER BY row_id, t",
        "export: train_meta",
    )
    .await?;

    let mut out: Vec<Value> = Vec::new();
    let (row_id, mix, traj, role, content) = (
        strings(&messages, "row_id"),
        strings(&messages, "mix"),
        strings(&messages, "traj_id"),
        strings(&messages, "role"),
        strings(&messages, "content"),
    );
    let (idx, train, intact) = (
        i64s(&messages, "idx"),
        bools(&messages, "train"),
        bools(&messages, "intact"),
    );
    for i in 0..row_id.len() {
        let id = row_id[i].clone().unwrap_or_default();
        if intact[i] != Some(true) {
            return Err(ExportError::Corrupt {
                row_id: id,
                traj_id: traj[i].clone().unwrap_or_default(),
                idx: idx[i].unwrap_or(-1),
            });
        }
        if out
            .last()
            .map(|r| r["row_id"] != id.as_str())
            .unwrap_or(true)
        {
            out.push(json!({"messages": [], "train_meta": [], "mix": mix[i], "row_id": id}));
        }
        let row = out.last_mut().expect("just pushed");
        row["messages"]
            .as_array_mut()
            .expect("list")
            .push(json!({"role": role[i], "content": content[i], "train": train[i] == Some(true)}));
    }
    let (row_id, kinds, t, weight, recovery) = (
        strings(&meta, "row_id"),
        strings(&meta, "cmd_kind"),
        i64s(&meta, "t"),
        f64s(&meta, "weight"),
        bools(&meta, "is_recovery"),
    );
    let tags = tag_lists(&meta)?;
    let mut at = 0;
    for i in 0..row_id.len() {
        let id = row_id[i].clone().unwrap_or_default();
        while at < out.len() && out[at]["row_id"] != id.as_str() {
            at += 1;
        }
        let Some(row) = out.get_mut(at) else { break };
        row["train_meta"].as_array_mut().expect("list").push(json!({
            "t": t[i], "cmd_kind": kinds[i], "weight": weight[i].unwrap_or(0.0),
            "tags": tags[i], "is_recovery": recovery[i] == Some(true),
        }));
    }
    Ok(out)
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

/// Write `rows` to `w` in `format`.
pub fn write<W: Write + Send>(
    w: W,
    rows: &[Value],
    format: SftFormat,
) -> Result<ExportSummary, ExportError> {
    let summary = ExportSummary {
        rows: rows.len(),
        messages: rows
            .iter()
            .map(|r| r["messages"].as_array().map_or(0, Vec::len))
            .sum(),
        train_turns: rows
            .iter()
            .map(|r| r["train_meta"].as_array().map_or(0, Vec::len))
            .sum(),
    };
    let mut lines = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut lines, r).map_err(std::io::Error::from)?;
        lines.push(b'\n');
    }
    match format {
        SftFormat::Jsonl => {
            let mut w = w;
            w.write_all(&lines)?;
            w.flush()?;
        }
        SftFormat::Parquet => {
            let schema = parquet_schema();
            let reader = arrow::json::ReaderBuilder::new(schema.clone())
                .with_batch_size(1024)
                .build(std::io::Cursor::new(lines))?;
            let mut pw = parquet::arrow::ArrowWriter::try_new(w, schema, None)?;
            for batch in reader {
                pw.write(&batch?)?;
            }
            pw.close()?;
        }
    }
    Ok(summary)
}
