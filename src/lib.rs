//! turnlake: a batch processor over a columnar lake of coding-agent
//! trajectories. Raw inputs are read by `source`, written to Delta tables by
//! `lake`, queried through `engine` (DataFusion plus the `udf`s of the turn
//! rules in `turn`), and turned into reports by the `pipeline` steps.
//! Training with libtorch lives in the `turnlake-train` binary
//! (src/bin/turnlake-train), so every other command starts without it. The
//! heavy sinks (training, the XGBoost scorer, Ballista) are Cargo features:
//! see `sinks`.

pub mod cli;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod cmd;
pub mod columns;
pub mod digest;
pub mod engine;
pub mod entry;
pub mod export;
pub mod failpoint;
pub mod job;
pub mod lake;
pub mod limits;
pub mod output;
pub mod pipeline;
pub mod plot;
pub mod progress;
pub mod scorer;
pub mod sinks;
pub mod source;
pub mod storage;
pub mod synth;
pub mod tokenize;
pub mod turn;
pub mod udf;
pub mod web;
