//! One module per subcommand: each takes its validated arguments and runs.

pub mod demo;
pub mod ingest;
pub mod sql;
pub mod synth;
pub mod tables;
