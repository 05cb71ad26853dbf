//! `turnlake validate` end to end on the select fixtures' mix.

use crate::common::*;
use base64::Engine;
use std::path::Path;

/// A tiktoken rank file of single bytes, leaving out `skip`, plus `merged` tokens.
fn write_ranks(path: &Path, skip: Option<u8>, merged: &[&str]) {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut lines: Vec<String> = (0u8..=255)
        .filter(|b| Some(*b) != skip)
        .map(|b| format!("{} {}", b64(&[b]), b))
        .collect();
    for (i, m) in merged.iter().enumerate() {
        lines.push(format!("{} {}", b64(m.as_bytes()), 256 + i));
    }
    std::fs::write(path, lines.join("\n")).unwrap();
}

fn write_byte_ranks(path: &Path, skip: Option<u8>) {
    write_ranks(path, skip, &[]);
}

/// (rows, train turns) of sft_mix.
fn mix_size(lake: &Path) -> (String, String) {
    let r = sql(lake, "SELECT count(*), sum(n_train) FROM sft_mix");
    (r[0][0].clone(), r[0][1].clone())
}

#[test]
fn every_train_turn_decodes_back_with_the_shipped_tokenizer() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let (rows, turns) = mix_size(&lake);
    for mode in ["whole", "segments"] {
        let o = ok(run(&lake, &["validate", "--mode", mode]));
        let out = stdout(&o);
        let mode_name = if mode == "whole" { "Whole" } else { "Segments" };
        assert!(
            out.contains(&format!(
                "{rows} rows, {turns} train turns ({mode_name} mode): 100.00% decode back exactly"
            )),
            "{out}"
        );
        assert!(out.contains("Reproduction: validation"), "{out}");
        assert_eq!(scalar(&lake, "SELECT count(*) FROM sft_validated"), rows);
    }

    // A tight limit with the drop policy leaves the long rows out and counts them.
    let o = ok(run(
        &lake,
        &["validate", "--limit", "120", "--over-limit", "drop"],
    ));
    let kept: usize = scalar(&lake, "SELECT count(*) FROM sft_validated")
        .parse()
        .unwrap();
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains("over 120 tokens dropped"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    let dropped: usize = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        dropped > 0 && (kept + dropped).to_string() == rows,
        "{line}, kept {kept}"
    );
}

#[test]
fn a_vocabulary_that_cannot_represent_a_character_fails_naming_row_and_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let ti = tmp.path().join("bytes.tiktoken");
    write_byte_ranks(&ti, Some(b'`'));
    // A vocabulary that cannot represent the backtick: every bash-fenced train turn fails, by row and turn.
    let (_, turns) = mix_size(&lake);
    let o = run(&lake, &["validate", "--tiktoken", ti.to_str().unwrap()]);
    assert!(!o.status.success());
    let out = stdout(&o);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL row ")).collect();
    assert_eq!(fails.len().to_string(), turns, "{out}");
    assert!(
        fails.iter().any(|l| l.contains("escape_duel/")
            && l.contains("(t=3)")
            && l.contains("has no rank")),
        "{out}"
    );
    assert!(
        stderr(&o).contains(&format!("{turns} of {turns} train turns")),
        "{}",
        stderr(&o)
    );

    // The full byte vocabulary passes.
    write_byte_ranks(&ti, None);
    ok(run(
        &lake,
        &["validate", "--tiktoken", ti.to_str().unwrap()],
    ));
}

#[test]
fn a_token_merged_across_a_turn_boundary_is_caught_naming_row_and_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    // A vocabulary that merges a closing backtick with the `~` a template puts right
    // after each message, and a pattern that keeps the whole text between special
    // tokens in one piece: every train turn ending in a bash fence gets a token
    // spanning its boundary, as a trainer tokenizing the whole conversation would.
    let ti = tmp.path().join("merge.tiktoken");
    write_ranks(&ti, None, &["`~"]);
    let template = tmp.path().join("tilde.toml");
    std::fs::write(
        &template,
        "message_start = \"<|im_start|>{role}\\n\"\nmessage_end = \"~<|im_end|>\\n\"\n",
    )
    .unwrap();
    let args = [
        "validate",
        "--tiktoken",
        ti.to_str().unwrap(),
        "--pattern",
        "(?s).+",
        "--template",
        template.to_str().unwrap(),
    ];
    let o = run(&lake, &args);
    assert!(!o.status.success());
    let out = stdout(&o);
    let merges: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("FAIL row ") && l.contains("merges across the turn boundary"))
        .collect();
    let ending_in_fence: usize = scalar(
        &lake,
        "SELECT count(*) FROM (SELECT unnest(train_turns) AS t, traj_id FROM sft_mix) x \
         JOIN turns u ON u.traj_id = x.traj_id AND u.t = x.t \
         JOIN messages m ON m.traj_id = u.traj_id AND m.idx = u.msg_idx WHERE ends_with(m.content, '`')",
    )
    .parse()
    .unwrap();
    assert!(ending_in_fence > 0);
    assert_eq!(merges.len(), ending_in_fence, "{out}");
    assert!(merges.iter().any(|l| l.contains("(t=3)")), "{out}");
    // Each message encoded on its own never merges across a boundary.
    let mut segments = args.to_vec();
    segments.extend(["--mode", "segments"]);
    ok(run(&lake, &segments));
}
