//! The integration tests, as modules of one test binary so the whole stack
//! (DataFusion, delta-rs) is linked once. Each module drives the real
//! `turnlake` binary on fixtures, the real samples or a synthetic corpus.
//! The modules of a heavy sink (cluster, scorer, train) build with its
//! feature; `sinks` checks what a build without them says.

mod browser;
#[cfg(feature = "cluster")]
mod cluster;
mod common;
mod credit;
mod demo;
mod harvest;
mod house;
mod ingest;
mod lake;
mod loopback_http;
mod mix_units;
mod model_template;
mod mswea;
mod other_engines;
mod real_samples;
mod s3;
#[cfg(feature = "scorer")]
mod scorer;
mod select;
mod serve;
mod sinks;
mod sql_repl;
mod sql_shell;
mod streaming;
mod synth;
#[cfg(feature = "train")]
mod train;
mod trainer_exports;
mod udf_parity;
mod untrusted;
mod validate;
mod verl;
mod webdriver;
