//! mini-coder trajectories (`ricdomolm/mini-coder-trajs-400k`): Parquet
//! shards or JSONL with `instance_id`, `messages`, `patch`, `model`,
//! `verified`; `messages` either a list of `{role, content}` structs or a JSON
//! string. Parquet is read in small row batches, so memory stays bounded
//! however large a shard is.

use arrow::array::{Array, AsArray, GenericListArray, OffsetSizeTrait, StringArray, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use serde_json::Value;

use crate::storage::{Entry, Location, StorageError};

use super::json::{opt_bool, opt_str, parse_record, req_str, FieldError, FieldResult};
use super::{
    derive_checked, for_each_line, mswea, reject, RawMessage, RawTrajectory, Record, Unit,
};

pub const SOURCE: &str = "mini_coder";
const BATCH_ROWS: usize = 256;

pub fn wants(name: &str) -> bool {
    name.ends_with(".parquet") || name.ends_with(".jsonl")
}

pub fn read_file(
    file: &Entry,
    progress: &dyn Fn(u64),
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<()> {
    let path = &file.location;
    if path.file_name().is_some_and(|n| n.ends_with(".parquet")) {
        return read_parquet(file, progress, emit);
    }
    // Lines are parsed and derived a chunk at a time on every core, then
    // emitted in file order.
    let mut chunk: Vec<(i64, Vec<u8>)> = Vec::with_capacity(BATCH_ROWS);
    let mut flush = |chunk: &mut Vec<(i64, Vec<u8>)>| {
        let derived: Vec<_> = chunk
            .par_iter()
            .map(|(line, raw)| {
                parse_record(raw)
                    .and_then(|v| from_json(&v, path, *line))
                    .and_then(derive_checked)
            })
            .collect();
        for ((line, raw), d) in chunk.drain(..).zip(derived) {
            match d {
                Ok(rows) => emit(Record::Unit(Unit {
                    trajectories: vec![rows],
                    ..Default::default()
                })),
                Err(e) => emit(reject(
                    SOURCE,
                    path,
                    Some(line),
                    Some(&e.field).filter(|f| !f.is_empty()).map(|s| s.as_str()),
                    e.reason,
                    &raw,
                )),
            }
            progress(raw.len() as u64 + 1);
        }
    };
    for_each_line(file.open_blocking()?, |line, raw| {
        chunk.push((line, raw.to_vec()));
        if chunk.len() >= BATCH_ROWS {
            flush(&mut chunk);
        }
    })?;
    flush(&mut chunk);
    Ok(())
}

fn read_parquet(
    file: &Entry,
    progress: &dyn Fn(u64),
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<()> {
    let (path, size) = (&file.location, file.size);
    let (total_rows, reader) = match file.parquet_blocking(BATCH_ROWS) {
        Ok(r) => r,
        Err(StorageError::Undecodable { reason: e, .. }) => {
            emit(reject(
                SOURCE,
                path,
                None,
                None,
                format!("unreadable Parquet file: {e}"),
                &[],
            ));
            progress(size);
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let mut row = 0i64;
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(StorageError::Undecodable { reason: e, .. }) => {
                // The rest of the file cannot be decoded: one reject per lost row.
                for lost in row + 1..=total_rows.max(row + 1) {
                    emit(reject(
                        SOURCE,
                        path,
                        Some(lost),
                        None,
                        format!("Parquet decode failed: {e}"),
                        &[],
                    ));
                }
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let per_row = size / total_rows.max(1) as u64;
        // Rows are decoded and derived on every core, then emitted in order.
        let derived: Vec<_> = rows_of(&batch)
            .into_par_iter()
            .enumerate()
            .map(|(i, parsed)| {
                let line = row + i as i64 + 1;
                let derived = parsed.and_then(|r| {
                    let instance = r.instance_id.clone().unwrap_or_default();
                    r.into_trajectory(path, line)
                        .and_then(|t| derive_checked(t).map_err(|e| (e, instance)))
                });
                (line, derived)
            })
            .collect();
        for (line, derived) in derived {
            match derived {
                Ok(rows) => emit(Record::Unit(Unit {
                    trajectories: vec![rows],
                    ..Default::default()
                })),
                Err((e, raw)) => emit(reject(
                    SOURCE,
                    path,
                    Some(line),
                    Some(&e.field).filter(|f| !f.is_empty()).map(|s| s.as_str()),
                    e.reason,
                    raw.as_bytes(),
                )),
            }
        }
        row += batch.num_rows() as i64;
        progress(per_row * batch.num_rows() as u64);
    }
    Ok(())
}

/// The fields of one row before validation.
struct Row {
    instance_id: Option<String>,
    model: Option<String>,
    verified: Option<bool>,
    messages: Result<Vec<RawMessage>, FieldError>,
}

type RowResult = Result<Row, (FieldError, String)>;

impl Row {
    fn into_trajectory(
        self,
        path: &Location,
        line: i64,
    ) -> Result<RawTrajectory, (FieldError, String)> {
        let raw = self.instance_id.clone().unwrap_or_default();
        let instance_id = self.instance_id.ok_or_else(|| {
            (
                FieldError::new("instance_id", "missing or null"),
                raw.clone(),
            )
        })?;
        let messages = self.messages.map_err(|e| (e, raw))?;
        Ok(trajectory(
            instance_id,
            self.model,
            self.verified,
            messages,
            path,
            line,
        ))
    }
}

fn trajectory(
    instance_id: String,
    model: Option<String>,
    verified: Option<bool>,
    messages: Vec<RawMessage>,
    path: &Location,
    line: i64,
) -> RawTrajectory {
    let sha = super::derive::messages_sha(&messages);
    RawTrajectory {
        traj_id: format!("{SOURCE}/{instance_id}/{}", &sha[..16]),
        source: SOURCE,
        model,
        instance_id: Some(instance_id),
        verified,
        input_file: path.to_string(),
        input_row: Some(line),
        messages,
        messages_sha: Some(sha),
        ..Default::default()
    }
}

fn from_json(v: &Value, path: &Location, line: i64) -> FieldResult<RawTrajectory> {
    let instance_id = req_str(v, "instance_id", "")?;
    let messages = match v.get("messages") {
        Some(Value::String(s)) => messages_from_json_text(s)?,
        Some(Value::Array(a)) => messages_from_values(a)?,
        Some(_) => {
            return Err(FieldError::new(
                "messages",
                "expected a list or a JSON string",
            ))
        }
        None => return Err(FieldError::new("messages", "missing")),
    };
    Ok(trajectory(
        instance_id,
        opt_str(v, "model"),
        opt_bool(v, "verified"),
        messages,
        path,
        line,
    ))
}

fn messages_from_values(list: &[Value]) -> FieldResult<Vec<RawMessage>> {
    if list.is_empty() {
        return Err(FieldError::new("messages", "empty"));
    }
    list.iter()
        .enumerate()
        .map(|(i, m)| mswea::message(m, &format!("messages[{i}].")))
        .collect()
}

fn messages_from_json_text(text: &str) -> FieldResult<Vec<RawMessage>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(a)) => messages_from_values(&a),
        Ok(_) => Err(FieldError::new(
            "messages",
            "JSON string does not hold a list",
        )),
        Err(e) => Err(FieldError::new(
            "messages",
            format!("malformed JSON string: {e}"),
        )),
    }
}

fn string_column(batch: &RecordBatch, name: &str) -> Option<StringArray> {
    let col = batch.column_by_name(name)?;
    cast(col, &DataType::Utf8)
        .ok()
        .map(|c| c.as_string::<i32>().clone())
}

/// Every row of a batch, parsed as far as the column types allow.
fn rows_of(batch: &RecordBatch) -> Vec<RowResult> {
    let n = batch.num_rows();
    let ids = string_column(batch, "instance_id");
    let models = string_column(batch, "model");
    let verified = batch
        .column_by_name("verified")
        .and_then(|c| cast(c, &DataType::Boolean).ok())
        .map(|c| c.as_boolean().clone());
    let messages = batch.column_by_name("messages");
    // A JSON-text column, as one Utf8 array (cast once, not per row).
    let text = messages
        .filter(|c| {
            matches!(
                c.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        })
        .map(|c| cast(c, &DataType::Utf8).expect("string cast"));
    let get = |a: &Option<StringArray>, i: usize| {
        a.as_ref()
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i).to_string())
    };
    (0..n)
        .into_par_iter()
        .map(|i| {
            let msgs = match messages.map(|c| c.data_type()) {
                None => Err(FieldError::new("messages", "column missing")),
                Some(_) if messages.is_some_and(|c| c.is_null(i)) => {
                    Err(FieldError::new("messages", "null"))
                }
                Some(DataType::Utf8) | Some(DataType::LargeUtf8) | Some(DataType::Utf8View) => {
                    let s = text.as_ref().expect("cast above");
                    messages_from_json_text(s.as_string::<i32>().value(i))
                }
                Some(DataType::List(_)) => struct_messages(messages.unwrap().as_list::<i32>(), i),
                Some(DataType::LargeList(_)) => {
                    struct_messages(messages.unwrap().as_list::<i64>(), i)
                }
                Some(other) => Err(FieldError::new(
                    "messages",
                    format!("unsupported column type {other}"),
                )),
            };
            Ok(Row {
                instance_id: get(&ids, i),
                model: get(&models, i),
                verified: verified
                    .as_ref()
                    .filter(|v| v.is_valid(i))
                    .map(|v| v.value(i)),
                messages: msgs,
            })
        })
        .collect()
}

fn struct_messages<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    i: usize,
) -> FieldResult<Vec<RawMessage>> {
    let values = list.value(i);
    let Some(structs) = values.as_any().downcast_ref::<StructArray>() else {
        return Err(FieldError::new("messages", "list items are not structs"));
    };
    let col = |name: &str| -> FieldResult<StringArray> {
        let c = structs
            .column_by_name(name)
            .ok_or_else(|| FieldError::new(format!("messages[].{name}"), "missing"))?;
        cast(c, &DataType::Utf8)
            .map(|c| c.as_string::<i32>().clone())
            .map_err(|e| FieldError::new(format!("messages[].{name}"), e.to_string()))
    };
    let roles = col("role")?;
    let contents = col("content")?;
    if structs.is_empty() {
        return Err(FieldError::new("messages", "empty"));
    }
    (0..structs.len())
        .map(|j| {
            if roles.is_null(j) {
                return Err(FieldError::new(format!("messages[{j}].role"), "null"));
            }
            Ok(RawMessage {
                role: roles.value(j).to_string(),
                content: if contents.is_null(j) {
                    String::new()
                } else {
                    contents.value(j).to_string()
                },
                ..Default::default()
            })
        })
        .collect()
}
