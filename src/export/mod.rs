//! Sinks: files other tools train on.

pub mod manifest;
pub mod samples;
pub mod sft;
pub mod sft_rows;
pub mod trainers;
pub mod verl;

use crate::engine::EngineError;
use crate::lake::LakeError;
use crate::pipeline::PipelineError;
use crate::storage::StorageError;

/// Why an export (SFT, verl, samples) failed. An export refuses rather than
/// write bytes other than those recorded, so most variants say what it found.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Step(#[from] PipelineError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(
        "the lake has no lake commit to record: write to it with this version of turnlake first"
    )]
    NoCommit,
    #[error("{path}: not a turnlake manifest: {reason}")]
    NotAManifest { path: String, reason: String },
    #[error("{path}")]
    Hashing {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the lake has no {0} table: run `turnlake select` and `turnlake mix` first")]
    Missing(String),
    #[error("row {row_id}: message {idx} of {traj_id} does not match its stored content hash; refusing to export altered bytes")]
    Corrupt {
        row_id: String,
        traj_id: String,
        idx: i64,
    },
    #[error("{0}")]
    Refused(String),
    #[error(
        "trajectory {traj_id}: {reason}; refusing to export (the prompt is never re-assembled)"
    )]
    Integrity { traj_id: String, reason: String },
    #[error("trajectory {traj_id}, turn {t}: no label ({hint})")]
    NoLabel {
        traj_id: String,
        t: i64,
        hint: String,
    },
    #[error("reading the lake")]
    Query(#[from] datafusion::error::DataFusionError),
    #[error("writing the export")]
    Io(#[from] std::io::Error),
    #[error("writing Parquet")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("writing Parquet")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// One exported message as recorded: role and content, and where recorded
/// its reasoning, its tool calls (the stored chat-shape JSON, `arguments`
/// as the recorded string) and the tool call an observation answers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExportMessage {
    pub role: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ExportMessage {
    /// A message from its stored columns; `None` when its stored
    /// `tool_calls` is not JSON (then it is not what ingest stored).
    pub fn from_stored(
        role: String,
        content: String,
        reasoning_content: Option<String>,
        tool_calls: Option<&str>,
        tool_call_id: Option<String>,
    ) -> Option<ExportMessage> {
        let tool_calls = match tool_calls {
            Some(text) => Some(serde_json::from_str(text).ok()?),
            None => None,
        };
        Some(ExportMessage {
            role,
            content,
            reasoning_content,
            tool_calls,
            tool_call_id,
        })
    }
}

/// Tool calls in the shape the Parquet exports type them: each call's
/// `arguments` a string (a call recorded with an object gets its JSON text);
/// `None` when they already are.
pub fn tool_calls_for_parquet(calls: &serde_json::Value) -> Option<serde_json::Value> {
    let list = calls.as_array()?;
    let object_args = |c: &serde_json::Value| {
        c.pointer("/function/arguments")
            .is_some_and(|a| !a.is_string() && !a.is_null())
    };
    if !list.iter().any(object_args) {
        return None;
    }
    let mut out = calls.clone();
    for c in out.as_array_mut().expect("a list") {
        if let Some(args) = c.pointer_mut("/function/arguments") {
            if !args.is_string() && !args.is_null() {
                *args = serde_json::Value::String(args.to_string());
            }
        }
    }
    Some(out)
}

/// The Parquet type of a message's `tool_calls`: verl's and the chat
/// templates' `[{id, type, function{name, arguments}}]`.
pub fn tool_calls_type() -> arrow::datatypes::DataType {
    use arrow::datatypes::{DataType, Field, Fields};
    let function = Fields::from(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("arguments", DataType::Utf8, true),
    ]);
    let call = Fields::from(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("type", DataType::Utf8, true),
        Field::new("function", DataType::Struct(function), true),
    ]);
    DataType::List(std::sync::Arc::new(Field::new(
        "item",
        DataType::Struct(call),
        true,
    )))
}

/// The message fields every Parquet export carries after `role` and `content`.
pub fn recorded_fields() -> Vec<arrow::datatypes::Field> {
    use arrow::datatypes::{DataType, Field};
    vec![
        Field::new("reasoning_content", DataType::Utf8, true),
        Field::new("tool_calls", tool_calls_type(), true),
        Field::new("tool_call_id", DataType::Utf8, true),
    ]
}
