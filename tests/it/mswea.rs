//! One's own mini-swe-agent 2.x runs, as its real agent writes them
//! (`python/mswea_runs.py` drives its DefaultAgent, LocalEnvironment and
//! model classes): every style it writes is read whole, each model response
//! is one turn, and what `show --format traj.json` and `export sft` give
//! back equals what the agent recorded. The checked-in runs
//! (`data/fixtures/mswea-2.4`) and a fresh run of the script both pass.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A query's rows as JSON objects, by column name.
fn rows(lake: &Path, query: &str) -> Vec<Value> {
    let o = ok(run(lake, &["sql", query, "--format", "ndjson"]));
    stdout(&o)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every `*.traj.json` under `dir`, in path order.
fn trajectory_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
        .collect();
    out.sort();
    out
}

/// A turn as the agent's own file records it.
#[derive(Debug, PartialEq)]
struct RecordedTurn {
    /// A response the agent rejected (recorded only in the next message's `extra`).
    format_error: bool,
    /// What it executed (`extra.actions`).
    commands: Vec<String>,
    /// What the environment returned for the first action.
    returncode: Option<i64>,
}

fn is_response(m: &Value) -> bool {
    m["role"] == "assistant" || m["object"] == "response"
}

fn is_format_error(m: &Value) -> bool {
    m.pointer("/extra/interrupt_type").and_then(Value::as_str) == Some("FormatError")
}

/// One turn per model response, in order: each response the agent executed,
/// and each it rejected.
fn recorded_turns(messages: &[Value]) -> Vec<RecordedTurn> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if is_format_error(m) {
            out.push(RecordedTurn {
                format_error: true,
                commands: Vec::new(),
                returncode: None,
            });
        } else if is_response(m) {
            let commands = m
                .pointer("/extra/actions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|x| x["command"].as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let returncode = messages[i + 1..]
                .iter()
                .take_while(|n| !is_response(n) && !is_format_error(n))
                .find_map(|n| n.pointer("/extra/returncode").and_then(Value::as_i64));
            out.push(RecordedTurn {
                format_error: false,
                commands,
                returncode,
            });
        }
    }
    out
}

/// The recorded messages the model was sent, in the chat shape turnlake
/// exports (Responses-API items converted: `tool_calls[{id, type,
/// function{name, arguments}}]`, `role: "tool"` with `tool_call_id`).
fn recorded_messages(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["role"] != "exit")
        .map(|m| {
            if m["object"] == "response" {
                let output = m["output"].as_array().unwrap();
                let text: String = output
                    .iter()
                    .filter(|o| o["type"] == "message")
                    .flat_map(|o| o["content"].as_array().unwrap())
                    .map(|c| c["text"].as_str().unwrap_or(""))
                    .collect();
                let calls: Vec<Value> = output
                    .iter()
                    .filter(|o| o["type"] == "function_call")
                    .map(|o| {
                        serde_json::json!({"id": o["call_id"], "type": "function",
                            "function": {"name": o["name"], "arguments": o["arguments"]}})
                    })
                    .collect();
                let reasoning: String = output
                    .iter()
                    .filter(|o| o["type"] == "reasoning")
                    .flat_map(|o| o["summary"].as_array().into_iter().flatten())
                    .map(|c| c["text"].as_str().unwrap_or(""))
                    .collect();
                let mut chat = serde_json::json!({"role": "assistant", "content": text});
                if !reasoning.is_empty() {
                    chat["reasoning_content"] = Value::String(reasoning);
                }
                if !calls.is_empty() {
                    chat["tool_calls"] = Value::Array(calls);
                }
                chat
            } else if m["type"] == "function_call_output" {
                serde_json::json!({"role": "tool", "content": m["output"], "tool_call_id": m["call_id"]})
            } else {
                let content = match &m["content"] {
                    Value::Array(parts) => {
                        Value::String(parts.iter().filter_map(|p| p["text"].as_str()).collect())
                    }
                    c => c.clone(),
                };
                let mut chat = serde_json::json!({"role": m["role"], "content": content});
                for field in ["tool_calls", "tool_call_id", "reasoning_content"] {
                    if let Some(v) = m.get(field).filter(|v| !v.is_null()) {
                        chat[field] = v.clone();
                    }
                }
                chat
            }
        })
        .collect()
}

/// An exported message with only the recorded fields (and no empty reasoning).
fn recorded_fields(m: &Value) -> Value {
    let mut out = serde_json::json!({"role": m["role"], "content": m["content"]});
    for field in ["tool_calls", "tool_call_id", "reasoning_content"] {
        if let Some(v) = m.get(field).filter(|v| !v.is_null()) {
            out[field] = v.clone();
        }
    }
    out
}

/// Point 8 of the runs under `dir`, ingested into `lake`: turns, commands,
/// return codes, submits and exit status as the agent recorded them, and
/// the messages `show --format traj.json` gives back.
fn check_runs(dir: &Path, lake: &Path) -> usize {
    let files = trajectory_files(dir);
    assert!(!files.is_empty(), "no trajectories under {}", dir.display());
    let o = ok(run(lake, &["ingest", "mswea", dir.to_str().unwrap()]));
    assert_eq!(counts(&o).3, 0, "nothing is rejected: {}", stdout(&o));
    for file in &files {
        let traj: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let messages = traj["messages"].as_array().unwrap();
        let name = file.display().to_string();
        let found = rows(
            lake,
            &format!(
                "SELECT traj_id, exit_status, n_turns FROM trajectories WHERE input_file LIKE '%{}'",
                file.strip_prefix(dir).unwrap().display()
            ),
        );
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        let traj_id = found[0]["traj_id"].as_str().unwrap().to_string();
        assert_eq!(
            found[0]["exit_status"], traj["info"]["exit_status"],
            "{name}"
        );

        let want = recorded_turns(messages);
        let turns = rows(
            lake,
            &format!(
                "SELECT t, commands, returncode, obs_failed, format_error, is_submit, parsed \
                 FROM turns WHERE traj_id = '{traj_id}' ORDER BY t"
            ),
        );
        assert_eq!(
            turns.len(),
            want.len(),
            "{name}: one turn per model response"
        );
        assert_eq!(found[0]["n_turns"], want.len(), "{name}");
        for (turn, want) in turns.iter().zip(&want) {
            let t = &turn["t"];
            let commands: Vec<String> = turn["commands"]
                .as_array()
                .map(|c| c.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            assert_eq!(commands, want.commands, "{name} turn {t}: commands");
            assert_eq!(
                turn["format_error"].is_string(),
                want.format_error,
                "{name} turn {t}: format error"
            );
            assert_eq!(
                turn["returncode"].as_i64(),
                want.returncode,
                "{name} turn {t}: returncode"
            );
            if let Some(rc) = want.returncode {
                assert_eq!(turn["obs_failed"], (rc != 0), "{name} turn {t}: failure");
            }
            if want.format_error {
                assert_eq!(turn["parsed"], false, "{name} turn {t}");
            }
        }
        let submitted = traj["info"]["exit_status"] == "Submitted";
        let submits: Vec<bool> = turns.iter().map(|t| t["is_submit"] == true).collect();
        assert_eq!(
            submits,
            (0..turns.len())
                .map(|i| submitted && i + 1 == turns.len())
                .collect::<Vec<_>>(),
            "{name}: submits"
        );

        // Back out as a mini-swe-agent file: the messages as recorded.
        let shown = ok(run(lake, &["show", &traj_id, "--format", "traj.json"]));
        let shown_file: Value = serde_json::from_slice(&shown.stdout).unwrap();
        let got: Vec<Value> = shown_file["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "exit")
            .map(recorded_fields)
            .collect();
        assert_eq!(
            got,
            recorded_messages(messages),
            "{name}: show --format traj.json"
        );
        assert_eq!(
            shown_file["info"]["exit_status"],
            traj["info"]["exit_status"]
        );
        // Each message's recorded `extra` (actions, cost, raw response, ...)
        // too, as text: every digit of its timestamps.
        assert_eq!(
            extra_texts(&shown.stdout),
            extra_texts(&std::fs::read(file).unwrap()),
            "{name}: extra"
        );
    }
    files.len()
}

/// Each message's `extra` in a trajectory file, as its JSON text with the
/// whitespace between tokens dropped: compared as text, a number that lost
/// a digit on the way shows.
fn extra_texts(file: &[u8]) -> Vec<Option<String>> {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        extra: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct File<'a> {
        #[serde(borrow)]
        messages: Vec<Message<'a>>,
    }
    let file: File = serde_json::from_slice(file).unwrap();
    file.messages
        .iter()
        .map(|m| {
            m.extra
                .map(|e| turnlake::source::json::compact_json(e.get()))
        })
        .collect()
}

/// A select config whose run products take the mswea runs, with turn
/// ranges short runs reach.
const MSWEA_SELECT: &str =
    "[credit]\nmin_score = 0.85\nmax_dup_cmd_ratio = 0.45\nmax_cmd_run = 3\n\
loop_dup_ratio = 0.55\nloop_max_run = 5\n[runs]\nsources = [\"mswea\"]\n\
[escape_mini]\nt_min = 1\nt_max = 40\n[finish_mini]\nt_min = 1\nt_max = 40\ncap = 100\nseed = 0\n\
[mix]\nmode = \"all\"\nseed = 1\n[mix.shares]\nfinish_mini = 1.0\n";

/// Resolve the submitted runs with a SWE-bench report, select and mix them,
/// and export SFT: each row's messages are the recorded ones, field for field.
fn export_matches_the_record(dir: &Path, lake: &Path, work: &Path) {
    let mut resolved = Vec::new();
    let mut by_instance = BTreeMap::new();
    for file in trajectory_files(dir) {
        let traj: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let instance = file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".traj.json")
            .to_string();
        if traj["info"]["exit_status"] == "Submitted" {
            resolved.push(instance.clone());
        }
        by_instance.insert(instance, traj);
    }
    assert!(!resolved.is_empty());
    let report = work.join("mini.run1.json");
    std::fs::write(
        &report,
        serde_json::json!({"resolved_ids": resolved, "unresolved_ids": [], "error_ids": []})
            .to_string(),
    )
    .unwrap();
    let o = ok(run(
        lake,
        &["ingest", "swebench-results", report.to_str().unwrap()],
    ));
    assert!(
        stdout(&o).contains(&format!("{} instances resolved", resolved.len())),
        "{}",
        stdout(&o)
    );
    let config = work.join("select.toml");
    std::fs::write(&config, MSWEA_SELECT).unwrap();
    ok(run(lake, &["select", "--config", config.to_str().unwrap()]));
    ok(run(lake, &["mix", "--config", config.to_str().unwrap()]));
    // The king's own template and vocabulary take every train turn, tool
    // calls rendered as its <tool_call><function=...> XML.
    let model = king_model(work);
    let o = ok(run(lake, &["validate", "--model", model.to_str().unwrap()]));
    assert!(
        stdout(&o).contains("100.00% decode back exactly"),
        "{}",
        stdout(&o)
    );
    for format in ["jsonl", "parquet"] {
        let out = work.join(format!("sft.{format}"));
        let path = out.to_str().unwrap();
        ok(run(
            lake,
            &["export", "sft", "--format", format, "--out", path],
        ));
        let exported = match format {
            "jsonl" => json_lines(&out),
            _ => parquet_rows(&out),
        };
        let finish = exported
            .iter()
            .filter(|r| r["mix"] == "finish_mini")
            .count();
        assert_eq!(
            finish,
            resolved.len(),
            "{format}: one finish_mini row per resolved run"
        );
        for row in &exported {
            // `MIX/mswea/INSTANCE/SHA[/T]`
            let instance = row["row_id"].as_str().unwrap().split('/').nth(2).unwrap();
            let want = recorded_messages(by_instance[instance]["messages"].as_array().unwrap());
            let got: Vec<Value> = row["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(recorded_fields)
                .collect();
            assert_eq!(
                got,
                want[..got.len()],
                "{format} {instance}: exported messages"
            );
            // The row ends at its train turn: a response the model sent.
            assert_eq!(got.last().unwrap()["role"], "assistant", "{instance}");
            let tool_run = given_tools(&by_instance[instance]);
            let tools = match row.get("tools") {
                Some(Value::String(t)) => Some(serde_json::from_str::<Value>(t).unwrap()),
                t => t.cloned(),
            };
            assert_eq!(tools.is_some(), tool_run, "{format} {instance}: tools");
            if let Some(tools) = tools {
                assert_eq!(tools[0]["function"]["name"], "bash");
            }
        }
    }
    // The verl export takes the turn-credit scorer's labels for these runs.
    #[cfg(feature = "scorer")]
    verl_export_matches_the_record(&by_instance, lake, work);
}

/// Whether the agent ran with tools: its text-based model classes carry
/// an `action_regex` in the recorded config, its tool-call ones do not.
fn given_tools(traj: &Value) -> bool {
    traj["info"]["config"]["model"]
        .get("action_regex")
        .is_none()
}

/// `export verl --sources mswea` of the runs (beside a small synthetic
/// Albedo and mini-coder corpus the turn-credit scorer is fitted on): each
/// turn's prompt in trajectories.jsonl is the recorded messages before it,
/// its response the recorded one (a rejected response is the turn's own,
/// never in a later prompt); rl.parquet's prompt is the first turn's and
/// sft.parquet's messages the conversation as sent through the last turn.
#[cfg(feature = "scorer")]
fn verl_export_matches_the_record(by_instance: &BTreeMap<String, Value>, lake: &Path, work: &Path) {
    let corpus = work.join("corpus");
    synth_corpus(&corpus, 5, (6, 12, 30, 0), None);
    for (kind, dir) in [("albedo", "albedo"), ("mini-coder", "mini-coder")] {
        ok(run(
            lake,
            &["ingest", kind, corpus.join(dir).to_str().unwrap()],
        ));
    }
    fit_and_label(lake);
    let out = work.join("verl");
    ok(verl_export(lake, &out));
    let trajectories = json_lines(&out.join("trajectories.jsonl"));
    assert_eq!(trajectories.len(), by_instance.len(), "one per run");
    let mut last_turns = BTreeMap::new();
    let mut first_prompts = BTreeMap::new();
    for traj in &trajectories {
        let id = traj["trajectory_id"].as_str().unwrap();
        let instance = id.split('/').nth(1).unwrap();
        let messages = by_instance[instance]["messages"].as_array().unwrap();
        let want = recorded_messages(messages);
        let recorded = recorded_turns(messages);
        let turns = traj["turns"].as_array().unwrap();
        assert_eq!(turns.len(), recorded.len(), "{id}: one turn per response");
        for (turn, recorded) in turns.iter().zip(&recorded) {
            let t = &turn["t"];
            let prompt: Vec<Value> = turn["prompt"]
                .as_array()
                .unwrap()
                .iter()
                .map(recorded_fields)
                .collect();
            assert_eq!(prompt, want[..prompt.len()], "{id} turn {t}: prompt");
            let response = recorded_fields(&turn["response"]);
            if recorded.format_error {
                assert_eq!(response["role"], "assistant", "{id} turn {t}");
                assert!(is_format_error(&messages[prompt.len()]), "{id} turn {t}");
            } else {
                assert_eq!(response, want[prompt.len()], "{id} turn {t}: response");
            }
        }
        let tool_run = given_tools(&by_instance[instance]);
        assert_eq!(traj.get("tools").is_some(), tool_run, "{id}: tools");
        let first = turns.first().unwrap();
        first_prompts.insert(id.to_string(), first["prompt"].clone());
        // The conversation as sent, through the last turn's response unless
        // the agent rejected it.
        let last = turns.last().unwrap();
        let mut sent = last["prompt"].as_array().unwrap().clone();
        if !recorded.last().unwrap().format_error {
            sent.push(last["response"].clone());
        }
        last_turns.insert(id.to_string(), Value::Array(sent));
    }
    let same = |a: &Value, b: &Value| {
        let fields = |v: &Value| -> Vec<Value> {
            v.as_array().unwrap().iter().map(recorded_fields).collect()
        };
        fields(a) == fields(b)
    };
    let rl = parquet_rows(&out.join("rl.parquet"));
    assert_eq!(rl.len(), trajectories.len());
    for row in &rl {
        let id = row["extra_info"]["trajectory_id"].as_str().unwrap();
        assert!(
            same(&row["prompt"], &first_prompts[id]),
            "rl.parquet {id}: prompt"
        );
    }
    let sft = parquet_rows(&out.join("sft.parquet"));
    assert_eq!(sft.len(), trajectories.len());
    for row in &sft {
        let id = row["trajectory_id"].as_str().unwrap();
        assert!(
            same(&row["messages"], &last_turns[id]),
            "sft.parquet {id}: messages"
        );
    }
}

/// `export verl --sources mswea` of `lake` into `out`, taking the scorer's
/// labels whatever its kappa on the small corpus of the tests.
#[cfg(feature = "scorer")]
fn verl_export(lake: &Path, out: &Path) -> std::process::Output {
    let out = out.to_str().unwrap();
    run(
        lake,
        &[
            "export",
            "verl",
            "--out",
            out,
            "--sources",
            "mswea",
            "--min-kappa=-1",
        ],
    )
}

#[test]
fn the_checked_in_runs_of_every_style_are_read_whole_and_exported_as_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let dir = fixtures().join("mswea-2.4");
    assert_eq!(check_runs(&dir, &lake), 6);
    export_matches_the_record(&dir, &lake, tmp.path());

    // A stored tool call altered (its content untouched): every export
    // refuses it and writes nothing.
    let altered = alter_stored_messages(&lake, "tool_calls", |_, _, calls| {
        calls.replace("cat README.md", "rm -rf ~")
    });
    assert!(altered > 0, "no stored tool call runs cat README.md");
    for format in ["jsonl", "parquet"] {
        let out = tmp.path().join(format!("altered.{format}"));
        let path = out.to_str().unwrap();
        let o = run(&lake, &["export", "sft", "--format", format, "--out", path]);
        assert!(!o.status.success(), "{format}");
        assert!(
            stderr(&o).contains("does not match its stored content hash"),
            "{format}: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{format}: nothing is written");
    }
    #[cfg(feature = "scorer")]
    {
        let out = tmp.path().join("altered-verl");
        let o = verl_export(&lake, &out);
        assert!(!o.status.success());
        assert!(stderr(&o).contains("content hash"), "verl: {}", stderr(&o));
        assert!(!out.exists(), "verl: nothing is written");
    }
}

#[test]
fn runs_the_real_agent_writes_now_are_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    venv_python("mswea_runs.py", &[runs.as_os_str()], tmp.path());
    let lake = tmp.path().join("lake");
    assert_eq!(check_runs(&runs, &lake), 6);
    export_matches_the_record(&runs, &lake, tmp.path());
}

/// The real v2 sample (`../shared/samples/mswea`, written by the agent on
/// SWE-bench): `show --format traj.json` gives back every message's
/// `extra` as the agent wrote it, its float timestamps to the last digit.
#[test]
fn a_real_run_comes_back_with_its_extras_to_the_last_digit() {
    let Some(samples) = shared_samples("a_real_run_comes_back_with_its_extras_to_the_last_digit")
    else {
        return;
    };
    let file = samples.join("mswea/astropy-12907.v2.traj.json");
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(&lake, &["ingest", "mswea", file.to_str().unwrap()]));
    let traj = scalar(&lake, "SELECT min(traj_id) FROM trajectories");
    let shown = ok(run(&lake, &["show", &traj, "--format", "traj.json"]));
    let recorded = std::fs::read(&file).unwrap();
    let want = extra_texts(&recorded);
    assert!(want
        .iter()
        .flatten()
        .any(|e| e.contains("1775802351.9899065")));
    let got = extra_texts(&shown.stdout);
    assert_eq!(got.len(), want.len());
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert!(got == want, "messages[{i}].extra: {got:?}\n!= {want:?}");
    }
}

#[test]
fn a_rerun_replaces_its_trajectory_and_a_later_report_its_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let (lake, runs) = (tmp.path().join("lake"), tmp.path().join("runs"));
    let file = runs.join("calc__x/calc__x.traj.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let runs_dir = fixtures().join("mswea-2.4/toolcall");
    let first = runs_dir.join("calc__toolcall_steplimit/calc__toolcall_steplimit.traj.json");
    let second = runs_dir.join("calc__toolcall_submit/calc__toolcall_submit.traj.json");
    std::fs::copy(&first, &file).unwrap();
    ok(run(&lake, &["ingest", "mswea", runs.to_str().unwrap()]));
    // `--redo-existing` wrote the file again.
    std::fs::copy(&second, &file).unwrap();
    let o = ok(run(&lake, &["ingest", "mswea", runs.to_str().unwrap()]));
    assert!(
        stdout(&o).contains("replaced: 1 trajectories"),
        "{}",
        stdout(&o)
    );
    assert_eq!(counts(&o), (1, 1, 0, 0));
    let held = sql(&lake, "SELECT exit_status, n_turns FROM trajectories");
    assert_eq!(held, vec![vec!["Submitted".to_string(), "9".to_string()]]);
    let turns = "SELECT count(*) FROM turns";
    assert_eq!(scalar(&lake, turns), "9", "the first run's turns are gone");
    assert_eq!(
        scalar(&lake, "SELECT count(DISTINCT traj_id) FROM messages"),
        "1"
    );
    // The same file again changes nothing.
    let o = ok(run(&lake, &["ingest", "mswea", runs.to_str().unwrap()]));
    assert_eq!(counts(&o), (1, 0, 1, 0));

    let report = |name: &str, resolved: bool| {
        let path = tmp.path().join(name);
        let ids = serde_json::json!(["calc__x"]);
        let (yes, no) = if resolved {
            (ids, serde_json::json!([]))
        } else {
            (serde_json::json!([]), ids)
        };
        std::fs::write(
            &path,
            serde_json::json!({"resolved_ids": yes, "unresolved_ids": no}).to_string(),
        )
        .unwrap();
        path
    };
    let verified = "SELECT CAST(verified AS VARCHAR) FROM trajectories";
    let a = report("a.json", true);
    let under = format!("--under={}", runs.display());
    ok(run(
        &lake,
        &["ingest", "swebench-results", &under, a.to_str().unwrap()],
    ));
    assert_eq!(scalar(&lake, verified), "true");
    // A report of other runs (another folder) leaves these alone.
    let other = format!("--under={}", tmp.path().join("elsewhere").display());
    let b = report("b.json", false);
    ok(run(
        &lake,
        &["ingest", "swebench-results", &other, b.to_str().unwrap()],
    ));
    assert_eq!(scalar(&lake, verified), "true");
    ok(run(
        &lake,
        &["ingest", "swebench-results", b.to_str().unwrap()],
    ));
    assert_eq!(scalar(&lake, verified), "false", "the later report decides");
    let kept = sql(
        &lake,
        "SELECT report_file LIKE '%a.json', resolved, trajectories FROM swebench_results ORDER BY ingested_at, report_file, under",
    );
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert_eq!(kept[0], vec!["true", "true", "1"]);
    assert_eq!(
        kept[1][2], "0",
        "the report under another folder matched nothing"
    );
    // Not a report: refused naming the file and field, nothing written.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"{"calc__x": {"resolved": "yes"}}"#).unwrap();
    let o = run(
        &lake,
        &["ingest", "swebench-results", bad.to_str().unwrap()],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("bad.json, field calc__x.resolved"),
        "{}",
        stderr(&o)
    );
    assert_eq!(scalar(&lake, "SELECT count(*) FROM swebench_results"), "3");
}

/// A lake written before this release's columns (`messages.fields_sha`,
/// `turns.parsed`, ...): they read as nulls, and the exports check content
/// alone.
#[test]
fn a_lake_from_before_the_recorded_fields_reads_them_as_nulls() {
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
    let later = [
        "extra",
        "tool_call_id",
        "recovered",
        "fields_sha",
        "commands",
        "format_error",
        "parsed",
    ];
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let l = turnlake::lake::Lake::open(lake.to_str().unwrap()).unwrap();
        let ctx = turnlake::engine::session(&l).await.unwrap();
        for table in ["messages", "turns"] {
            let batches =
                turnlake::engine::run_sql(&ctx, &format!("SELECT * FROM {table}"), "read")
                    .await
                    .unwrap();
            let schema = batches[0].schema();
            let keep: Vec<usize> = (0..schema.fields().len())
                .filter(|i| !later.contains(&schema.field(*i).name().as_str()))
                .collect();
            let older: Vec<_> = batches.iter().map(|b| b.project(&keep).unwrap()).collect();
            let url = url::Url::from_directory_path(lake.join(table)).unwrap();
            let delta = deltalake::open_table(url).await.unwrap();
            delta
                .write(older)
                .with_save_mode(deltalake::protocol::SaveMode::Overwrite)
                .with_schema_mode(deltalake::operations::write::SchemaMode::Overwrite)
                .await
                .unwrap();
        }
    });
    // What an earlier release left: no lake log, the tables without the columns.
    std::fs::remove_dir_all(lake.join("_turnlake")).unwrap();
    let columns = sql(&lake, "DESCRIBE turns");
    assert!(
        columns.iter().any(|c| c[0] == "parsed"),
        "read as null: {columns:?}"
    );
    let traj = scalar(&lake, "SELECT min(traj_id) FROM trajectories");
    let shown = ok(run(&lake, &["show", &traj, "--format", "traj.json"]));
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(!shown["messages"].as_array().unwrap().is_empty());
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(parsed) + count(fields_sha) FROM turns JOIN messages USING (traj_id)"
        ),
        "0"
    );
}

/// `show --format traj.json` writes files mini-swe-agent's own inspector
/// opens: an Albedo side and a run of every style, loaded and walked step by
/// step by its TrajectoryInspector (`python/inspect_trajs.py`), one step per
/// executed turn after the task's.
#[test]
fn the_inspector_opens_what_show_writes_of_albedo_sides_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "albedo",
            fixtures().join("albedo").to_str().unwrap(),
        ],
    ));
    ok(run(
        &lake,
        &[
            "ingest",
            "mswea",
            fixtures().join("mswea-2.4").to_str().unwrap(),
        ],
    ));
    let trajs = rows(
        &lake,
        "SELECT t.traj_id, count(u.t) FILTER (WHERE u.format_error IS NULL) AS executed \
         FROM trajectories t LEFT JOIN turns u USING (traj_id) \
         GROUP BY t.traj_id ORDER BY t.traj_id",
    );
    assert!(trajs.len() > 4, "{trajs:?}");
    let mut files = Vec::new();
    for (i, traj) in trajs.iter().enumerate() {
        let shown = ok(run(
            &lake,
            &[
                "show",
                traj["traj_id"].as_str().unwrap(),
                "--format",
                "traj.json",
            ],
        ));
        let file = tmp.path().join(format!("{i}.traj.json"));
        std::fs::write(&file, &shown.stdout).unwrap();
        files.push(file);
    }
    let files: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let opened: Vec<Value> = venv_python("inspect_trajs.py", &files, tmp.path())
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(opened.len(), trajs.len());
    for ((traj, file), seen) in trajs.iter().zip(&files).zip(&opened) {
        let written: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert_eq!(seen["errors"], serde_json::json!([]), "{traj}");
        assert_eq!(
            seen["messages"].as_u64().unwrap() as usize,
            written["messages"].as_array().unwrap().len(),
            "{traj}"
        );
        assert!(seen["messages"].as_u64().unwrap() > 0, "{traj}");
        assert_eq!(
            seen["steps"].as_i64().unwrap(),
            1 + traj["executed"].as_i64().unwrap(),
            "{traj}: {seen}"
        );
    }
    assert!(
        trajs
            .iter()
            .any(|t| t["traj_id"].as_str().unwrap().starts_with("albedo/")),
        "an Albedo side is among them"
    );
}
