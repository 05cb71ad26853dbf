//! The pipeline steps: ingest from raw inputs, and the SQL steps that build
//! derived tables from `sql/*.sql`.

pub mod ingest;
