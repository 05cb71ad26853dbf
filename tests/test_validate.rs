//! `turnlake validate` end to end on the select fixtures' mix.

mod common;
use base64::Engine;
use common::*;
use std::path::Path;

fn ok(o: std::process::Output) -> std::process::Output {
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    o
}

/// A tiktoken rank file of single bytes, leaving out `skip`.
fn write_byte_ranks(path: &Path, skip: Option<u8>) {
    let lines: Vec<String> = (0u8..=255)
        .filter(|b| Some(*b) != skip)
        .map(|b| {
            format!(
                "{} {}",
                base64::engine::general_purpose::STANDARD.encode([b]),
                b
            )
        })
        .collect();
    std::fs::write(path, lines.join("\n")).unwrap();
}

fn mixed_lake(tmp: &Path) -> std::path::PathBuf {
    let lake = tmp.join("lake");
    let f = fixtures().join("select");
    ok(run(
        &lake,
        &["ingest", "albedo", f.join("albedo").to_str().unwrap()],
    ));
    ok(run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            f.join("mini-coder").to_str().unwrap(),
        ],
    ));
    ok(run(&lake, &["credit"]));
    ok(run(&lake, &["select"]));
    let cfg = tmp.join("all.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    std::fs::write(&cfg, default.replace("mode = \"shares\"", "mode = \"all\"")).unwrap();
    ok(run(&lake, &["mix", "--config", cfg.to_str().unwrap()]));
    lake
}

#[test]
fn every_train_turn_decodes_back_with_the_shipped_tokenizer() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let o = ok(run(&lake, &["validate"]));
    let out = stdout(&o);
    assert!(
        out.contains("6 rows, 10 train turns: 100.00% decode back exactly"),
        "{out}"
    );
    assert_eq!(scalar(&lake, "SELECT count(*) FROM sft_validated"), "6");

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
    assert!(dropped > 0 && kept + dropped == 6, "{line}, kept {kept}");
}

#[test]
fn a_vocabulary_that_cannot_represent_a_character_fails_naming_row_and_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let ti = tmp.path().join("bytes.tiktoken");
    write_byte_ranks(&ti, Some(b'`'));
    // A vocabulary that cannot represent the backtick: every bash-fenced train turn fails, by row and turn.
    let o = run(&lake, &["validate", "--tiktoken", ti.to_str().unwrap()]);
    assert!(!o.status.success());
    let out = stdout(&o);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL row ")).collect();
    assert_eq!(fails.len(), 10, "{out}");
    assert!(
        fails.iter().any(|l| l.contains("escape_duel/")
            && l.contains("(t=3)")
            && l.contains("has no rank")),
        "{out}"
    );
    assert!(
        stderr(&o).contains("10 of 10 train turns"),
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
