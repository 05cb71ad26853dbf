//! `turnlake export samples --out DIR [--runs ID,...] [--n 1000]`: known
//! judged Albedo samples as the inputs a user's model continues, so a batch
//! of the user's runs on them can be scored against the judged king
//! (`turnlake scorer report`). The seed's advice is 500-1000 samples, not
//! 100: a margin of 0.025 needs about 539 to resolve.

use arrow::array::StringArray;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::columns::{f64s, i64s, strings};
use crate::engine::{self, EngineError};
use crate::lake::Lake;
use crate::pipeline::sqlstep::run_script;

const SQL_FILE: &str = "sql/export_samples.sql";
const SQL: &str = include_str!("../../sql/export_samples.sql");

/// One exported sample: what the model is given, and what the king scored.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KnownSample {
    pub sample_id: String,
    pub eval_run_id: String,
    /// The rendered prompt the duelling models were given, byte-exact.
    pub prompt: Option<String>,
    /// The recorded messages before the first scored turn.
    pub messages: Vec<ContextMessage>,
    /// The task: the first user message.
    pub task: Option<String>,
    pub king_score: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ContextMessage {
    pub role: String,
    pub content: String,
}

/// The first `n` known samples (by sample id) of `runs` (every run when empty).
pub async fn known_samples(
    lake: &Lake,
    runs: &[String],
    n: usize,
) -> Result<Vec<KnownSample>, EngineError> {
    let ctx = engine::step_session(lake).await?;
    let err = EngineError::query(SQL_FILE);
    let schema = Arc::new(Schema::new(vec![Field::new(
        "eval_run_id",
        DataType::Utf8,
        false,
    )]));
    let ids = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(runs.to_vec()))])
        .map_err(|e| err(e.into()))?;
    ctx.register_batch("export_runs", ids).map_err(&err)?;
    run_script(&ctx, SQL_FILE, SQL).await?;
    let frame = ctx
        .table("export_samples")
        .await
        .map_err(&err)?
        .sort(vec![datafusion::prelude::col("sample_id").sort(true, false)])
        .map_err(&err)?
        .limit(0, Some(n))
        .map_err(&err)?;
    let rows = frame.collect().await.map_err(&err)?;
    let (traj, run, sample, king, prompt) = (
        strings(&rows, "traj_id"),
        strings(&rows, "eval_run_id"),
        strings(&rows, "sample_id"),
        f64s(&rows, "king_score"),
        strings(&rows, "prompt_text"),
    );
    let msgs = engine::run_sql(
        &ctx,
        "SELECT traj_id, idx, role, content FROM export_sample_messages ORDER BY traj_id, idx",
        SQL_FILE,
    )
    .await?;
    let mut context: BTreeMap<String, Vec<ContextMessage>> = BTreeMap::new();
    let (m_traj, _, role, content) = (
        strings(&msgs, "traj_id"),
        i64s(&msgs, "idx"),
        strings(&msgs, "role"),
        strings(&msgs, "content"),
    );
    for i in 0..m_traj.len() {
        context
            .entry(m_traj[i].clone().unwrap_or_default())
            .or_default()
            .push(ContextMessage {
                role: role[i].clone().unwrap_or_default(),
                content: content[i].clone().unwrap_or_default(),
            });
    }
    Ok((0..traj.len())
        .map(|i| {
            let messages = context
                .remove(traj[i].as_deref().unwrap_or(""))
                .unwrap_or_default();
            KnownSample {
                sample_id: sample[i].clone().unwrap_or_default(),
                eval_run_id: run[i].clone().unwrap_or_default(),
                prompt: prompt[i].clone(),
                task: messages
                    .iter()
                    .find(|m| m.role == "user")
                    .map(|m| m.content.clone()),
                messages,
                king_score: king[i],
            }
        })
        .collect())
}
