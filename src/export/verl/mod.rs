//! The verl export (`../shared/docs/verl-export.md`): one trajectory per
//! line with its own turns in `t` order, each with the exact recorded
//! messages before it as the prompt, the recorded assistant content as the
//! response and `r_turn` from its label (judge credit, or the turn-credit
//! model's label, joined by `turn_sha`); per trajectory the strict
//! `r_format`, `r_exit` from the recorded exit, `r_outcome` and `r_judge`.
//! Beside it: verl's RL Parquet, a multi-turn SFT Parquet and a summary.
//! Labels from the model need its calibration report with kappa at or above
//! the threshold; otherwise nothing is written.

mod shapes;
pub mod tokens;
mod writers;

pub use shapes::{rl_schema, sft_schema};
use writers::*;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use futures::StreamExt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ExportError;
use crate::columns::{bools, f64s, i64s, strings};
use crate::engine;
use crate::lake::Lake;
use crate::pipeline::sqlstep::run_script;
use crate::scorer::store;
use crate::scorer::turns::TurnReport;

pub const SQL: (&str, &str) = (
    "sql/verl_export.sql",
    include_str!("../../../sql/verl_export.sql"),
);

/// The files an export writes, in manifest order.
pub const FILES: [&str; 4] = [
    "trajectories.jsonl",
    "rl.parquet",
    "sft.parquet",
    "summary.json",
];

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct VerlOptions {
    pub sources: Vec<String>,
    /// Least held-out kappa of the turn-credit model whose labels are exported.
    pub min_kappa: f64,
    /// The trainer's weight of the trajectory-level advantage.
    pub alpha: f64,
    /// The model folder whose tokenizer and template count summary.json's
    /// token lengths (turnlake's own when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
}

/// `r_exit` from the recorded exit and the last turn with a true label.
pub fn r_exit(t_exit: Option<i64>, t_last_evidence: Option<i64>) -> Option<f64> {
    match (t_exit, t_last_evidence) {
        (None, _) => None,
        (Some(_), None) => Some(-0.5),
        (Some(e), Some(l)) if e == l => Some(0.0),
        (Some(e), Some(l)) if e < l => Some(-0.75),
        _ => Some(-0.5),
    }
}

use super::ExportMessage as Message;

/// A trajectory's recorded messages, each with whether the agent sent it to
/// the model (a recovered format-error response it did not).
struct Recorded {
    messages: Vec<Message>,
    sent: Vec<bool>,
}

impl Recorded {
    /// The messages before `end` that the model saw.
    fn sent_before(&self, end: usize) -> Vec<&Message> {
        self.sent_indexed_before(end).map(|(_, m)| m).collect()
    }

    /// [`Self::sent_before`], each with its index among the recorded messages.
    fn sent_indexed_before(&self, end: usize) -> impl Iterator<Item = (usize, &Message)> {
        self.messages[..end]
            .iter()
            .enumerate()
            .zip(&self.sent)
            .filter(|(_, sent)| **sent)
            .map(|(m, _)| m)
    }
}

/// What an export wrote, as its summary file says it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct VerlSummary {
    pub trajectories: u64,
    pub turns: u64,
    pub r_turn_positive: u64,
    pub r_turn_negative: u64,
    pub r_format_pass: u64,
    pub r_format_pass_rate: f64,
    /// Trajectories by `t_last_evidence`.
    pub t_last_evidence: BTreeMap<i64, u64>,
    /// Trajectories where no turn's label is true (`t_last_evidence` null).
    pub t_last_evidence_null: u64,
    /// Trajectories by `r_exit` ("null" where no exit is recorded).
    pub r_exit: BTreeMap<String, u64>,
    pub r_outcome_null: u64,
    pub by_source: BTreeMap<String, u64>,
    /// Turns by where their label came from (`judge`, `scorer`).
    pub label_sources: BTreeMap<String, u64>,
    /// The turn-credit model whose labels were exported, and its held-out kappa.
    pub calibration: Option<Calibration>,
    /// Prompt and response lengths in tokens.
    pub tokens: tokens::TokenLengths,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Calibration {
    pub model_id: String,
    pub kappa: f64,
    pub min_kappa: f64,
}

/// A distribution key: the value, or "null".
fn key(v: Option<f64>) -> String {
    v.map_or("null".to_string(), |v| v.to_string())
}

/// A trajectory's facts and own turns, from `verl_trajectories` and `verl_turns`.
struct Trajectory {
    source: String,
    sample_id: Option<String>,
    side: Option<String>,
    r_judge: Option<f64>,
    r_outcome: Option<f64>,
    judged: bool,
    /// The tool schema the run was given (JSON), parsed for the JSONL line.
    tools: Option<(String, serde_json::Value)>,
    /// The rendered prompt the model was given, byte-exact (Albedo sides).
    prompt_text: Option<String>,
    /// The task instance (mini-coder, mswea).
    instance_id: Option<String>,
    turns: Vec<Turn>,
}

struct Turn {
    t: i64,
    msg_idx: i64,
    turn_sha: String,
    parsed: bool,
    exits: bool,
    label: Option<bool>,
}

/// Load the exported trajectories and their labelled turns; refuse scorer
/// labels without a good enough calibration report.
async fn plan(
    ctx: &datafusion::prelude::SessionContext,
    lake: &Lake,
    opts: &VerlOptions,
) -> Result<(BTreeMap<String, Trajectory>, Option<Calibration>), ExportError> {
    let sources = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "source",
            DataType::Utf8,
            false,
        )])),
        vec![Arc::new(arrow::array::StringArray::from(
            opts.sources.clone(),
        ))],
    )?;
    ctx.register_batch("verl_sources", sources)?;
    for (table, hint) in [
        ("trajectories", "run turnlake ingest first"),
        ("turns", "run turnlake ingest first"),
        ("messages", "run turnlake ingest first"),
    ] {
        if !ctx.table_exist(table)? {
            return Err(ExportError::Refused(format!(
                "the lake has no {table} table: {hint}"
            )));
        }
    }
    if opts.sources.iter().any(|s| s == "albedo") && !ctx.table_exist("turn_credit")? {
        return Err(ExportError::Refused(
            "the lake has no turn_credit table for the judged turns: run turnlake credit first"
                .into(),
        ));
    }
    engine::register_empty_if_missing(ctx, "turn_credit")?;
    engine::register_empty_if_missing(ctx, "turn_labels")?;
    run_script(ctx, SQL.0, SQL.1).await?;

    let facts = engine::run_sql(
        ctx,
        "SELECT * FROM verl_trajectories ORDER BY traj_id",
        "verl trajectories",
    )
    .await?;
    let mut out = BTreeMap::new();
    let (ids, source, sample, side) = (
        strings(&facts, "traj_id"),
        strings(&facts, "source"),
        strings(&facts, "sample_id"),
        strings(&facts, "side"),
    );
    let (judge, outcome, judged, tools) = (
        f64s(&facts, "r_judge"),
        f64s(&facts, "r_outcome"),
        bools(&facts, "judged"),
        strings(&facts, "tools"),
    );
    let (prompt_text, instance) = (
        strings(&facts, "prompt_text"),
        strings(&facts, "instance_id"),
    );
    for i in 0..ids.len() {
        out.insert(
            ids[i].clone().unwrap_or_default(),
            Trajectory {
                source: source[i].clone().unwrap_or_default(),
                sample_id: sample[i].clone(),
                side: side[i].clone(),
                r_judge: judge[i],
                r_outcome: outcome[i],
                judged: judged[i].unwrap_or(false),
                tools: tools[i].as_ref().and_then(|t| {
                    serde_json::from_str::<serde_json::Value>(t)
                        .ok()
                        .map(|v| (t.clone(), v))
                }),
                prompt_text: prompt_text[i].clone(),
                instance_id: instance[i].clone(),
                turns: Vec::new(),
            },
        );
    }
    let turns = engine::run_sql(
        ctx,
        "SELECT * FROM verl_turns ORDER BY traj_id, t",
        "verl turns",
    )
    .await?;
    let (traj, t, msg_idx, sha) = (
        strings(&turns, "traj_id"),
        i64s(&turns, "t"),
        i64s(&turns, "msg_idx"),
        strings(&turns, "turn_sha"),
    );
    let (parsed, exits, label, model) = (
        bools(&turns, "parsed"),
        bools(&turns, "exits"),
        bools(&turns, "label"),
        strings(&turns, "label_model"),
    );
    let mut scorer_models: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..traj.len() {
        let id = traj[i].clone().unwrap_or_default();
        let Some(tr) = out.get_mut(&id) else { continue };
        if !tr.judged {
            if let Some(m) = &model[i] {
                *scorer_models.entry(m.clone()).or_default() += 1;
            }
        }
        tr.turns.push(Turn {
            t: t[i].unwrap_or(0),
            msg_idx: msg_idx[i].unwrap_or(-1),
            turn_sha: sha[i].clone().unwrap_or_default(),
            parsed: parsed[i].unwrap_or(false),
            exits: exits[i].unwrap_or(false),
            label: label[i],
        });
    }
    let unjudged_turns = out
        .values()
        .filter(|t| !t.judged)
        .map(|t| t.turns.len())
        .sum::<usize>();
    let calibration = if unjudged_turns == 0 {
        None
    } else {
        let report: TurnReport = store::load_report(lake, store::TURN_CREDIT, "")
            .await
            .map_err(|_| {
                ExportError::Refused(format!(
                    "{unjudged_turns} exported turns carry the local scorer's labels, and the lake has no calibration \
                     report of the turn-credit model: run `turnlake scorer eval` (after `turnlake scorer fit` and \
                     `turnlake scorer label`); nothing was written"
                ))
            })?;
        let kappa = report.kappa.unwrap_or(f64::NEG_INFINITY);
        if kappa < opts.min_kappa {
            return Err(ExportError::Refused(format!(
                "the turn-credit model {} has held-out kappa {} below --min-kappa {}: its labels are not \
                 exported (refit and recalibrate with `turnlake scorer fit` and `turnlake scorer eval`, or export \
                 --sources albedo); nothing was written",
                report.model_id,
                report.kappa.map_or("n/a".into(), |k| format!("{k:.3}")),
                opts.min_kappa
            )));
        }
        if let Some(other) = scorer_models.keys().find(|m| **m != report.model_id) {
            return Err(ExportError::Refused(format!(
                "turn_labels come from model {other} but the calibration report is of model {}: run \
                 `turnlake scorer label` and `turnlake scorer eval` again; nothing was written",
                report.model_id
            )));
        }
        Some(Calibration {
            model_id: report.model_id,
            kappa,
            min_kappa: opts.min_kappa,
        })
    };
    Ok((out, calibration))
}

/// One trajectory's recorded messages, checked against their stored hashes.
type Group = (String, Recorded);

/// Write the export's files into the local folder `dir`.
pub async fn write(
    lake: &Lake,
    opts: &VerlOptions,
    dir: &Path,
) -> Result<VerlSummary, ExportError> {
    let ctx = engine::session(lake).await?;
    let (trajectories, calibration) = plan(&ctx, lake, opts).await?;
    let stream = ctx.table("verl_messages").await?.execute_stream().await?;

    // Assembly and file writes run on a blocking thread, fed one trajectory at a time.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Group>(64);
    let (dir_owned, opts_owned) = (dir.to_path_buf(), opts.clone());
    let writer = tokio::task::spawn_blocking(move || -> Result<VerlSummary, ExportError> {
        let mut counter = tokens::TokenCounter::new(opts_owned.model.as_deref())?;
        let mut w = Writers::create(&dir_owned)?;
        let mut summary = VerlSummary {
            calibration,
            ..VerlSummary::default()
        };
        let mut pending = trajectories.iter().peekable();
        while let Some((id, messages)) = rx.blocking_recv() {
            // Trajectories are in traj_id order on both sides; one without messages is an error.
            let Some((next, tr)) = pending.next() else {
                break;
            };
            if *next != id {
                return Err(ExportError::Integrity {
                    traj_id: next.min(&id).clone(),
                    reason: "no recorded messages".into(),
                });
            }
            write_trajectory(
                &mut w,
                &mut summary,
                &mut counter,
                &opts_owned,
                &id,
                tr,
                &messages,
            )?;
        }
        if let Some((next, _)) = pending.next() {
            return Err(ExportError::Integrity {
                traj_id: next.clone(),
                reason: "no recorded messages".into(),
            });
        }
        summary.r_format_pass_rate =
            summary.r_format_pass as f64 / summary.trajectories.max(1) as f64;
        summary.tokens = counter.lengths();
        w.finish()?;
        Ok(summary)
    });

    let feed = async {
        let mut stream = stream;
        let mut current: Option<Group> = None;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let b = std::slice::from_ref(&batch);
            let (ids, idx, role, content, intact) = (
                strings(b, "traj_id"),
                i64s(b, "idx"),
                strings(b, "role"),
                strings(b, "content"),
                bools(b, "intact"),
            );
            let (reasoning, tool_calls, tool_call_id, recovered) = (
                strings(b, "reasoning_content"),
                strings(b, "tool_calls"),
                strings(b, "tool_call_id"),
                bools(b, "recovered"),
            );
            for i in 0..ids.len() {
                let id = ids[i].clone().unwrap_or_default();
                if current.as_ref().is_some_and(|(c, _)| *c != id)
                    && tx.send(current.take().expect("checked")).await.is_err()
                {
                    return Ok(());
                }
                let group = current.get_or_insert_with(|| {
                    (
                        id.clone(),
                        Recorded {
                            messages: Vec::new(),
                            sent: Vec::new(),
                        },
                    )
                });
                let text = content[i].clone().unwrap_or_default();
                let n = group.1.messages.len();
                if idx[i] != Some(n as i64) {
                    return Err(ExportError::Integrity {
                        traj_id: id,
                        reason: format!("message {n} is missing"),
                    });
                }
                if intact[i] != Some(true) {
                    return Err(ExportError::Integrity {
                        traj_id: id,
                        reason: format!("message {n} does not match its stored content hash"),
                    });
                }
                let message = Message::from_stored(
                    role[i].clone().unwrap_or_default(),
                    text,
                    reasoning[i].clone(),
                    tool_calls[i].as_deref(),
                    tool_call_id[i].clone(),
                )
                .ok_or_else(|| ExportError::Integrity {
                    traj_id: id.clone(),
                    reason: format!("message {n}'s stored tool_calls are not JSON"),
                })?;
                group.1.messages.push(message);
                group.1.sent.push(recovered[i] != Some(true));
            }
        }
        if let Some(group) = current.take() {
            let _ = tx.send(group).await;
        }
        Ok::<(), ExportError>(())
    };
    let fed = feed.await;
    drop(tx);
    let written = writer
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    fed?;
    let summary = written?;
    let mut body = serde_json::to_vec_pretty(&summary).map_err(std::io::Error::from)?;
    body.push(b'\n');
    std::fs::write(dir.join(FILES[3]), body)?;
    Ok(summary)
}

/// A local scratch folder for an export to `out`: beside it when local (so
/// publishing is a rename), else in the temporary folder.
pub fn scratch_for(out: &crate::storage::Location) -> std::io::Result<tempfile::TempDir> {
    match out.as_local() {
        Some(p) => {
            let parent: PathBuf = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."));
            std::fs::create_dir_all(&parent)?;
            tempfile::Builder::new()
                .prefix(".verl-export")
                .tempdir_in(parent)
        }
        None => tempfile::tempdir(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_exit_follows_the_contract() {
        assert_eq!(r_exit(None, Some(3)), None);
        assert_eq!(r_exit(None, None), None);
        assert_eq!(r_exit(Some(5), None), Some(-0.5));
        assert_eq!(r_exit(Some(5), Some(5)), Some(0.0));
        assert_eq!(r_exit(Some(5), Some(7)), Some(-0.75));
        assert_eq!(r_exit(Some(8), Some(6)), Some(-0.5));
    }
}
