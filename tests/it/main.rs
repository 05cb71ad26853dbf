//! The integration tests, as modules of one test binary so the whole stack
//! (DataFusion, delta-rs) is linked once. Each module drives the real
//! `turnlake` binary on fixtures, the real samples or a synthetic corpus.

mod cluster;
mod common;
mod credit;
mod demo;
mod ingest;
mod lake;
mod real_samples;
mod s3;
mod scorer;
mod select;
mod streaming;
mod synth;
mod train;
mod udf_parity;
mod validate;
mod verl;
