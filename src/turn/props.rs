//! Property tests of the turn rules: any text, including text whose byte 600
//! falls inside a multi-byte character, gives an answer and never a panic.

use proptest::prelude::*;

use super::*;

/// Text of any characters, biased towards the shapes the rules look for.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        ".{0,700}",
        "(```(bash|mswea_bash_command)?\\s{0,3}\n.{0,40}\n```|<think>|</think>|CANDIDATE OUTPUTS? [0-9,\\- ]{0,12}|OUTPUT [0-9]{1,3}|echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|<returncode>-?[0-9]{1,3}</returncode>|\\[The command completed with exit code [0-9]{1,3}\\.\\]|[|&;'\"\\\\ ]|é|你|🚀){0,30}",
        (590usize..606, prop::sample::select(&["é", "你", "🚀"][..]))
            .prop_map(|(n, c)| format!("{}{}", "x".repeat(n), c.repeat(6))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_rule_answers_any_text(t in text(), u in text()) {
        let blocks = extract_bash_blocks(&t);
        prop_assert!(blocks.iter().all(|b| t.contains(b)));
        let kind = classify_command(&t, Some(&u));
        prop_assert!(CmdKind::ALL.contains(&kind));
        let _ = command_head(&t);
        let _ = is_submit_command(&t, Some(&u));
        let _ = submit_signal(Some(&t), Some(&u), Some(&u), Some(&t));
        let _ = think_unclosed(&t);
        let cited = parse_citations(&t);
        prop_assert!(cited.windows(2).all(|w| w[0] < w[1]));
        let format = detect_obs_format(&t);
        for f in ObsFormat::ALL {
            let _ = observation_outcome(f, &t);
        }
        let _ = observation_outcome(format, &u);
        let n = loops::normalize_command(&t);
        prop_assert_eq!(loops::normalize_command(&n), n.clone());
        prop_assert_eq!(n.as_ref(), t.split_whitespace().collect::<Vec<_>>().join(" "));
        let m = loop_metrics([t.as_str(), u.as_str(), t.as_str()]);
        prop_assert!((0.0..=1.0).contains(&m.dup_cmd_ratio));
    }
}
