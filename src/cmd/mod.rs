//! One module per subcommand: each takes its validated arguments and runs.

pub mod credit;
pub mod demo;
pub mod export;
pub mod ingest;
pub mod mix;
pub mod select;
pub mod sql;
pub mod stats;
pub mod synth;
pub mod tables;
pub mod tokenizer;
pub mod validate;
