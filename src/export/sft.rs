//! The SFT export: one JSON object per row,
//! `{"row_id", "mix", "messages": [{"role", "content", "train"}], "train_meta": [...]}`,
//! as JSONL or Parquet. Message content comes byte-exact from `messages` and
//! is checked against its stored hash; rows are written in `row_id` order, so
//! the same lake and config give a byte-identical file.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Float64Type, Int32Type, Schema};
use arrow::record_batch::RecordBatch;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::Arc;

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

fn text(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let c = cast(b.column_by_name(name).expect("column"), &DataType::Utf8).expect("text");
    c.as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
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
    for b in &messages {
        let (row_id, mix, traj, role, content) = (
            text(b, "row_id"),
            text(b, "mix"),
            text(b, "traj_id"),
            text(b, "role"),
            text(b, "content"),
        );
        let idx = cast(b.column_by_name("idx").unwrap(), &DataType::Int64)?;
        let idx = idx.as_primitive::<arrow::datatypes::Int64Type>();
        let train = b.column_by_name("train").unwrap().as_boolean().clone();
        let intact = b.column_by_name("intact").unwrap().as_boolean().clone();
        for i in 0..b.num_rows() {
            let id = row_id[i].clone().unwrap_or_default();
            if !intact.value(i) {
                return Err(ExportError::Corrupt {
                    row_id: id,
                    traj_id: traj[i].clone().unwrap_or_default(),
                    idx: idx.value(i),
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
                .push(json!({"role": role[i], "content": content[i], "train": train.value(i)}));
        }
    }
    let mut at = 0;
    for b in &meta {
        let row_id = text(b, "row_id");
        let kinds = text(b, "cmd_kind");
        let t = cast(b.column_by_name("t").unwrap(), &DataType::Int32)?;
        let t = t.as_primitive::<Int32Type>();
        let weight = cast(b.column_by_name("weight").unwrap(), &DataType::Float64)?;
        let weight = weight.as_primitive::<Float64Type>();
        let tags = b.column_by_name("tags").unwrap();
        let recovery = b
            .column_by_name("is_recovery")
            .unwrap()
            .as_boolean()
            .clone();
        for i in 0..b.num_rows() {
            let id = row_id[i].clone().unwrap_or_default();
            while at < out.len() && out[at]["row_id"] != id.as_str() {
                at += 1;
            }
            let Some(row) = out.get_mut(at) else { break };
            let tag_list: Vec<String> = if tags.is_null(i) {
                Vec::new()
            } else {
                let l = tags.as_list::<i32>().value(i);
                let l = cast(&l, &DataType::Utf8)?;
                l.as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect()
            };
            row["train_meta"].as_array_mut().expect("list").push(json!({
                "t": t.value(i), "cmd_kind": kinds[i], "weight": weight.value(i),
                "tags": tag_list, "is_recovery": recovery.value(i),
            }));
        }
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
