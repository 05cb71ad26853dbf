//! The judge-free local scorer: features of every (side, checklist question)
//! from SQL and UDFs, gradient-boosted trees that answer the checklist, a
//! held-out calibration report, and scoring of a user's own runs. A second
//! model of the same kind predicts which turns earn judge credit, to label
//! the turns of runs no judge saw.

pub mod features;
pub mod jobs;
pub mod loop_check;
pub mod matrix;
pub mod metrics;
pub mod model;
pub mod report;
pub mod score;
pub mod split;
pub mod store;
pub mod training;
pub mod turns;

use crate::engine::EngineError;
use crate::lake::LakeError;
use crate::pipeline::PipelineError;
use crate::storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum ScorerError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Step(#[from] PipelineError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("xgboost: {0}")]
    Xgboost(String),
    #[error(transparent)]
    NotBuilt(#[from] crate::sinks::NotBuilt),
    #[error("model {location}: {reason}")]
    Model { location: String, reason: String },
    #[error("{0}")]
    Data(String),
    #[error("{file}: {reason}")]
    Input { file: String, reason: String },
}

#[cfg(feature = "scorer")]
impl From<xgboost_rs::XGBError> for ScorerError {
    fn from(e: xgboost_rs::XGBError) -> Self {
        ScorerError::Xgboost(e.to_string())
    }
}

pub type ScorerResult<T> = Result<T, ScorerError>;
