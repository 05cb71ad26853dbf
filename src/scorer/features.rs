//! The scorer's features: `sql/scorer_features.sql` over a set of sides
//! (`scorer_sides`), built for the lake's judged Albedo sides as the
//! `scorer_features` table (`turnlake scorer features`), or in memory for a
//! user's own runs.

use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use std::sync::Arc;

use super::ScorerResult;
use crate::lake::Lake;
use crate::pipeline::sqlstep::run_script;
use crate::pipeline::step::Step;
use crate::pipeline::steps::{required, StepSpec};
use crate::turn::loops::{VALIDATOR_DUP_RATIO, VALIDATOR_MAX_RUN};

pub const SQL: (&str, &str) = (
    "sql/scorer_features.sql",
    include_str!("../../sql/scorer_features.sql"),
);

const INGEST: &str = "run turnlake ingest albedo first";

/// `turnlake scorer features` as a step.
pub const STEP: StepSpec = StepSpec {
    name: "scorer features",
    inputs: &[
        required("trajectories", INGEST),
        required("turns", INGEST),
        required("messages", INGEST),
        required("questions", INGEST),
        required("judgments", INGEST),
    ],
    records: "scorer_features",
    sql: Some(SQL),
};

/// Row order of every features result: by run, sample, side, question.
pub const ORDER: &str = "ORDER BY eval_run_id, sample_id, side, traj_id, question_id";

/// The features query: every column of the `scorer_features` schema file, in its order.
pub fn select_sql() -> String {
    let schema =
        crate::lake::table_schema("scorer_features").expect("schemas/scorer_features.json");
    let columns: Vec<&str> = schema
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    format!("SELECT {} FROM scorer_features {ORDER}", columns.join(", "))
}

/// Columns that identify a row, carry its label or the loop verdicts: not features.
pub const NOT_FEATURES: &[&str] = &[
    "traj_id",
    "eval_run_id",
    "sample_id",
    "side",
    "model",
    "question_id",
    "loop_verdict",
    "judge_looped",
    "label",
];

/// Text columns the model reads one-hot.
pub const CATEGORICAL: &[&str] = &[
    "tag",
    "requires",
    "category",
    "sample_phase",
    "econ_measure",
];

/// `sql/scorer_lake_sides.sql`: the lake's judged Albedo sides, their turns
/// and messages as the features SQL reads them.
pub const LAKE_SIDES_SQL: (&str, &str) = (
    "sql/scorer_lake_sides.sql",
    include_str!("../../sql/scorer_lake_sides.sql"),
);

/// Define the lake's judged sides for the features SQL ([`LAKE_SIDES_SQL`]).
pub async fn register_lake_sides(ctx: &SessionContext) -> ScorerResult<()> {
    Ok(run_script(ctx, LAKE_SIDES_SQL.0, LAKE_SIDES_SQL.1).await?)
}

/// Register the loop thresholds and define `scorer_features` (the sides,
/// turns and messages must be registered).
pub async fn define(ctx: &SessionContext) -> ScorerResult<()> {
    use arrow::array::{Float64Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("dup_cmd_ratio", DataType::Float64, false),
        Field::new("max_cmd_run", DataType::Int64, false),
    ]));
    let params = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Float64Array::from(vec![VALIDATOR_DUP_RATIO])),
            Arc::new(Int64Array::from(vec![VALIDATOR_MAX_RUN as i64])),
        ],
    )
    .expect("loop_params shape");
    // A session over the lake has the scorer_features table: the view replaces it here.
    for name in ["loop_params", "scorer_features", "scorer_features_base"] {
        let _ = ctx.deregister_table(name);
    }
    ctx.register_batch("loop_params", params)
        .map_err(|e| crate::engine::EngineError::Query {
            context: "registering loop_params".into(),
            source: Box::new(e),
        })?;
    run_script(ctx, SQL.0, SQL.1).await?;
    Ok(())
}

/// What `turnlake scorer features` wrote.
#[derive(Debug)]
pub struct FeaturesSummary {
    pub rows: usize,
    pub sides: usize,
    pub labelled: usize,
}

/// Build the `scorer_features` table from the lake's judged sides, in one lake commit.
pub async fn build(lake: &Lake) -> ScorerResult<FeaturesSummary> {
    let step = Step::begin(lake, &STEP, serde_json::json!({})).await?;
    register_lake_sides(&step.ctx).await?;
    define(&step.ctx).await?;
    let rows = step.query(&select_sql(), "scorer_features").await?;
    let summary = FeaturesSummary {
        rows: rows.iter().map(RecordBatch::num_rows).sum(),
        sides: {
            let mut t = crate::columns::strings(&rows, "traj_id");
            t.dedup();
            t.len()
        },
        labelled: crate::columns::i64s(&rows, "label")
            .iter()
            .filter(|l| l.is_some())
            .count(),
    };
    step.write("scorer_features", rows).await?;
    step.finish().await?;
    Ok(summary)
}
