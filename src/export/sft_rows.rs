//! The SFT rows as a stream, in `row_id` order: each row's recorded
//! messages (checked against their stored digests), which of them train, and
//! each train turn's train_meta entry. Four sorted queries (the rows, their
//! messages, train turns and credit) are merged here by each row's place in
//! `row_id` order, in chunks, so memory holds a few chunks and never the mix.
//! The SFT writer and `validate` both read rows from here.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;

use super::ExportError;
use crate::columns::{bools, f64s, i64s, strings};
use crate::engine::{self, EngineError};
use crate::lake::Lake;
use crate::pipeline::mix::register_rows;
use crate::pipeline::sqlstep::run_script;

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
/// default 256, at least 16): the messages query's operators get half of it
/// (beyond it their sort spills to the temporary folder), and the chunks in
/// flight between the reader and its consumer half. The queries of the rows,
/// their train turns and credit hold [`SMALL_SORT_BUDGET`] each.
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

pub const SQL_FILE: &str = "sql/export_rows.sql";
pub const SQL: &str = include_str!("../../sql/export_rows.sql");

/// Bytes each sort of the rows, their train turns and credit holds before it
/// spills (and validate's sort of the rows it keeps): small, so that they
/// spill at every scale alike and hold the budget, not the rows.
pub(crate) const SMALL_SORT_BUDGET: usize = 4 << 20;
/// Rows per batch of those queries: a spill file's merge holds one.
pub(crate) const SMALL_BATCH_ROWS: usize = 1024;

/// Reads a batch of a query into its records, each with its row's `ord`.
type OrdDecoder<T> = fn(&RecordBatch) -> Result<Vec<(i64, T)>, ExportError>;

/// A query's records in `ord` order, taken one row (one `ord`) at a time.
struct OrdCursor<T> {
    stream: SendableRecordBatchStream,
    /// What the query reads, for its errors.
    what: &'static str,
    decode: OrdDecoder<T>,
    pending: VecDeque<(i64, T)>,
}

impl<T> OrdCursor<T> {
    fn new(stream: SendableRecordBatchStream, what: &'static str, decode: OrdDecoder<T>) -> Self {
        OrdCursor {
            stream,
            what,
            decode,
            pending: VecDeque::new(),
        }
    }

    /// The records of `ord` (those of rows before it are skipped).
    async fn take(&mut self, ord: i64) -> Result<Vec<T>, ExportError> {
        let mut out = Vec::new();
        loop {
            let Some((o, _)) = self.pending.front() else {
                match self.stream.next().await {
                    Some(batch) => {
                        let batch = batch.map_err(query_error(self.what))?;
                        self.pending.extend((self.decode)(&batch)?)
                    }
                    None => return Ok(out),
                }
                continue;
            };
            match o.cmp(&ord) {
                std::cmp::Ordering::Less => {
                    self.pending.pop_front();
                }
                std::cmp::Ordering::Equal => out.push(self.pending.pop_front().expect("front").1),
                std::cmp::Ordering::Greater => return Ok(out),
            }
        }
    }
}

/// A failed query of the stream `what` (messages, train turns, ...).
fn query_error(what: &'static str) -> impl Fn(datafusion::error::DataFusionError) -> ExportError {
    move |e| {
        ExportError::Engine(EngineError::Query {
            context: format!("export: reading the rows' {what}"),
            source: Box::new(e),
        })
    }
}

/// What the messages stream does not carry of a row.
struct RowInfo {
    row_id: String,
    mix: Option<String>,
    traj_id: String,
}

fn row_infos(batch: &RecordBatch) -> Result<Vec<(i64, RowInfo)>, ExportError> {
    let b = std::slice::from_ref(batch);
    let (ord, ids, mixes, trajs) = (
        i64s(b, "ord"),
        strings(b, "row_id"),
        strings(b, "mix"),
        strings(b, "traj_id"),
    );
    Ok(ord
        .into_iter()
        .zip(ids)
        .zip(mixes.into_iter().zip(trajs))
        .map(|((ord, id), (mix, traj))| {
            let info = RowInfo {
                row_id: id.unwrap_or_default(),
                mix,
                traj_id: traj.unwrap_or_default(),
            };
            (ord.unwrap_or(-1), info)
        })
        .collect())
}

/// One train turn of a row: the message it is, and what train_meta reports.
struct TrainTurn {
    traj_id: Option<String>,
    t: Option<i64>,
    msg_idx: i64,
    cmd_kind: Option<String>,
    prev_failed: bool,
}

fn train_turns(batch: &RecordBatch) -> Result<Vec<(i64, TrainTurn)>, ExportError> {
    let b = std::slice::from_ref(batch);
    let (ord, traj, t, msg_idx, kinds, prev_failed) = (
        i64s(b, "ord"),
        strings(b, "traj_id"),
        i64s(b, "t"),
        i64s(b, "msg_idx"),
        strings(b, "cmd_kind"),
        bools(b, "prev_failed"),
    );
    Ok((0..ord.len())
        .map(|i| {
            let turn = TrainTurn {
                traj_id: traj[i].clone(),
                t: t[i],
                msg_idx: msg_idx[i].unwrap_or(-1),
                cmd_kind: kinds[i].clone(),
                prev_failed: prev_failed[i] == Some(true),
            };
            (ord[i].unwrap_or(-1), turn)
        })
        .collect())
}

/// The credit of one judged train turn.
struct TurnCredit {
    traj_id: Option<String>,
    t: Option<i64>,
    credit: f64,
    tags: Vec<String>,
}

fn turn_credits(batch: &RecordBatch) -> Result<Vec<(i64, TurnCredit)>, ExportError> {
    let b = std::slice::from_ref(batch);
    let (ord, traj, t, credit) = (
        i64s(b, "ord"),
        strings(b, "traj_id"),
        i64s(b, "t"),
        f64s(b, "credit"),
    );
    let tags = tag_lists(b)?;
    Ok(tags
        .into_iter()
        .enumerate()
        .map(|(i, tags)| {
            let c = TurnCredit {
                traj_id: traj[i].clone(),
                t: t[i],
                credit: credit[i].unwrap_or(0.0),
                tags,
            };
            (ord[i].unwrap_or(-1), c)
        })
        .collect())
}

/// A labelled turn among a row's messages (what `--for kto` labels): by
/// the judge's credit, or by the local scorer where no judge saw the run.
struct Judged {
    traj_id: Option<String>,
    t: Option<i64>,
    msg_idx: i64,
    credit: Option<f64>,
    label: bool,
    label_source: Option<String>,
}

fn judged_turns(batch: &RecordBatch) -> Result<Vec<(i64, Judged)>, ExportError> {
    let b = std::slice::from_ref(batch);
    let (ord, traj, t, msg_idx, credit) = (
        i64s(b, "ord"),
        strings(b, "traj_id"),
        i64s(b, "t"),
        i64s(b, "msg_idx"),
        f64s(b, "credit"),
    );
    let (label, label_source) = (bools(b, "label"), strings(b, "label_source"));
    Ok((0..ord.len())
        .map(|i| {
            let j = Judged {
                traj_id: traj[i].clone(),
                t: t[i],
                msg_idx: msg_idx[i].unwrap_or(-1),
                credit: credit[i],
                label: label[i].unwrap_or(false),
                label_source: label_source[i].clone(),
            };
            (ord[i].unwrap_or(-1), j)
        })
        .collect())
}

/// The train turns of a row, each with its train_meta entry: weight is the
/// turn's credit (0 without any), and whether it is a recovery
/// ([`crate::turn::is_recovery`]). Turns and credit of another trajectory (let
/// through by a shared key) are dropped.
fn train_meta(traj_id: &str, turns: Vec<TrainTurn>, credits: Vec<TurnCredit>) -> Vec<(i64, Value)> {
    let own = |t: &Option<String>| t.as_deref() == Some(traj_id);
    turns
        .into_iter()
        .filter(|u| own(&u.traj_id))
        .map(|u| {
            let c = credits.iter().find(|c| own(&c.traj_id) && c.t == u.t);
            let weight = c.map_or(0.0, |c| c.credit);
            let entry = json!({
                "t": u.t, "cmd_kind": u.cmd_kind, "weight": weight,
                "tags": c.map_or(&[][..], |c| &c.tags[..]),
                "is_recovery": crate::turn::is_recovery(Some(u.prev_failed), Some(weight)),
            });
            (u.msg_idx, entry)
        })
        .collect()
}

/// Stream the rows of `table` in row_id order, in chunks (at most
/// `CHUNK_ROWS` rows, and an eighth of [`stream_memory`] of content), into
/// `consume` on a blocking thread (it tokenizes or writes); only a few
/// chunks are in memory at once. Returns the consumer's final state.
pub async fn stream_rows<C, F>(
    lake: &Lake,
    table: &str,
    state: C,
    consume: F,
) -> Result<C, ExportError>
where
    C: Send + 'static,
    F: FnMut(&mut C, Vec<Value>) -> Result<(), ExportError> + Send + 'static,
{
    stream_rows_with(lake, table, false, state, consume).await
}

/// [`stream_rows`]; with `judged`, each message that is a labelled turn
/// also carries `judged: {"t", "credit", "label", "label_source"}` (what
/// `export sft --for kto` labels; `credit` is the judge's, null for a
/// scorer's label).
pub async fn stream_rows_with<C, F>(
    lake: &Lake,
    table: &str,
    judged: bool,
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
    let produced = produce(lake, table, judged, &tx).await;
    drop(tx);
    let consumed = consumer.await.expect("row consumer panicked");
    produced?;
    consumed
}

/// Read the rows and send them in chunks; stops early when the consumer has.
async fn produce(
    lake: &Lake,
    table: &str,
    judged: bool,
    tx: &tokio::sync::mpsc::Sender<Vec<Value>>,
) -> Result<(), ExportError> {
    // One session per stream: two jobs running at once in one Ballista
    // session can be handed each other's stage plans.
    let stream = |view: &'static str, what: &'static str, memory: usize, batch_rows: usize| async move {
        let ctx = engine::bounded_session(lake, memory, batch_rows).await?;
        register_rows(&ctx, table).await?;
        // One's own runs alone: no credit table, no judged turn.
        engine::register_empty_if_missing(&ctx, "turn_credit")?;
        engine::register_empty_if_missing(&ctx, "turn_labels")?;
        run_script(&ctx, SQL_FILE, SQL).await?;
        ctx.table(view)
            .await
            .map_err(query_error(what))?
            .execute_stream()
            .await
            .map_err(query_error(what))
    };
    let small = |view, what| stream(view, what, SMALL_SORT_BUDGET, SMALL_BATCH_ROWS);
    let mut messages = stream(
        "export_messages",
        "messages",
        stream_memory() / 2,
        MESSAGE_BATCH_ROWS,
    )
    .await?;
    let mut rows = OrdCursor::new(small("export_rows", "rows").await?, "rows", row_infos);
    let mut out = Chunker {
        turns: OrdCursor::new(
            small("export_train_turns", "train turns").await?,
            "train turns",
            train_turns,
        ),
        credit: OrdCursor::new(
            small("export_credit", "credit").await?,
            "credit",
            turn_credits,
        ),
        judged: match judged {
            true => Some(OrdCursor::new(
                small("export_judged", "judged turns").await?,
                "judged turns",
                judged_turns,
            )),
            false => None,
        },
        chunk: Vec::with_capacity(CHUNK_ROWS),
        chunk_bytes: 0,
        // Four chunks are in flight at most: being built, two queued, consumed.
        max_chunk_bytes: stream_memory() / 8,
        tx,
    };
    let tools = run_tools(lake).await?;
    let mut current: Option<OpenRow> = None;
    while let Some(batch) = messages.next().await {
        let b = &[batch.map_err(query_error("messages"))?];
        let (traj, role, content) = (
            strings(b, "traj_id"),
            strings(b, "role"),
            strings(b, "content"),
        );
        let (reasoning, tool_calls, tool_call_id) = (
            strings(b, "reasoning_content"),
            strings(b, "tool_calls"),
            strings(b, "tool_call_id"),
        );
        let (ord, idx, intact) = (i64s(b, "ord"), i64s(b, "idx"), bools(b, "intact"));
        for i in 0..ord.len() {
            let ord = ord[i].unwrap_or(-1);
            if current.as_ref().is_none_or(|r| r.ord != ord) {
                if let Some(done) = current.take() {
                    if !out.push(done).await? {
                        return Ok(());
                    }
                }
                let info = rows.take(ord).await?.pop().ok_or_else(|| {
                    query_error("rows")(datafusion::error::DataFusionError::Internal(format!(
                        "no row at place {ord} of the rows' row_id order"
                    )))
                })?;
                let mut row = json!({"messages": [], "train_meta": [], "mix": info.mix, "row_id": info.row_id});
                if let Some(t) = tools.get(&info.traj_id) {
                    row["tools"] = t.clone();
                }
                current = Some(OpenRow {
                    row,
                    ord,
                    traj_id: info.traj_id,
                    idx: Vec::new(),
                    bytes: 0,
                });
            }
            let open = current.as_mut().expect("a row is open");
            // Another trajectory's message, let through by a shared key.
            if traj[i].as_deref() != Some(open.traj_id.as_str()) {
                continue;
            }
            if intact[i] != Some(true) {
                return Err(ExportError::Corrupt {
                    row_id: open.row["row_id"].as_str().unwrap_or("").to_string(),
                    traj_id: open.traj_id.clone(),
                    idx: idx[i].unwrap_or(-1),
                });
            }
            open.idx.push(idx[i].unwrap_or(-1));
            open.bytes += content[i].as_deref().map_or(0, str::len);
            let mut message = json!({"role": role[i], "content": content[i], "train": false});
            if let Some(r) = &reasoning[i] {
                message["reasoning_content"] = json!(r);
            }
            if let Some(calls) = &tool_calls[i] {
                message["tool_calls"] =
                    serde_json::from_str(calls).map_err(|_| ExportError::Corrupt {
                        row_id: open.row["row_id"].as_str().unwrap_or("").to_string(),
                        traj_id: open.traj_id.clone(),
                        idx: idx[i].unwrap_or(-1),
                    })?;
            }
            if let Some(id) = &tool_call_id[i] {
                message["tool_call_id"] = json!(id);
            }
            open.row["messages"]
                .as_array_mut()
                .expect("list")
                .push(message);
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

/// The tool schema (JSON) of every run that was given one: few are (one's
/// own tool-call runs), so a map holds them.
async fn run_tools(lake: &Lake) -> Result<std::collections::HashMap<String, Value>, ExportError> {
    let ctx = engine::bounded_session(lake, SMALL_SORT_BUDGET, SMALL_BATCH_ROWS).await?;
    let found = engine::run_sql(
        &ctx,
        "SELECT arrow_cast(traj_id, 'Utf8') AS traj_id, arrow_cast(tools, 'Utf8') AS tools \
         FROM trajectories WHERE tools IS NOT NULL",
        "export: reading the runs' tools",
    )
    .await?;
    let (ids, tools) = (strings(&found, "traj_id"), strings(&found, "tools"));
    Ok(ids
        .into_iter()
        .zip(tools)
        .filter_map(|(id, t)| Some((id?, serde_json::from_str(&t?).ok()?)))
        .collect())
}

/// A row whose messages are still arriving, with each message's index.
struct OpenRow {
    row: Value,
    /// Its place in row_id order, and its trajectory.
    ord: i64,
    traj_id: String,
    idx: Vec<i64>,
    /// Content bytes so far.
    bytes: usize,
}

/// Completed rows, with their train flags and train_meta, sent on in chunks.
struct Chunker<'a> {
    turns: OrdCursor<TrainTurn>,
    credit: OrdCursor<TurnCredit>,
    /// Every judged turn, when asked for.
    judged: Option<OrdCursor<Judged>>,
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
            ord,
            traj_id,
            idx,
            bytes,
        } = open;
        let (turns, credit) = (self.turns.take(ord).await?, self.credit.take(ord).await?);
        let meta = train_meta(&traj_id, turns, credit);
        for (m, i) in row["messages"]
            .as_array_mut()
            .expect("list")
            .iter_mut()
            .zip(&idx)
        {
            m["train"] = Value::Bool(meta.iter().any(|(msg_idx, _)| msg_idx == i));
        }
        row["train_meta"] = Value::Array(meta.into_iter().map(|(_, entry)| entry).collect());
        if let Some(cursor) = &mut self.judged {
            let judged = cursor.take(ord).await?;
            let own = judged
                .iter()
                .filter(|j| j.traj_id.as_deref() == Some(traj_id.as_str()));
            for j in own {
                let messages = row["messages"].as_array_mut().expect("list");
                if let Some(at) = idx.iter().position(|i| *i == j.msg_idx) {
                    messages[at]["judged"] = json!({
                        "t": j.t, "credit": j.credit, "label": j.label, "label_source": j.label_source,
                    });
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(traj: &str, t: i64, msg_idx: i64, prev_failed: bool) -> TrainTurn {
        TrainTurn {
            traj_id: Some(traj.into()),
            t: Some(t),
            msg_idx,
            cmd_kind: Some("edit".into()),
            prev_failed,
        }
    }

    fn credit(traj: &str, t: i64, credit: f64, tags: &[&str]) -> TurnCredit {
        TurnCredit {
            traj_id: Some(traj.into()),
            t: Some(t),
            credit,
            tags: tags.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn train_meta_takes_each_turns_own_credit_and_drops_other_trajectories() {
        let turns = vec![
            turn("a", 1, 3, true),
            turn("b", 1, 3, false),
            turn("a", 2, 5, true),
            turn("a", 4, 9, false),
        ];
        // "b" shares a's key: its turn and its credit for t=2 must not reach a's row.
        let credits = vec![
            credit("a", 1, 0.5, &["fix"]),
            credit("b", 2, 9.0, &["other"]),
            credit("a", 4, 0.25, &[]),
        ];
        let meta = train_meta("a", turns, credits);
        let got: Vec<(i64, Value)> = meta;
        assert_eq!(
            got,
            vec![
                (
                    3,
                    json!({"t": 1, "cmd_kind": "edit", "weight": 0.5, "tags": ["fix"], "is_recovery": true})
                ),
                (
                    5,
                    json!({"t": 2, "cmd_kind": "edit", "weight": 0.0, "tags": [], "is_recovery": false})
                ),
                (
                    9,
                    json!({"t": 4, "cmd_kind": "edit", "weight": 0.25, "tags": [], "is_recovery": false})
                ),
            ]
        );
    }
}
