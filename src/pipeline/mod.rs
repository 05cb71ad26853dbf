//! The pipeline steps: ingest from raw inputs, and the SQL steps that build
//! derived tables from `sql/*.sql`.

pub mod credit;
pub mod ingest;
pub mod mix;
pub mod select;
pub mod sqlstep;
pub mod stats;
