//! Property tests of the readers: arbitrary bytes, arbitrary JSON shapes
//! built from the real formats' field names, and truncated real-format files
//! never panic, and every input record comes out as exactly one accepted
//! record or one reject (counts reconcile).

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;

use super::{albedo, derive, mini_coder, mswea, RawMessage, RawTrajectory, Record};
use crate::storage::{Entry, Location};

/// The non-blank lines of `bytes` (what the readers count as records).
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
}

fn local(p: &Path) -> Entry {
    Entry {
        location: Location::Local(p.to_path_buf()),
        size: std::fs::metadata(p).unwrap().len(),
        etag: None,
    }
}

/// Field names of the real formats, so generated shapes reach deep paths.
const KEYS: &[&str] = &[
    "messages",
    "role",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "name",
    "info",
    "exit_status",
    "submission",
    "extra",
    "actions",
    "command",
    "instance_id",
    "reasoning_content",
    "trajectory_format",
    "eval_run_id",
    "sample_id",
    "prompt",
    "challenger_turns",
    "previous_king_turns",
    "score_target",
    "environment_observation",
    "questions",
    "id",
    "text",
    "tag",
    "judge_results",
    "side",
    "answers",
    "explanations",
    "q_01",
    "verified",
    "model",
    "artifact_metadata",
    "sha256",
    "king_score",
    "challenger_score",
    "submit_marker",
];
const ROLES: &[&str] = &["system", "user", "assistant", "tool", "exit"];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        proptest::sample::select(ROLES).prop_map(|r| json!(r)),
        ".{0,40}".prop_map(Value::String),
        observation_text().prop_map(Value::String),
        "```bash\n.{0,20}\n```".prop_map(Value::String),
    ]
}

fn json_shape() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

/// Observations whose byte 600 may fall inside a multi-byte character, in every format.
fn observation_text() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(
            &[
                "",
                "<returncode>1</returncode>\n<output>\n",
                "OBSERVATION:\n",
                "Here's the result of running `cat -n` on x:\n",
            ][..],
        ),
        590usize..606,
        proptest::sample::select(&["é", "你", "🚀", "x"][..]),
        proptest::sample::select(
            &[
                "",
                "\n[The command completed with exit code 2.]",
                "\n</output>",
                " timed out and has been killed",
            ][..],
        ),
    )
        .prop_map(|(head, pad, ch, tail)| {
            let pad = pad.saturating_sub(head.len());
            format!("{head}{}{}{tail}", "a".repeat(pad), ch.repeat(5))
        })
}

/// Records a reader emitted, counted as the writer counts them.
fn count(records: &[Record]) -> u64 {
    records
        .iter()
        .map(|r| match r {
            Record::Unit(_) | Record::Reject(_) => 1,
            Record::Unchanged(n) => *n,
            Record::ReplaceRun(_) | Record::RunDone(..) | Record::Note(_) => 0,
        })
        .sum()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn read_mswea(bytes: &[u8]) -> Vec<Record> {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "x.traj.json", bytes);
    let mut out = Vec::new();
    mswea::read_file(&local(&p), &mut |r| out.push(r)).unwrap();
    out
}

fn read_mini_jsonl(bytes: &[u8]) -> Vec<Record> {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "shard.jsonl", bytes);
    let mut out = Vec::new();
    mini_coder::read_file(&local(&p), &|_| {}, &mut |r| out.push(r)).unwrap();
    out
}

/// Read a run folder of these three files; the number of input records it holds.
fn read_albedo(verdict: &[u8], generated: &[u8], scoring: &[u8]) -> (Vec<Record>, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("0f1e2d3c-aaaa-4bbb-8ccc-00000000000f");
    std::fs::create_dir(&dir).unwrap();
    let run = albedo::RunFolder {
        dir: Location::Local(dir.clone()),
        artifacts: [
            ("verdict.json", verdict),
            ("generated-samples.jsonl", generated),
            ("scoring-results.jsonl", scoring),
        ]
        .into_iter()
        .map(|(name, bytes)| (name, local(&write(&dir, name, bytes))))
        .collect(),
    };
    let mut out = Vec::new();
    let opts = albedo::AlbedoOptions {
        verify: true,
        players: Default::default(),
    };
    albedo::read_run(&run, &opts, &HashMap::new(), &mut |r| out.push(r)).unwrap();
    let n = 1 + lines(generated).count() as u64 + lines(scoring).count() as u64;
    (out, n)
}

const FIXTURE_V2: &[u8] = include_bytes!("../../data/fixtures/mswea/sep.v2.traj.json");
const FIXTURE_MINI: &[u8] = include_bytes!("../../data/fixtures/mini-coder/shard.jsonl");
const FIXTURE_VERDICT: &[u8] =
    include_bytes!("../../data/fixtures/albedo/0f1e2d3c-aaaa-4bbb-8ccc-000000000001/verdict.json");
const FIXTURE_GENERATED: &[u8] = include_bytes!(
    "../../data/fixtures/albedo/0f1e2d3c-aaaa-4bbb-8ccc-000000000001/generated-samples.jsonl"
);
const FIXTURE_SCORING: &[u8] = include_bytes!(
    "../../data/fixtures/albedo/0f1e2d3c-aaaa-4bbb-8ccc-000000000001/scoring-results.jsonl"
);

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_give_one_record_per_file_or_line(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        prop_assert_eq!(count(&read_mswea(&bytes)), 1);
        prop_assert_eq!(count(&read_mini_jsonl(&bytes)), lines(&bytes).count() as u64);
        let (records, n) = read_albedo(&bytes, &bytes, &bytes);
        prop_assert_eq!(count(&records), n);
    }

    #[test]
    fn arbitrary_json_shapes_give_one_record_each(v in json_shape(), w in json_shape()) {
        let text = serde_json::to_vec(&v).unwrap();
        prop_assert_eq!(count(&read_mswea(&text)), 1);
        let mut shard = serde_json::to_vec(&v).unwrap();
        shard.push(b'\n');
        shard.extend(serde_json::to_vec(&w).unwrap());
        prop_assert_eq!(count(&read_mini_jsonl(&shard)), 2);
        let (records, n) = read_albedo(&serde_json::to_vec(&w).unwrap(), &text, &shard);
        prop_assert_eq!(count(&records), n);
    }

    #[test]
    fn truncated_real_format_files_are_rejects_not_panics(cut in 0usize..4096) {
        let v2 = &FIXTURE_V2[..cut.min(FIXTURE_V2.len())];
        let records = read_mswea(v2);
        prop_assert_eq!(count(&records), 1);
        if cut < FIXTURE_V2.len() - 1 {
            prop_assert!(matches!(records[0], Record::Reject(_)));
        }
        let mini = &FIXTURE_MINI[..cut.min(FIXTURE_MINI.len())];
        prop_assert_eq!(count(&read_mini_jsonl(mini)), lines(mini).count() as u64);
        let g = &FIXTURE_GENERATED[..cut.min(FIXTURE_GENERATED.len())];
        let s = &FIXTURE_SCORING[..(cut / 2).min(FIXTURE_SCORING.len())];
        let (records, n) = read_albedo(FIXTURE_VERDICT, g, s);
        prop_assert_eq!(count(&records), n);
    }

    #[test]
    fn any_observation_in_any_format_derives(texts in prop::collection::vec(observation_text(), 1..6), cmd in ".{0,30}") {
        let mut raw = RawTrajectory { traj_id: "p".into(), source: "mswea", ..Default::default() };
        raw.messages.push(RawMessage { role: "system".into(), content: "s".into(), ..Default::default() });
        for t in &texts {
            raw.messages.push(RawMessage { role: "assistant".into(), content: format!("```bash\n{cmd}\n```"), ..Default::default() });
            raw.messages.push(RawMessage { role: "user".into(), content: t.clone(), ..Default::default() });
        }
        let rows = derive(raw);
        prop_assert_eq!(rows.turns.len(), texts.len());
        prop_assert!(rows.turns.iter().all(|t| t.obs_failed.is_some()));
    }
}

#[test]
fn a_multibyte_character_across_the_cut_in_each_format_is_ingested() {
    for head in [
        "<returncode>0</returncode>\n<output>\n",
        "OBSERVATION:\n",
        "",
    ] {
        for pad in 595..601 {
            let obs = format!("{head}{}{}", "a".repeat(pad - head.len()), "你".repeat(4));
            let doc = json!({"messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "THOUGHT: x\n\n```bash\nls\n```"},
                {"role": "user", "content": obs},
                {"role": "assistant", "content": "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
            ], "trajectory_format": "mini-swe-agent-1"});
            let records = read_mswea(&serde_json::to_vec(&doc).unwrap());
            assert!(
                matches!(records[..], [Record::Unit(_)]),
                "{head:?} {pad}: {records:?}"
            );
        }
    }
}
