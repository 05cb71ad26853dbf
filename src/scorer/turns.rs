//! The turn-credit model: from a turn's own features (command kind,
//! position, previous failure, repeats, what kind of command it runs again)
//! predict whether the judge's citations give it credit. Fit and evaluated
//! like the checklist scorer (split by eval run, held-out kappa); it labels
//! the turns of runs no judge saw (`turn_labels`), which the verl export reads.

use arrow::array::{BooleanArray, Float64Array, Int32Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::prelude::{col, lit, Expr, SessionContext};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::split::Part;
use super::store::{self, ModelMeta};
use super::training::{self, Table};
use super::{metrics, ScorerResult};
use crate::columns;
use crate::engine::EngineError;
use crate::lake::Lake;
use crate::pipeline::sqlstep::run_script;
use crate::pipeline::step::Step;
use crate::pipeline::steps::{required, StepSpec};

pub const SQL: (&str, &str) = (
    "sql/turn_label_features.sql",
    include_str!("../../sql/turn_label_features.sql"),
);

const INGEST: &str = "run turnlake ingest first";

/// `turnlake scorer label` as a step.
pub const STEP: StepSpec = StepSpec {
    name: "scorer label",
    inputs: &[
        required("turns", INGEST),
        required("trajectories", INGEST),
        required("messages", INGEST),
        required("turn_credit", "run turnlake credit first"),
    ],
    records: "turn_labels",
    sql: Some(SQL),
};

const NOT_FEATURES: &[&str] = &[
    "traj_id",
    "source",
    "t",
    "turn_sha",
    "eval_run_id",
    "judged_turn",
    "label",
];
const CATEGORICAL: &[&str] = &["cmd_kind"];

/// Every turn's features of `which`, in a stable order.
pub async fn features(ctx: &SessionContext, which: Turns) -> ScorerResult<Vec<RecordBatch>> {
    run_script(ctx, SQL.0, SQL.1).await?;
    let err = EngineError::query("turn-credit features");
    let order = ["source", "traj_id", "t"].map(|c| col(c).sort(true, false));
    let frame = ctx
        .table("turn_label_features")
        .await
        .map_err(&err)?
        .filter(which.predicate())
        .map_err(&err)?
        .sort(order.to_vec())
        .map_err(&err)?;
    Ok(frame.collect().await.map_err(err)?)
}

/// The turns a turn scorer reads.
#[derive(Debug, Clone, Copy)]
pub enum Turns {
    /// Judged turns of Albedo sides the judge did not call looped.
    Judged,
    /// Turns no judge saw.
    Unjudged,
}

impl Turns {
    fn predicate(self) -> Expr {
        match self {
            Turns::Judged => col("judged_turn"),
            Turns::Unjudged => col("source").not_eq(lit("albedo")),
        }
    }
}

pub fn table(batches: &[RecordBatch]) -> Table<'_> {
    let judged = columns::bools(batches, "judged_turn");
    let labels = columns::i64s(batches, "label");
    Table {
        name: store::TURN_CREDIT,
        batches,
        usable: judged
            .iter()
            .zip(&labels)
            .map(|(j, l)| j.unwrap_or(false) && l.is_some())
            .collect(),
        not_features: NOT_FEATURES,
        categorical: CATEGORICAL,
        threshold: training::Threshold::MaxKappa,
    }
}

/// Held-out agreement of predicted with judge-earned credit per turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnReport {
    pub model_id: String,
    pub lake_commit: Option<u64>,
    pub held_out_runs: usize,
    pub held_out_turns: usize,
    /// Share of held-out turns that earned credit.
    pub earning_rate: f64,
    /// Accuracy of always answering the majority class.
    pub majority_accuracy: Option<f64>,
    pub accuracy: Option<f64>,
    pub auc: Option<f64>,
    pub kappa: Option<f64>,
}

pub fn evaluate(
    meta: &ModelMeta,
    model: &super::model::Model,
    batches: &[RecordBatch],
) -> ScorerResult<TurnReport> {
    let table = table(batches);
    let test = training::rows_in(&table, &meta.split, Part::Test);
    let p = training::predict(meta, model, batches, &test)?;
    let judge: Vec<bool> = training::labels(batches, &test)
        .iter()
        .map(|y| *y == 1.0)
        .collect();
    let predicted: Vec<bool> = p.iter().map(|&p| p as f64 >= meta.threshold).collect();
    let scores: Vec<f64> = p.iter().map(|&p| p as f64).collect();
    let rate = judge.iter().filter(|j| **j).count() as f64 / judge.len().max(1) as f64;
    let majority = vec![rate >= 0.5; judge.len()];
    Ok(TurnReport {
        model_id: meta.model_id.clone(),
        lake_commit: meta.lake_commit,
        held_out_runs: meta.split.test.len(),
        held_out_turns: judge.len(),
        earning_rate: rate,
        majority_accuracy: metrics::accuracy(&majority, &judge),
        accuracy: metrics::accuracy(&predicted, &judge),
        auc: metrics::auc(&scores, &judge),
        kappa: metrics::kappa(&predicted, &judge),
    })
}

/// What `turnlake scorer label` wrote.
#[derive(Debug)]
pub struct LabelSummary {
    pub turns: usize,
    pub earning: usize,
    pub model_id: String,
}

/// Label every turn no judge saw with the saved turn-credit model, as the
/// `turn_labels` table, in one lake commit.
pub async fn label(lake: &Lake) -> ScorerResult<LabelSummary> {
    let (meta, model) =
        store::load(lake, store::TURN_CREDIT, "run turnlake scorer fit first").await?;
    let step = Step::begin(lake, &STEP, serde_json::json!({"model_id": meta.model_id})).await?;
    let batches = features(&step.ctx, Turns::Unjudged).await?;
    let rows: Vec<usize> = (0..batches.iter().map(RecordBatch::num_rows).sum()).collect();
    let p = training::predict(&meta, &model, &batches, &rows)?;
    let earns: Vec<bool> = p.iter().map(|&p| p as f64 >= meta.threshold).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("traj_id", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("t", DataType::Int32, false),
        Field::new("turn_sha", DataType::Utf8, false),
        Field::new("p_credit", DataType::Float64, false),
        Field::new("earns_credit", DataType::Boolean, false),
        Field::new("model_id", DataType::Utf8, false),
    ]));
    let text = |name| {
        columns::strings(&batches, name)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect::<Vec<_>>()
    };
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(text("traj_id"))),
            Arc::new(StringArray::from(text("source"))),
            Arc::new(Int32Array::from(
                columns::i64s(&batches, "t")
                    .into_iter()
                    .map(|t| t.unwrap_or(0) as i32)
                    .collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(text("turn_sha"))),
            Arc::new(Float64Array::from(
                p.iter().map(|&p| p as f64).collect::<Vec<_>>(),
            )),
            Arc::new(BooleanArray::from(earns.clone())),
            Arc::new(StringArray::from(vec![meta.model_id.clone(); rows.len()])),
        ],
    )
    .map_err(|e| super::ScorerError::Data(format!("turn_labels: {e}")))?;
    step.write("turn_labels", vec![batch]).await?;
    step.finish().await?;
    Ok(LabelSummary {
        turns: rows.len(),
        earning: earns.iter().filter(|e| **e).count(),
        model_id: meta.model_id,
    })
}
