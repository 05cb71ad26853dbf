//! The scorer's lake jobs: fit both models on the lake's current commit and
//! save them under it, and evaluate them on the runs their split held out.

use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use std::collections::BTreeMap;

use super::model::FitParams;
use super::report::{self, ChecklistReport};
use super::store::{self, ModelMeta};
use super::training::{self, Shares};
use super::turns::{self, TurnReport};
use super::{features, ScorerError, ScorerResult};
use crate::columns;
use crate::engine;
use crate::lake::Lake;
use crate::storage::Location;

async fn checklist_rows(ctx: &SessionContext) -> ScorerResult<Vec<RecordBatch>> {
    if !ctx.table_exist("scorer_features").unwrap_or(false) {
        return Err(ScorerError::Data(
            "the lake has no scorer_features table: run turnlake scorer features first".into(),
        ));
    }
    Ok(engine::run_sql(
        ctx,
        &format!("SELECT * FROM scorer_features {}", features::ORDER),
        "reading scorer_features",
    )
    .await?)
}

async fn turn_rows(ctx: &SessionContext) -> ScorerResult<Vec<RecordBatch>> {
    if !ctx.table_exist("turn_credit").unwrap_or(false) {
        return Err(ScorerError::Data(
            "the lake has no turn_credit table: run turnlake credit first".into(),
        ));
    }
    turns::features(ctx, turns::Turns::Judged).await
}

/// Both fitted models and where they were saved.
pub struct Fitted {
    pub checklist: (ModelMeta, Location),
    pub turn_credit: (ModelMeta, Location),
}

/// Fit the checklist scorer and the turn-credit model on the lake as it is now.
pub async fn fit(lake: &Lake, params: &FitParams, shares: Shares) -> ScorerResult<Fitted> {
    let view = lake.view().await?;
    let ctx = engine::session(lake).await?;
    let rows = checklist_rows(&ctx).await?;
    let table = report::checklist_table(&rows);
    let (meta, json) = run_blocking(|| training::fit(&table, params, shares, &view))?;
    let at = store::save(lake, &meta, &json).await?;
    let checklist = (meta, at);

    let rows = turn_rows(&ctx).await?;
    let table = turns::table(&rows);
    let (meta, json) = run_blocking(|| training::fit(&table, params, shares, &view))?;
    let at = store::save(lake, &meta, &json).await?;
    Ok(Fitted {
        checklist,
        turn_credit: (meta, at),
    })
}

/// CPU-bound model work, kept off the async runtime's worker threads.
fn run_blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Evaluate both saved models on their held-out runs and save their reports.
pub async fn evaluate(lake: &Lake) -> ScorerResult<(ChecklistReport, TurnReport)> {
    let hint = "run turnlake scorer fit first";
    let (meta, model) = store::load(lake, store::CHECKLIST, hint).await?;
    let ctx = engine::session(lake).await?;
    let rows = checklist_rows(&ctx).await?;
    let evals = engine::run_sql(
        &ctx,
        "SELECT eval_run_id, required_win_margin FROM evals",
        "duel margins",
    )
    .await?;
    let margins: BTreeMap<String, f64> = columns::strings(&evals, "eval_run_id")
        .into_iter()
        .zip(columns::f64s(&evals, "required_win_margin"))
        .filter_map(|(r, m)| Some((r?, m?)))
        .collect();
    let checklist = run_blocking(|| report::evaluate(&meta, &model, &rows, &margins))?;
    store::save_report(lake, store::CHECKLIST, &checklist).await?;

    let (meta, model) = store::load(lake, store::TURN_CREDIT, hint).await?;
    let rows = turn_rows(&ctx).await?;
    let turn = run_blocking(|| turns::evaluate(&meta, &model, &rows))?;
    store::save_report(lake, store::TURN_CREDIT, &turn).await?;
    Ok((checklist, turn))
}

/// One checklist question of a judged side: the judge's answer beside the scorer's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SideAnswer {
    pub question_id: String,
    pub tag: Option<String>,
    pub judge: Option<i64>,
    pub p_yes: f64,
    pub predicted: bool,
}

/// The scorer's answers for one side of `scorer_features`, or None when the
/// lake has no fitted scorer or no features for it.
pub async fn side_answers(lake: &Lake, traj_id: &str) -> ScorerResult<Option<Vec<SideAnswer>>> {
    use datafusion::prelude::{col, lit};
    let Ok((meta, model)) = store::load(lake, store::CHECKLIST, "").await else {
        return Ok(None);
    };
    let ctx = engine::session(lake).await?;
    if !ctx.table_exist("scorer_features").unwrap_or(false) {
        return Ok(None);
    }
    let err = |e| {
        ScorerError::Engine(crate::engine::EngineError::Query {
            context: format!("reading the features of {traj_id}"),
            source: Box::new(e),
        })
    };
    let rows = ctx
        .table("scorer_features")
        .await
        .and_then(|t| {
            t.filter(col("traj_id").eq(lit(traj_id)))?
                .sort(vec![col("question_id").sort(true, false)])
        })
        .map_err(err)?
        .collect()
        .await
        .map_err(err)?;
    let n: usize = rows.iter().map(RecordBatch::num_rows).sum();
    if n == 0 {
        return Ok(None);
    }
    let all: Vec<usize> = (0..n).collect();
    let p = training::predict(&meta, &model, &rows, &all)?;
    let looped = columns::bools(&rows, "loop_verdict").contains(&Some(true));
    Ok(Some(
        columns::strings(&rows, "question_id")
            .into_iter()
            .zip(columns::strings(&rows, "tag"))
            .zip(columns::i64s(&rows, "label"))
            .zip(p)
            .map(|(((q, tag), judge), p)| SideAnswer {
                question_id: q.unwrap_or_default(),
                tag,
                judge,
                p_yes: p as f64,
                predicted: !looped && p as f64 >= meta.threshold,
            })
            .collect(),
    ))
}
