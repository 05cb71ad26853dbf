//! Models saved under the lake (`<lake>/models/<name>/`): XGBoost's JSON
//! (`model.json`), what it needs to be used again and where it came from
//! (`meta.json`: feature spec, parameters, split, the lake commit and table
//! versions it was fit on), and its held-out calibration report (`report.json`).

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;

use super::matrix::FeatureSpec;
use super::model::{FitParams, Model};
use super::split::Split;
use super::{ScorerError, ScorerResult};
use crate::lake::Lake;
use crate::storage::Location;

/// The checklist scorer's name under `models/`.
pub const CHECKLIST: &str = "checklist";
/// The per-turn credit model's name under `models/`.
pub const TURN_CREDIT: &str = "turn_credit";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelMeta {
    pub name: String,
    /// sha256 of model.json, first 16 hex digits: names the model in outputs.
    pub model_id: String,
    pub features: FeatureSpec,
    pub feature_names: Vec<String>,
    pub params: FitParams,
    pub rounds: u32,
    pub best_validation_log_loss: f64,
    pub split: Split,
    /// P(yes) at or above this is a predicted yes.
    pub threshold: f64,
    /// The lake commit the training data was read at, and its table versions.
    pub lake_commit: Option<u64>,
    pub tables: BTreeMap<String, u64>,
    pub train_rows: usize,
    pub validation_rows: usize,
    pub turnlake: String,
}

pub fn folder(lake: &Lake, name: &str) -> ScorerResult<Location> {
    Ok(Location::parse(lake.root().as_str())?.join(&format!("models/{name}")))
}

fn json_bytes(value: &impl Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("serializable");
    bytes.push(b'\n');
    bytes
}

pub async fn save(lake: &Lake, meta: &ModelMeta, model_json: &str) -> ScorerResult<Location> {
    let dir = folder(lake, &meta.name)?;
    dir.join("model.json")
        .write(model_json.as_bytes().to_vec())
        .await?;
    dir.join("meta.json").write(json_bytes(meta)).await?;
    Ok(dir)
}

async fn read_json<T: DeserializeOwned>(at: &Location, hint: &str) -> ScorerResult<T> {
    let bytes = at
        .read()
        .await
        .map_err(|e| ScorerError::Data(format!("{e} ({hint})")))?;
    serde_json::from_slice(&bytes).map_err(|e| ScorerError::Model {
        location: at.to_string(),
        reason: e.to_string(),
    })
}

/// A saved model and its meta; `hint` says how to make one when it is missing.
pub async fn load(lake: &Lake, name: &str, hint: &str) -> ScorerResult<(ModelMeta, Model)> {
    let dir = folder(lake, name)?;
    let meta: ModelMeta = read_json(&dir.join("meta.json"), hint).await?;
    let at = dir.join("model.json");
    let bytes = at.read().await?;
    let model = Model::from_json(&bytes).map_err(|e| ScorerError::Model {
        location: at.to_string(),
        reason: e.to_string(),
    })?;
    Ok((meta, model))
}

pub async fn save_report(
    lake: &Lake,
    name: &str,
    report: &impl Serialize,
) -> ScorerResult<Location> {
    let at = folder(lake, name)?.join("report.json");
    at.write(json_bytes(report)).await?;
    Ok(at)
}

pub async fn load_report<T: DeserializeOwned>(
    lake: &Lake,
    name: &str,
    hint: &str,
) -> ScorerResult<T> {
    read_json(&folder(lake, name)?.join("report.json"), hint).await
}
