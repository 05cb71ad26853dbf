//! Sinks: files other tools train on.

pub mod manifest;
pub mod sft;
pub mod verl;
