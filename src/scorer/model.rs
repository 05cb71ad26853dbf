//! Gradient-boosted trees through XGBoost: boosting rounds driven one at a
//! time (`Booster::update`) with early stopping on a validation split, then
//! the model refit for the best number of rounds. Same data, parameters and
//! seed: the same model bytes. Without the `scorer` feature there is no
//! booster: fitting or loading a model says which feature builds it.

use serde::{Deserialize, Serialize};
#[cfg(feature = "scorer")]
use std::collections::HashMap;
#[cfg(feature = "scorer")]
use xgboost_rs::{Booster, DMatrix};

use super::ScorerResult;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitParams {
    pub seed: u64,
    pub eta: f64,
    pub max_depth: u32,
    pub max_rounds: u32,
    /// Stop after this many rounds without a better validation log loss.
    pub patience: u32,
    pub subsample: f64,
    pub colsample_bytree: f64,
    pub min_child_weight: f64,
    /// XGBoost threads; the model depends on it only through floating-point order.
    pub threads: u32,
}

impl Default for FitParams {
    fn default() -> Self {
        FitParams {
            seed: 7,
            eta: 0.1,
            max_depth: 6,
            max_rounds: 400,
            patience: 25,
            subsample: 0.8,
            colsample_bytree: 0.8,
            min_child_weight: 2.0,
            threads: 2,
        }
    }
}

/// Rows of a dense row-major matrix and their 0/1 labels.
pub struct Data<'a> {
    pub x: &'a [f32],
    pub y: &'a [f32],
    pub cols: usize,
}

impl Data<'_> {
    pub fn rows(&self) -> usize {
        self.y.len()
    }
}

#[cfg(feature = "scorer")]
fn dmatrix(x: &[f32], rows: usize, cols: usize) -> ScorerResult<DMatrix> {
    // Row-major: one row is `cols` floats apart, one column 4 bytes.
    Ok(DMatrix::from_col_major_f32(
        x,
        cols * 4,
        4,
        rows,
        cols,
        1,
        f32::NAN,
    )?)
}

#[cfg(feature = "scorer")]
fn labelled(d: &Data) -> ScorerResult<DMatrix> {
    let mut m = dmatrix(d.x, d.rows(), d.cols)?;
    m.set_labels(d.y)?;
    Ok(m)
}

#[cfg(feature = "scorer")]
fn config(p: &FitParams) -> HashMap<String, String> {
    [
        ("objective", "binary:logistic".to_string()),
        ("tree_method", "hist".to_string()),
        ("eta", p.eta.to_string()),
        ("max_depth", p.max_depth.to_string()),
        ("subsample", p.subsample.to_string()),
        ("colsample_bytree", p.colsample_bytree.to_string()),
        ("min_child_weight", p.min_child_weight.to_string()),
        ("seed", p.seed.to_string()),
        ("nthread", p.threads.max(1).to_string()),
        ("verbosity", "0".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Mean binary log loss of probabilities `p` against labels `y`.
pub fn log_loss(p: &[f32], y: &[f32]) -> f64 {
    let eps = 1e-7;
    let sum: f64 = p
        .iter()
        .zip(y)
        .map(|(&p, &y)| {
            let p = (p as f64).clamp(eps, 1.0 - eps);
            -(y as f64 * p.ln() + (1.0 - y as f64) * (1.0 - p).ln())
        })
        .sum();
    sum / p.len().max(1) as f64
}

/// A fitted model: XGBoost's JSON and how it was reached.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model_json: String,
    pub rounds: u32,
    pub best_validation_log_loss: f64,
    /// Validation log loss after each round of the search.
    pub curve: Vec<f64>,
}

#[cfg(feature = "scorer")]
/// Boost on `train`, stop when `validation` stops improving, refit for the best round count.
pub fn fit(train: &Data, validation: &Data, p: &FitParams) -> ScorerResult<Trained> {
    let dtrain = labelled(train)?;
    let dval = labelled(validation)?;
    let mut booster = Booster::new_with_json_config(&[&dtrain, &dval], config(p))?;
    let (mut best, mut best_round, mut curve) = (f64::INFINITY, 0u32, Vec::new());
    for round in 0..p.max_rounds {
        booster.update(&dtrain, round as i32)?;
        let loss = log_loss(&booster.predict(&dval)?, validation.y);
        curve.push(loss);
        if loss < best - 1e-9 {
            (best, best_round) = (loss, round + 1);
        } else if round + 1 - best_round >= p.patience {
            break;
        }
    }
    let rounds = best_round.max(1);
    let mut refit = Booster::new_with_json_config(&[&dtrain], config(p))?;
    for round in 0..rounds {
        refit.update(&dtrain, round as i32)?;
    }
    Ok(Trained {
        model_json: refit.save_to_buffer("json".into())?,
        rounds,
        best_validation_log_loss: best,
        curve,
    })
}

/// A loaded model that predicts P(yes).
#[cfg(feature = "scorer")]
pub struct Model(Booster);

#[cfg(feature = "scorer")]
impl Model {
    pub fn from_json(json: &[u8]) -> ScorerResult<Model> {
        Ok(Model(Booster::load_buffer(json)?))
    }

    pub fn predict(&self, x: &[f32], cols: usize) -> ScorerResult<Vec<f32>> {
        if cols == 0 || x.is_empty() {
            return Ok(Vec::new());
        }
        let m = dmatrix(x, x.len() / cols, cols)?;
        Ok(self.0.predict(&m)?)
    }
}

#[cfg(not(feature = "scorer"))]
fn not_built() -> super::ScorerError {
    crate::sinks::Sink::Scorer
        .missing("the local scorer's model")
        .into()
}

#[cfg(not(feature = "scorer"))]
pub fn fit(_train: &Data, _validation: &Data, _p: &FitParams) -> ScorerResult<Trained> {
    Err(not_built())
}

/// No model can be loaded in a build without the booster.
#[cfg(not(feature = "scorer"))]
pub enum Model {}

#[cfg(not(feature = "scorer"))]
impl Model {
    pub fn from_json(_json: &[u8]) -> ScorerResult<Model> {
        Err(not_built())
    }

    pub fn predict(&self, _x: &[f32], _cols: usize) -> ScorerResult<Vec<f32>> {
        match *self {}
    }
}

#[cfg(all(test, feature = "scorer"))]
mod tests {
    use super::*;

    /// y = 1 when x0 > 0.5, with one noisy column.
    fn data(n: usize, offset: usize) -> (Vec<f32>, Vec<f32>) {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..n {
            let a = ((i + offset) * 37 % 101) as f32 / 100.0;
            let b = ((i + offset) * 53 % 97) as f32 / 96.0;
            x.extend([a, b]);
            y.push((a > 0.5) as u8 as f32);
        }
        (x, y)
    }

    #[test]
    fn learns_a_threshold_stops_early_and_is_deterministic() {
        let (tx, ty) = data(400, 0);
        let (vx, vy) = data(200, 1000);
        let train = Data {
            x: &tx,
            y: &ty,
            cols: 2,
        };
        let val = Data {
            x: &vx,
            y: &vy,
            cols: 2,
        };
        let p = FitParams {
            max_rounds: 300,
            patience: 10,
            ..FitParams::default()
        };
        let a = fit(&train, &val, &p).unwrap();
        assert!(a.rounds < 300, "early stopping never fired");
        assert!(
            a.best_validation_log_loss < 0.1,
            "{}",
            a.best_validation_log_loss
        );
        let b = fit(&train, &val, &p).unwrap();
        assert_eq!(a.model_json, b.model_json);
        let m = Model::from_json(a.model_json.as_bytes()).unwrap();
        let pred = m.predict(&vx, 2).unwrap();
        let right = pred
            .iter()
            .zip(&vy)
            .filter(|(p, y)| (**p >= 0.5) == (**y == 1.0))
            .count();
        assert!(right as f64 / vy.len() as f64 > 0.95);
    }
}
