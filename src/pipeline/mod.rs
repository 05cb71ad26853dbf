//! The pipeline steps: ingest from raw inputs, and the SQL steps that build
//! derived tables from `sql/*.sql`.

pub mod buckets;
pub mod credit;
pub mod harvest;
pub mod ingest;
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
