//! Sinks: files other tools train on.

pub mod sft;
