//! Pure text rules over one turn or one trajectory: what the bash action is,
//! what kind of command it runs, how its observation looks and whether it
//! failed, unclosed `<think>`, submit markers, judge citations, loop
//! metrics and what checklist questions ask. No Arrow or DataFusion here: the `udf` module adapts these rules
//! for SQL, and the source readers call them directly, so every rule exists once.

pub mod bash;
pub mod checklist;
pub mod citation;
pub mod cmd_kind;
pub mod gate;
pub mod loops;
pub mod markers;
pub mod observation;

pub use bash::{action_text, extract_bash_blocks};
pub use citation::parse_citations;
pub use cmd_kind::{classify_command, command_head, turn_kind, CmdKind};
pub use gate::{gate_reason, is_recovery};
pub use loops::{loop_metrics, LoopMetrics};
pub use markers::{is_submit_command, submit_signal, think_unclosed, SubmitSignal};
pub use observation::{detect_obs_format, observation_outcome, ObsFormat, ObsOutcome};

#[cfg(test)]
mod props;
