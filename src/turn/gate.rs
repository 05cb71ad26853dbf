//! The format gate, the one rule that says why a train turn does not train,
//! and what makes a train turn a recovery.

/// The format gate: why a train turn is demoted (the agent rejected it as
/// a format error, not exactly one action, an unclosed `<think>`, a command
/// that repeats another train turn's command in the same row), or `None`
/// when it trains. The SQL calls it as `format_gate`; an unknown block count
/// demotes nothing, as SQL's `n_bash_blocks <> 1` on a null would not.
pub fn gate_reason(
    format_error: bool,
    n_bash_blocks: Option<i64>,
    think_unclosed: bool,
    repeats_in_row: bool,
) -> Option<&'static str> {
    if format_error {
        Some("rejected by the agent (format error)")
    } else if n_bash_blocks.is_some_and(|n| n != 1) {
        Some("not exactly one bash block")
    } else if think_unclosed {
        Some("unclosed <think>")
    } else if repeats_in_row {
        Some("repeats another train turn's command")
    } else {
        None
    }
}

/// A recovery turn: it earned credit and the observation right before it
/// failed. An unknown failure (`None`) is not one. SQL calls it as
/// `is_recovery`; the SFT export's train_meta reports it.
pub fn is_recovery(prev_failed: Option<bool>, credit: Option<f64>) -> bool {
    prev_failed == Some(true) && credit.is_some_and(|c| c > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_gate_names_the_first_rule_a_turn_breaks() {
        assert_eq!(gate_reason(false, Some(1), false, false), None);
        assert_eq!(
            gate_reason(true, Some(1), false, false),
            Some("rejected by the agent (format error)")
        );
        assert_eq!(
            gate_reason(false, Some(2), true, true),
            Some("not exactly one bash block")
        );
        assert_eq!(
            gate_reason(false, Some(0), false, false),
            Some("not exactly one bash block")
        );
        assert_eq!(
            gate_reason(false, Some(1), true, true),
            Some("unclosed <think>")
        );
        assert_eq!(
            gate_reason(false, Some(1), false, true),
            Some("repeats another train turn's command")
        );
        // As SQL's `n_bash_blocks <> 1` on a null: no verdict on the blocks.
        assert_eq!(gate_reason(false, None, false, false), None);
        assert_eq!(
            gate_reason(false, None, true, false),
            Some("unclosed <think>")
        );
    }

    #[test]
    fn a_recovery_earned_credit_right_after_a_failure() {
        assert!(is_recovery(Some(true), Some(0.5)));
        assert!(!is_recovery(Some(true), Some(0.0)));
        assert!(!is_recovery(Some(true), None));
        assert!(!is_recovery(Some(false), Some(1.0)));
        assert!(!is_recovery(None, Some(1.0)));
    }
}
