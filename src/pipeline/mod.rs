//! The pipeline steps: ingest from raw inputs, and the SQL steps that build
//! derived tables from `sql/*.sql`.

pub mod buckets;
pub mod credit;
pub mod ingest;
pub mod mix;
pub mod reproduction;
pub mod select;
pub mod select_parts;
pub mod show;
pub mod sqlstep;
pub mod stats;
pub mod step;
