//! The validator's loop verdict (the loop metrics against its thresholds)
//! against the judge's own looped verdict, over every judged side: how many
//! each calls looped, and the sides where they disagree.

use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::columns;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoopDisagreement {
    pub traj_id: String,
    pub sample_id: String,
    pub side: String,
    pub judge_looped: bool,
    pub loop_verdict: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoopCheck {
    pub judged_sides: usize,
    pub judge_looped: usize,
    pub verdict_looped: usize,
    pub disagreements: Vec<LoopDisagreement>,
}

/// The loop verdict against the judge's own, over every judged side.
pub fn loop_check(batches: &[RecordBatch]) -> LoopCheck {
    let traj = columns::strings(batches, "traj_id");
    let samples = columns::strings(batches, "sample_id");
    let side = columns::strings(batches, "side");
    let judge = columns::bools(batches, "judge_looped");
    let verdict = columns::bools(batches, "loop_verdict");
    let labels = columns::i64s(batches, "label");
    let mut seen: BTreeMap<String, LoopDisagreement> = BTreeMap::new();
    for i in 0..traj.len() {
        if labels[i].is_none() {
            continue;
        }
        let id = traj[i].clone().unwrap_or_default();
        let e = seen.entry(id.clone()).or_insert_with(|| LoopDisagreement {
            traj_id: id,
            sample_id: samples[i].clone().unwrap_or_default(),
            side: side[i].clone().unwrap_or_default(),
            judge_looped: false,
            loop_verdict: false,
        });
        e.judge_looped |= judge[i].unwrap_or(false);
        e.loop_verdict |= verdict[i].unwrap_or(false);
    }
    LoopCheck {
        judged_sides: seen.len(),
        judge_looped: seen.values().filter(|s| s.judge_looped).count(),
        verdict_looped: seen.values().filter(|s| s.loop_verdict).count(),
        disagreements: seen
            .into_values()
            .filter(|s| s.judge_looped != s.loop_verdict)
            .collect(),
    }
}
