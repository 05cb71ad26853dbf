//! Fitting either model on a labelled feature table: rows dealt out by eval
//! run, the feature spec taken from the table, boosting with early stopping,
//! and the meta that lets the model be used and audited later.

use arrow::record_batch::RecordBatch;

use super::matrix::FeatureSpec;
use super::model::{self, Data, FitParams, Model};
use super::split::{Part, Split};
use super::store::ModelMeta;
use super::{ScorerError, ScorerResult};
use crate::columns;
use crate::digest::sha256_hex;
use crate::lake::View;

/// Shares of eval runs held out for testing and for early stopping.
#[derive(Debug, Clone, Copy)]
pub struct Shares {
    pub test: f64,
    pub validation: f64,
}

impl Default for Shares {
    fn default() -> Self {
        Shares {
            test: 0.25,
            validation: 0.15,
        }
    }
}

/// Where a predicted P(yes) becomes a yes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// 0.5: the most likely answer (the checklist scorer, judged by accuracy).
    Half,
    /// The cut that maximizes Cohen's kappa on the validation runs (the
    /// turn-credit model, whose rarer positive class 0.5 under-calls).
    MaxKappa,
}

/// The cut in 0.05..=0.95 (steps of 0.01) with the highest kappa of
/// `p >= cut` against `y`; the lowest such cut on ties.
pub fn max_kappa_cut(p: &[f32], y: &[f32]) -> f64 {
    let truth: Vec<bool> = y.iter().map(|y| *y == 1.0).collect();
    let mut best = (f64::NEG_INFINITY, 0.5);
    for step in 5..=95 {
        let cut = step as f64 / 100.0;
        let pred: Vec<bool> = p.iter().map(|&p| p as f64 >= cut).collect();
        if let Some(k) = super::metrics::kappa(&pred, &truth) {
            if k > best.0 {
                best = (k, cut);
            }
        }
    }
    best.1
}

/// A labelled table to fit on: which rows may be used and what is not a feature.
pub struct Table<'a> {
    pub name: &'a str,
    pub batches: &'a [RecordBatch],
    /// Rows that may be fit on or evaluated (labelled, not excluded by rule).
    pub usable: Vec<bool>,
    pub not_features: &'a [&'a str],
    pub categorical: &'a [&'a str],
    pub threshold: Threshold,
}

/// Row indices of `usable` rows in each part of `split`.
pub fn rows_in(table: &Table, split: &Split, part: Part) -> Vec<usize> {
    let runs = columns::strings(table.batches, "eval_run_id");
    (0..runs.len())
        .filter(|&i| table.usable[i] && split.part(runs[i].as_deref().unwrap_or("")) == part)
        .collect()
}

/// 0/1 labels of `rows`.
pub fn labels(batches: &[RecordBatch], rows: &[usize]) -> Vec<f32> {
    let all = columns::i64s(batches, "label");
    rows.iter()
        .map(|&i| all[i].unwrap_or(0).clamp(0, 1) as f32)
        .collect()
}

/// Fit `table`'s model; returns its meta and XGBoost JSON.
pub fn fit(
    table: &Table,
    params: &FitParams,
    shares: Shares,
    view: &View,
) -> ScorerResult<(ModelMeta, String)> {
    let runs = columns::strings(table.batches, "eval_run_id");
    let usable_runs = runs
        .iter()
        .zip(&table.usable)
        .filter(|(_, u)| **u)
        .filter_map(|(r, _)| r.clone());
    let split = Split::by_run(usable_runs, params.seed, shares.test, shares.validation)
        .map_err(|e| ScorerError::Data(format!("{}: {e}", table.name)))?;
    let spec = FeatureSpec::infer(table.batches, table.not_features, table.categorical);
    let train_rows = rows_in(table, &split, Part::Train);
    let val_rows = rows_in(table, &split, Part::Validation);
    let (tx, ty) = (
        spec.matrix(table.batches, &train_rows),
        labels(table.batches, &train_rows),
    );
    let (vx, vy) = (
        spec.matrix(table.batches, &val_rows),
        labels(table.batches, &val_rows),
    );
    let cols = spec.width();
    let trained = model::fit(
        &Data {
            x: &tx,
            y: &ty,
            cols,
        },
        &Data {
            x: &vx,
            y: &vy,
            cols,
        },
        params,
    )?;
    let threshold = match table.threshold {
        Threshold::Half => 0.5,
        Threshold::MaxKappa => {
            let model = Model::from_json(trained.model_json.as_bytes())?;
            max_kappa_cut(&model.predict(&vx, cols)?, &vy)
        }
    };
    let meta = ModelMeta {
        name: table.name.to_string(),
        model_id: sha256_hex(trained.model_json.as_bytes())[..16].to_string(),
        feature_names: spec.names(),
        features: spec,
        params: params.clone(),
        rounds: trained.rounds,
        best_validation_log_loss: trained.best_validation_log_loss,
        split,
        threshold,
        lake_commit: view.commit.as_ref().map(|c| c.version),
        tables: view.tables.clone(),
        train_rows: train_rows.len(),
        validation_rows: val_rows.len(),
        turnlake: env!("CARGO_PKG_VERSION").to_string(),
    };
    Ok((meta, trained.model_json))
}

/// P(yes) of `rows` under a saved model.
pub fn predict(
    meta: &ModelMeta,
    model: &Model,
    batches: &[RecordBatch],
    rows: &[usize],
) -> ScorerResult<Vec<f32>> {
    let x = meta.features.matrix(batches, rows);
    model.predict(&x, meta.features.width())
}
