//! The verl export against its contract (`../shared/docs/verl-export.md`):
//! the eight tests it names on a fixture with known labels and a
//! deliberately unparsed turn, an end-to-end export of a synthetic corpus
//! whose summary matches SQL counts over the lake, `rebuild`, and the
//! Parquet files read back with pyarrow as verl's datasets read them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

const CHALLENGER: &str = "albedo/7e71e000-0000-4000-8000-000000000003/verl/s1:1:1/challenger";
const KING: &str = "albedo/7e71e000-0000-4000-8000-000000000003/verl/s1:1:1/previous_king";

fn fixture_lake(root: &Path) -> PathBuf {
    let lake = root.join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "albedo",
            fixtures().join("verl/albedo").to_str().unwrap(),
        ],
    ));
    ok(run(&lake, &["credit"]));
    lake
}

/// `turnlake export verl --out OUT EXTRA...`.
fn export(lake: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["export", "verl", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(lake, &args)
}

/// `turnlake rebuild OUT/manifest.json` reproduces every file.
fn rebuild_verifies(out: &Path) {
    let o = ok(bin()
        .args(["rebuild", out.join("manifest.json").to_str().unwrap()])
        .output()
        .unwrap());
    assert!(
        stdout(&o).contains("every sha256 matches"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn verl_export_of_the_fixture_follows_the_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    let out = tmp.path().join("verl");
    let o = ok(export(&lake, &out, &["--sources", "albedo"]));
    assert!(
        stdout(&o).contains("2 trajectories, 9 turns"),
        "{}",
        stdout(&o)
    );
    let rows = json_lines(&out.join("trajectories.jsonl"));

    // 1. Grouping: one line per trajectory, its own turns in t order, none lost.
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["trajectory_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![CHALLENGER, KING]);
    let ts = |r: &Value| -> Vec<i64> {
        r["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["t"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ts(&rows[0]), vec![2, 3, 4, 5, 6, 7]);
    assert_eq!(ts(&rows[1]), vec![2, 3, 4]);

    // The generated sample's rendered prompt, byte-exact, on each side's
    // first scored turn and in rl.parquet's extra_info; `prompt` stays the messages.
    let sample: Value = serde_json::from_str(
        std::fs::read_to_string(
            fixtures()
                .join("verl/albedo/7e71e000-0000-4000-8000-000000000003/generated-samples.jsonl"),
        )
        .unwrap()
        .lines()
        .next()
        .unwrap(),
    )
    .unwrap();
    let prompt_text = sample["prompt"].as_str().unwrap();
    assert!(prompt_text.ends_with("<|im_start|>assistant\n<think>\n"));
    let rl = parquet_rows(&out.join("rl.parquet"));
    for (r, rl) in rows.iter().zip(&rl) {
        let turns = r["turns"].as_array().unwrap();
        assert_eq!(turns[0]["prompt_text"], prompt_text);
        assert!(turns[0]["prompt"].is_array());
        assert!(turns[1..].iter().all(|t| t.get("prompt_text").is_none()));
        assert_eq!(rl["extra_info"]["prompt_text"], prompt_text);
    }
    let scored = scalar(
        &lake,
        "SELECT count(*) FROM turns WHERE candidate_n IS NOT NULL",
    );
    assert_eq!(scored, "9");

    // 2. r_turn: +1 exactly where the judge's credit is positive, joined by turn_sha.
    let credited = sql(&lake, "SELECT turn_sha, credit > 0 FROM turn_credit");
    for r in &rows {
        for t in r["turns"].as_array().unwrap() {
            let sha = t["turn_sha"].as_str().unwrap();
            let label = credited.iter().find(|c| c[0] == sha).expect("a credit row")[1] == "true";
            assert_eq!(
                t["r_turn"].as_i64().unwrap(),
                if label { 1 } else { -1 },
                "{t}"
            );
        }
    }
    let signs: Vec<i64> = rows[0]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["r_turn"].as_i64().unwrap())
        .collect();
    assert_eq!(signs, vec![1, -1, 1, -1, 1, -1]);

    // 3. r_format is strict: the challenger's one two-block turn scores it 0; the king parses.
    assert_eq!(rows[0]["turns"][1]["parsed"], false);
    assert_eq!(rows[0]["r_format"], 0);
    assert_eq!(rows[1]["r_format"], 1);

    // 4. r_exit from the record: the challenger submits at t=5 and goes on to t=7;
    // its last credited turn is 6, so it exited earlier than its evidence.
    assert_eq!(rows[0]["t_exit"], 5);
    assert_eq!(rows[0]["t_last_evidence"], 6);
    assert_eq!(rows[0]["r_exit"], -0.75);
    // The king submits at 4 with no evidence at all: later than evidence that never came.
    assert_eq!(rows[1]["t_exit"], 4);
    assert_eq!(rows[1]["t_last_evidence"], Value::Null);
    assert_eq!(rows[1]["r_exit"], -0.5);

    // 5a. Prompts and responses are the recorded messages.
    let messages = sql(
        &lake,
        &format!(
            "SELECT idx, role, content FROM messages WHERE traj_id = '{CHALLENGER}' ORDER BY idx"
        ),
    );
    let msg_idx = sql(
        &lake,
        &format!("SELECT t, msg_idx FROM turns WHERE traj_id = '{CHALLENGER}' ORDER BY t"),
    );
    for t in rows[0]["turns"].as_array().unwrap() {
        let at: usize = msg_idx
            .iter()
            .find(|m| m[0] == t["t"].as_i64().unwrap().to_string())
            .unwrap()[1]
            .parse()
            .unwrap();
        let prompt = t["prompt"].as_array().unwrap();
        assert_eq!(prompt.len(), at);
        for (p, m) in prompt.iter().zip(&messages) {
            assert_eq!(
                (p["role"].as_str().unwrap(), p["content"].as_str().unwrap()),
                (m[1].as_str(), m[2].as_str())
            );
        }
        assert_eq!(t["response"]["content"].as_str().unwrap(), messages[at][2]);
        assert_eq!(t["response"]["role"], "assistant");
    }

    // 6. r_outcome: present and null (Albedo records no task outcome); r_judge the side score.
    for r in &rows {
        assert!(r.as_object().unwrap().contains_key("r_outcome"));
        assert_eq!(r["r_outcome"], Value::Null);
    }
    assert_eq!(rows[0]["r_judge"], 0.75);

    // 8. The summary matches a hand count of the fixture.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trajectories"], 2);
    assert_eq!(summary["turns"], 9);
    assert_eq!(
        (
            summary["r_turn_positive"].as_u64(),
            summary["r_turn_negative"].as_u64()
        ),
        (Some(3), Some(6))
    );
    assert_eq!(summary["r_format_pass"], 1);
    assert_eq!(
        summary["r_exit"],
        serde_json::json!({"-0.5": 1, "-0.75": 1})
    );
    assert_eq!(summary["t_last_evidence"], serde_json::json!({"6": 1}));
    assert_eq!(summary["t_last_evidence_null"], 1);
    assert_eq!(summary["r_outcome_null"], 2);

    // The manifest records alpha and the thresholds; rebuild reproduces every file.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["export"]["options"]["alpha"], 0.9);
    assert_eq!(manifest["export"]["options"]["min_kappa"], 0.4);
    assert_eq!(manifest["files"].as_array().unwrap().len(), 4);
    rebuild_verifies(&out);
}

/// 5b. Altered stored bytes: the export fails naming the trajectory and writes nothing.
#[test]
fn verl_export_refuses_messages_that_fail_their_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    // Change one word of the king's system prompt, keeping its stored hash.
    let changed = alter_stored_messages(&lake, "content", |traj, idx, content| {
        if traj == KING && idx == 0 {
            content.replace("helpful", "harmful")
        } else {
            content
        }
    });
    assert_eq!(changed, 1);
    let out = tmp.path().join("verl");
    let o = export(&lake, &out, &["--sources", "albedo"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(KING) && err.contains("content hash"), "{err}");
    assert!(!out.exists(), "nothing is written");
}

/// 7. Scorer labels without a calibration report: refused, naming the command, nothing written.
#[test]
fn verl_export_refuses_scorer_labels_without_calibration() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "mswea",
            fixtures().join("mswea").to_str().unwrap(),
        ],
    ));
    let out = tmp.path().join("verl");
    let o = export(&lake, &out, &["--sources", "mswea"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("turnlake scorer eval"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[cfg(feature = "scorer")]
#[test]
fn verl_export_of_a_synthetic_corpus_matches_the_lake_and_reads_back_in_pyarrow() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 5, (6, 12, 30, 4), None);
    let lake = tmp.path().join("lake");
    ingest_corpus(&lake, &corpus);
    fit_and_label(&lake);
    let report: Value = serde_json::from_slice(
        &std::fs::read(lake.join("models/turn_credit/report.json")).unwrap(),
    )
    .unwrap();
    let kappa = report["kappa"].as_f64().unwrap();

    // A threshold above the model's kappa refuses, writing nothing.
    let out = tmp.path().join("verl");
    let above = format!("{}", (kappa + 0.01).min(1.0));
    let o = export(&lake, &out, &["--min-kappa", &above]);
    assert!(
        !o.status.success() && stderr(&o).contains("below --min-kappa"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());

    let below = format!("{}", kappa - 0.01);
    ok(export(&lake, &out, &["--min-kappa", &below]));
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let n = |q: &str| scalar(&lake, q).parse::<u64>().unwrap();
    let trajectories = n("SELECT count(*) FROM trajectories WHERE source <> 'albedo' OR judged");
    assert_eq!(summary["trajectories"].as_u64().unwrap(), trajectories);
    let own = "SELECT u.traj_id, u.turn_sha, tr.judged, u.n_bash_blocks = 1 AND NOT u.think_unclosed AS parsed \
               FROM turns u JOIN trajectories tr USING (traj_id) \
               WHERE (tr.source = 'albedo' AND tr.judged AND u.candidate_n IS NOT NULL) OR tr.source <> 'albedo'";
    assert_eq!(
        summary["turns"].as_u64().unwrap(),
        n(&format!("SELECT count(*) FROM ({own})"))
    );
    let positive = n(&format!(
        "SELECT count(*) FROM ({own}) o LEFT JOIN turn_credit c ON c.traj_id = o.traj_id AND c.turn_sha = o.turn_sha \
         LEFT JOIN turn_labels l ON l.traj_id = o.traj_id AND l.turn_sha = o.turn_sha \
         WHERE (o.judged AND c.credit > 0) OR (NOT o.judged AND l.earns_credit)"
    ));
    assert_eq!(summary["r_turn_positive"].as_u64().unwrap(), positive);
    let pass = n(&format!("SELECT count(*) FROM (SELECT traj_id FROM ({own}) GROUP BY traj_id HAVING bool_and(parsed))"));
    assert_eq!(summary["r_format_pass"].as_u64().unwrap(), pass);
    let verified =
        n("SELECT count(*) FROM trajectories WHERE source <> 'albedo' AND verified IS NOT NULL");
    assert_eq!(
        summary["r_outcome_null"].as_u64().unwrap(),
        trajectories - verified
    );
    assert_eq!(summary["calibration"]["kappa"].as_f64().unwrap(), kappa);
    // Token lengths under turnlake's own tokenizer, ordered percentiles.
    let tokens = &summary["tokens"];
    assert_eq!(tokens["tokenizer"], "turnlake's shipped BPE with ChatML");
    for part in ["prompt", "response"] {
        let p = |k: &str| tokens[part][k].as_u64().unwrap();
        assert!(
            0 < p("p50") && p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("max"),
            "{tokens}"
        );
    }

    rebuild_verifies(&out);

    // verl's RLHFDataset reads prompt (a chat list), data_source, ability,
    // reward_model.ground_truth and extra_info; MultiTurnSFTDataset reads messages.
    let first = json_lines(&out.join("trajectories.jsonl")).remove(0);
    let check = format!(
        r#"
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
first = json.loads(sys.argv[1])
fields = ["role", "content", "reasoning_content", "tool_calls", "tool_call_id"]
def names(t):
    return [f.name for f in t.value_type]
def recorded(messages):
    # Parquet holds the fields a message lacks as nulls; the JSONL leaves them out.
    return [{{k: v for k, v in m.items() if v is not None}} for m in messages]
rl = pq.read_table("{rl}")
assert rl.column_names == ["data_source", "agent_name", "prompt", "tools", "ability", "reward_model", "extra_info"], rl.column_names
assert names(rl.schema.field("prompt").type) == fields, rl.schema.field("prompt").type
call = rl.schema.field("prompt").type.value_type.field("tool_calls").type.value_type
assert [f.name for f in call] == ["id", "type", "function"], call
assert rl.schema.field("reward_model").type == pa.struct([pa.field("style", pa.string(), nullable=False), pa.field("ground_truth", pa.string(), nullable=False)])
row = rl.slice(0, 1).to_pylist()[0]
assert row["extra_info"]["trajectory_id"] == first["trajectory_id"]
assert recorded(row["prompt"]) == first["turns"][0]["prompt"], "the first turn's prompt"
assert row["data_source"] == "turnlake/" + first["source"]
truth = json.loads(row["reward_model"]["ground_truth"])
assert truth["r_turn"] == [t["r_turn"] for t in first["turns"]]
assert row["extra_info"]["r_exit"] == first["r_exit"] and row["extra_info"]["r_outcome"] == first["r_outcome"]
assert row["agent_name"] == ("tool_agent" if first.get("tools") else None), row["agent_name"]
assert "instance_id" in row["extra_info"]
assert rl.num_rows == {n}
sft = pq.read_table("{sft}")
assert names(sft.schema.field("messages").type) == fields + ["train"]
assert sft.column_names == ["trajectory_id", "messages", "tools"], sft.column_names
messages = sft.slice(0, 1).to_pylist()[0]["messages"]
last = first["turns"][-1]
flags = [m.pop("train") for m in messages]
assert recorded(messages) == last["prompt"] + [last["response"]]
# A message trains when it is a turn whose label is true: as many as r_turn +1.
assert sum(flags) == sum(1 for t in first["turns"] if t["r_turn"] == 1), flags
assert all(m["role"] == "assistant" for m, f in zip(messages, flags) if f)
positives = sum(sum(1 for m in row if m["train"]) for row in sft.column("messages").to_pylist())
assert positives == {positive}, positives
print("ok")
"#,
        rl = out.join("rl.parquet").display(),
        sft = out.join("sft.parquet").display(),
        n = trajectories,
        positive = summary["r_turn_positive"].as_u64().unwrap(),
    );
    let o = venv()
        .args(["-c", &check, &first.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
}

#[test]
fn verls_own_datasets_load_the_export_and_train_exactly_the_flagged_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    let out = tmp.path().join("verl");
    ok(export(&lake, &out, &["--sources", "albedo"]));
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tokenizer.json");
    let text = venv_python(
        "verl_datasets.py",
        &[out.as_os_str(), "chatml".as_ref(), tokenizer.as_os_str()],
        tmp.path(),
    );
    assert!(text.contains("ok: 2 RL rows, 2 SFT rows"), "{text}");
    // The king's template renders every RL prompt in verl's own code; its
    // multi-turn SFT dataset refuses it (python/turnlake_verl.py says why).
    let model = king_model(tmp.path());
    let text = venv_python(
        "verl_datasets.py",
        &[out.as_os_str(), "model".as_ref(), model.as_os_str()],
        tmp.path(),
    );
    assert!(
        text.contains("ok: 2 RL rows; the multi-turn SFT dataset refuses"),
        "{text}"
    );
}
