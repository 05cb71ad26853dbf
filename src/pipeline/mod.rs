//! The pipeline steps: ingest from raw inputs, and the SQL steps that build
//! derived tables from `sql/*.sql`.

pub mod buckets;
pub mod credit;
pub mod harvest;
pub mod ingest;
pub mod lake_state;
pub mod mix;
pub mod outcomes;
pub mod provenance;
pub mod reproduction;
pub mod select;
pub mod select_parts;
pub mod show;
pub mod sqlstep;
pub mod stats;
pub mod step;
pub mod steps;

use crate::engine::EngineError;
use crate::lake::LakeError;
use crate::storage::StorageError;

/// Why a pipeline step failed: ingest, a SQL step (credit, select, mix,
/// stats, the scorer's), or reading one trajectory for `show`.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the lake has no {0} table: {1}")]
    Missing(&'static str, &'static str),
    #[error("the lake's {0} has no {1} column (an earlier turnlake wrote it): {2}")]
    MissingColumn(&'static str, &'static str, &'static str),
    #[error("registering the step's parameters")]
    Params(#[source] datafusion::error::DataFusionError),
    #[error("creating a scratch folder for the step's intermediate tables")]
    Scratch(#[source] std::io::Error),
    #[error("reading input")]
    Io(#[from] std::io::Error),
    #[error("the reader thread stopped: {0}")]
    Reader(String),
    #[error("no {kind} input under {paths}: looked for {looked_for}")]
    NothingFound {
        kind: &'static str,
        paths: String,
        looked_for: &'static str,
    },
    #[error("no trajectory {0} in the lake")]
    NotFound(String),
    #[error("{0} matches several trajectories ({1}): give the traj_id")]
    Ambiguous(String, String),
    #[error("reading {table}")]
    Query {
        table: String,
        #[source]
        source: datafusion::error::DataFusionError,
    },
}

/// The first 128 bits of the sha256 of an id, for sets of ids that grow
/// with the lake: two of n distinct ids share one with a chance of about
/// n²/2¹²⁹ (below 10⁻²⁶ for a million).
pub(crate) fn id_digest(id: &str) -> u128 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    u128::from_be_bytes(
        digest[..16]
            .try_into()
            .expect("a sha256 digest has 32 bytes"),
    )
}
