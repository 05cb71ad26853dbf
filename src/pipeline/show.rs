//! One trajectory as a person checks a selection: each turn with its command
//! kind, observation verdict, repeat flags, submit signal, credit and blame
//! with the questions that cite it, and the product rows that train it.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use arrow::record_batch::RecordBatch;
use datafusion::prelude::{col, lit, DataFrame, Expr, SessionContext};
use serde::Serialize;
use std::collections::BTreeMap;

use super::PipelineError;
use crate::columns::{bools, f64s, i64s, strings};
use crate::engine;
use crate::lake::Lake;

/// The tables whose rows can train a turn, and the mix name they hold.
const TRAINING_TABLES: [&str; 5] = [
    "sft_credit",
    "escape_duel",
    "escape_mini",
    "finish_mini",
    "sft_mix",
];

/// Which trajectory to show.
#[derive(Debug, Clone)]
pub enum Which {
    TrajId(String),
    /// An Albedo side: `sample_id` and `previous_king` / `challenger`.
    Side {
        sample_id: String,
        side: String,
    },
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnView {
    pub t: i64,
    /// The index of its assistant message among the trajectory's messages.
    pub msg_idx: Option<i64>,
    pub candidate_n: Option<i64>,
    pub cmd_kind: String,
    pub command: Option<String>,
    pub obs_failed: Option<bool>,
    pub returncode: Option<i64>,
    pub is_repeat: bool,
    pub repeats_prev: bool,
    pub after_repeat_run: bool,
    pub submit_signal: Option<String>,
    pub credit: Option<f64>,
    pub blame: Option<f64>,
    /// Questions whose yes-explanation cites this turn.
    pub cited_by: Vec<String>,
    /// Questions whose no-explanation cites it (blame).
    pub blamed_by: Vec<String>,
    /// Product rows (table: row_id) in which this turn carries the gradient.
    pub trained_in: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TrajectoryView {
    pub traj_id: String,
    /// Header facts as (name, value), in display order.
    pub facts: Vec<(String, String)>,
    pub turns: Vec<TurnView>,
}

async fn rows_of(
    ctx: &SessionContext,
    table: &str,
    filter: Expr,
    order: &str,
) -> Result<Vec<RecordBatch>, PipelineError> {
    let err = |source| PipelineError::Query {
        table: table.to_string(),
        source,
    };
    if !ctx.table_exist(table).map_err(err)? {
        return Ok(Vec::new());
    }
    let df: DataFrame = ctx
        .table(table)
        .await
        .map_err(err)?
        .filter(filter)
        .map_err(err)?;
    let df = if order.is_empty() {
        df
    } else {
        df.sort(vec![col(order).sort(true, false)]).map_err(err)?
    };
    df.collect().await.map_err(err)
}

/// The `train_turns` list of each row.
fn int_lists(batches: &[RecordBatch], name: &str) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    for b in batches {
        let Some(c) = b.column_by_name(name) else {
            continue;
        };
        let lists = c.as_list::<i32>();
        for i in 0..lists.len() {
            let v = cast(&lists.value(i), &DataType::Int64).expect("an integer list");
            out.push(v.as_primitive::<Int64Type>().iter().flatten().collect());
        }
    }
    out
}

pub async fn show(lake: &Lake, which: &Which) -> Result<TrajectoryView, PipelineError> {
    show_in(&engine::session(lake).await?, which).await
}

/// [`show`] in a session already open on the lake (the web app keeps one).
pub async fn show_in(ctx: &SessionContext, which: &Which) -> Result<TrajectoryView, PipelineError> {
    let (filter, label) = match which {
        Which::TrajId(id) => (col("traj_id").eq(lit(id.as_str())), id.clone()),
        Which::Side { sample_id, side } => (
            col("sample_id")
                .eq(lit(sample_id.as_str()))
                .and(col("side").eq(lit(side.as_str()))),
            format!("{sample_id} ({side})"),
        ),
    };
    let traj = rows_of(ctx, "trajectories", filter, "traj_id").await?;
    let ids: Vec<String> = strings(&traj, "traj_id").into_iter().flatten().collect();
    if ids.len() > 1 {
        return Err(PipelineError::Ambiguous(label, ids.join(", ")));
    }
    let traj_id = ids
        .into_iter()
        .next()
        .ok_or(PipelineError::NotFound(label))?;
    let mut facts = Vec::new();
    for name in [
        "source",
        "model",
        "instance_id",
        "eval_run_id",
        "sample_id",
        "side",
        "score",
        "verified",
        "obs_format",
        "n_turns",
        "n_scored",
        "looped",
        "dup_cmd_ratio",
        "max_cmd_run",
        "exit_status",
        "input_file",
    ] {
        let v = strings(&traj, name).into_iter().next().flatten();
        if let Some(v) = v {
            facts.push((name.to_string(), v));
        }
    }
    let this = || col("traj_id").eq(lit(traj_id.as_str()));

    let turns = rows_of(ctx, "turns", this(), "t").await?;
    let credit = rows_of(ctx, "turn_credit", this(), "t").await?;
    let credit_by_t: BTreeMap<i64, (Option<f64>, Option<f64>)> = i64s(&credit, "t")
        .into_iter()
        .zip(
            f64s(&credit, "credit")
                .into_iter()
                .zip(f64s(&credit, "blame")),
        )
        .filter_map(|(t, cb)| t.map(|t| (t, cb)))
        .collect();
    let cites = rows_of(
        ctx,
        "credit_citations",
        this().and(col("valid")),
        "question_id",
    )
    .await?;
    let mut cited: BTreeMap<(i64, bool), Vec<String>> = BTreeMap::new();
    for ((t, q), answer) in i64s(&cites, "t")
        .into_iter()
        .zip(strings(&cites, "question_id"))
        .zip(i64s(&cites, "answer"))
    {
        if let (Some(t), Some(q), Some(a)) = (t, q, answer) {
            cited.entry((t, a == 1)).or_default().push(q);
        }
    }
    let mut trained: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for table in TRAINING_TABLES {
        let rows = rows_of(ctx, table, this(), "row_id").await?;
        for (row_id, ts) in strings(&rows, "row_id")
            .into_iter()
            .zip(int_lists(&rows, "train_turns"))
        {
            for t in ts {
                trained
                    .entry(t)
                    .or_default()
                    .push(format!("{table}: {}", row_id.clone().unwrap_or_default()));
            }
        }
    }

    let ts = i64s(&turns, "t");
    let msg_idx = i64s(&turns, "msg_idx");
    let (cand, kind, command) = (
        i64s(&turns, "candidate_n"),
        strings(&turns, "cmd_kind"),
        strings(&turns, "command"),
    );
    let (failed, rc, signal) = (
        bools(&turns, "obs_failed"),
        i64s(&turns, "returncode"),
        strings(&turns, "submit_signal"),
    );
    let (rep, rep_prev, run) = (
        bools(&turns, "is_repeat"),
        bools(&turns, "repeats_prev"),
        bools(&turns, "after_repeat_run"),
    );
    let turns = (0..ts.len())
        .map(|i| {
            let t = ts[i].unwrap_or(0);
            let (credit, blame) = credit_by_t.get(&t).copied().unwrap_or((None, None));
            TurnView {
                t,
                msg_idx: msg_idx[i],
                candidate_n: cand[i],
                cmd_kind: kind[i].clone().unwrap_or_default(),
                command: command[i].clone(),
                obs_failed: failed[i],
                returncode: rc[i],
                is_repeat: rep[i] == Some(true),
                repeats_prev: rep_prev[i] == Some(true),
                after_repeat_run: run[i] == Some(true),
                submit_signal: signal[i].clone(),
                credit,
                blame,
                cited_by: cited.get(&(t, true)).cloned().unwrap_or_default(),
                blamed_by: cited.get(&(t, false)).cloned().unwrap_or_default(),
                trained_in: trained.get(&t).cloned().unwrap_or_default(),
            }
        })
        .collect();
    Ok(TrajectoryView {
        traj_id,
        facts,
        turns,
    })
}

/// A lake trajectory as a mini-swe-agent trajectory file
/// (`trajectory_format: mini-swe-agent-1.1`): its messages as recorded (a
/// response the agent rejected is left out, as the agent's own file keeps
/// it only inside the next message), and `info` with the exit status,
/// submission and model, so `mini-extra inspector` can browse it.
#[derive(Debug, Serialize)]
pub struct TrajectoryFile {
    info: serde_json::Value,
    instance_id: Option<String>,
    messages: Vec<FileMessage>,
    trajectory_format: &'static str,
}

/// One message of a [`TrajectoryFile`]; its `extra` is written as the
/// stored text, never re-parsed, so every digit the agent wrote comes back.
#[derive(Debug, Serialize)]
struct FileMessage {
    #[serde(flatten)]
    fields: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Box<serde_json::value::RawValue>>,
}

pub async fn trajectory_file(lake: &Lake, traj_id: &str) -> Result<TrajectoryFile, PipelineError> {
    use serde_json::{json, value::RawValue, Map};
    let ctx = engine::session(lake).await?;
    let this = || col("traj_id").eq(lit(traj_id));
    let traj = rows_of(&ctx, "trajectories", this(), "").await?;
    let first = |name: &str| strings(&traj, name).into_iter().next().flatten();
    if traj.iter().map(RecordBatch::num_rows).sum::<usize>() == 0 {
        return Err(PipelineError::NotFound(traj_id.to_string()));
    }
    let (exit_status, model, instance_id) =
        (first("exit_status"), first("model"), first("instance_id"));
    let rows = rows_of(&ctx, "messages", this(), "idx").await?;
    let (role, content) = (strings(&rows, "role"), strings(&rows, "content"));
    let (reasoning, tool_calls, tool_call_id, recovered) = (
        strings(&rows, "reasoning_content"),
        strings(&rows, "tool_calls"),
        strings(&rows, "tool_call_id"),
        bools(&rows, "recovered"),
    );
    let extra = strings(&rows, "extra");
    let mut messages = Vec::new();
    let mut submission = None;
    for i in 0..role.len() {
        if recovered[i] == Some(true) {
            continue;
        }
        let mut m = Map::new();
        m.insert("role".into(), json!(role[i]));
        m.insert("content".into(), json!(content[i]));
        if let Some(r) = &reasoning[i] {
            m.insert("reasoning_content".into(), json!(r));
        }
        if let Some(calls) = tool_calls[i].as_deref() {
            let calls = serde_json::from_str(calls).unwrap_or_else(|_| json!(calls));
            m.insert("tool_calls".into(), calls);
        }
        if let Some(id) = &tool_call_id[i] {
            m.insert("tool_call_id".into(), json!(id));
        }
        let recorded = extra[i].clone().and_then(|e| RawValue::from_string(e).ok());
        let extra = if role[i].as_deref() == Some("exit") {
            submission = content[i].clone();
            recorded.or_else(|| {
                let synthesized = json!({"exit_status": exit_status, "submission": content[i]});
                RawValue::from_string(synthesized.to_string()).ok()
            })
        } else {
            recorded
        };
        messages.push(FileMessage { fields: m, extra });
    }
    Ok(TrajectoryFile {
        info: json!({
            "exit_status": exit_status,
            "submission": submission,
            "config": {"model": {"model_name": model}},
            "turnlake": {"traj_id": traj_id},
        }),
        instance_id,
        messages,
        trajectory_format: "mini-swe-agent-1.1",
    })
}
