//! `turnlake harvest` against a loopback HTTP server the test starts: a
//! synthetic corpus served at dashboard-shaped URLs, with a dashboard.json
//! in the real shape pointing at it. Harvest then ingest equals ingesting
//! the corpus directly; transient faults are retried and resumed, lasting
//! ones fail their run by name; a killed harvest's rerun completes without
//! fetching anything twice. Nothing leaves loopback.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use crate::loopback_http::{Fault, Served, Server};

pub const NAMES: [(&str, &str); 3] = [
    ("EVAL_VERDICT", "verdict.json"),
    ("GENERATED_SAMPLES", "generated-samples.jsonl"),
    ("SCORING_RESULTS", "scoring-results.jsonl"),
];

/// A synthetic corpus served at dashboard-shaped URLs, and its dashboard.
pub struct Corpus {
    pub corpus: PathBuf,
    pub runs: Vec<String>,
    pub dashboard: PathBuf,
    pub bytes: u64,
}

fn url_path(i: usize, run: &str, name: &str) -> String {
    format!("/albedo-eval-service/submissions/sub-{i}/eval/{run}/{name}")
}

/// Write a corpus under `dir`, serve its Albedo runs from `server`, and
/// write a dashboard.json in the real shape naming them.
pub fn serve_corpus(server: &Server, dir: &Path) -> Corpus {
    let corpus = dir.join("corpus");
    synth_corpus(&corpus, 11, (5, 8, 0, 0), None);
    let mut runs: Vec<String> = std::fs::read_dir(corpus.join("albedo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    let mut entries = Vec::new();
    let mut bytes = 0;
    for (i, run) in runs.iter().enumerate() {
        let mut artifacts = serde_json::Map::new();
        for (kind, name) in NAMES {
            let body = std::fs::read(corpus.join("albedo").join(run).join(name)).unwrap();
            bytes += body.len() as u64;
            server.serve(&url_path(i, run, name), body);
            artifacts.insert(kind.into(), json!(server.url(&url_path(i, run, name))));
        }
        entries.push(json!({
            "eval_run_id": run, "challenger_won": false, "coronated": false, "king_version": null,
            "score_challenger": 0.5, "score_king": 0.55, "win_margin": -0.05,
            "finished_at": format!("2026-08-0{}T10:00:00+00:00", i + 1),
            "model_uri": format!("miner-{i}/albedo-qwen3.6@{i:040}"), "hotkey": format!("5Hot{i}"), "uid": i,
            "king": {"king_version": 100 + i, "model_uri": "king/albedo-qwen3.6@sha256:78e9", "uid": 90, "hotkey": "5King"},
            "artifacts": artifacts,
        }));
    }
    let dashboard = dir.join("dashboard.json");
    std::fs::write(
        &dashboard,
        serde_json::to_vec_pretty(
            &json!({"updated_at": "2026-08-07T14:36:35+00:00", "eval_runs": entries}),
        )
        .unwrap(),
    )
    .unwrap();
    Corpus {
        corpus,
        runs,
        dashboard,
        bytes,
    }
}

/// Serve `dashboard` at `/dashboard.json`.
fn http_dashboard(server: &Server, dashboard: &Value) {
    server.serve("/dashboard.json", serde_json::to_vec(dashboard).unwrap());
}

pub fn harvest(dashboard: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    bin()
        .arg("harvest")
        .arg(dashboard)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("run turnlake harvest")
}

/// The eval runs a lake holds.
fn eval_runs(lake: &Path) -> Vec<String> {
    let mut runs: Vec<String> = sql(lake, "SELECT eval_run_id FROM evals")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    runs.sort();
    runs
}

#[test]
fn harvest_then_ingest_equals_ingesting_the_corpus_and_faults_fail_only_their_run() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start();
    let c = serve_corpus(&server, tmp.path());
    let id = |i: usize| c.runs[i].as_str();
    let path = |i: usize, name: &str| url_path(i, id(i), name);

    // Transient: a 500 once, a connection cut mid-file. Lasting: a 404, a
    // file that does not match its verdict, a server that never answers.
    server.fault(&path(0, "verdict.json"), Fault::FailOnce);
    let generated_1 = path(1, "generated-samples.jsonl");
    let cut_at = 100_000;
    server.fault(&generated_1, Fault::CutOnceAfter(cut_at));
    let scoring_2 = path(2, "scoring-results.jsonl");
    let scoring_2_body = server
        .state
        .files
        .lock()
        .unwrap()
        .remove(&scoring_2)
        .unwrap();
    let generated_3 = path(3, "generated-samples.jsonl");
    let good_3 = server.state.files.lock().unwrap()[&generated_3].clone();
    let mut bad_3 = good_3.clone();
    bad_3[10] ^= 1;
    server.serve(&generated_3, bad_3);
    let verdict_4 = path(4, "verdict.json");
    server.fault(&verdict_4, Fault::Hang);

    let out = tmp.path().join("runs");
    let args = ["--timeout", "2s", "--retries", "1"];
    let o = harvest(&c.dashboard, &out, &args);
    assert!(!o.status.success(), "three runs failed");
    let text = stdout(&o);
    assert!(
        text.contains("5 runs: 2 complete, 0 already there, 3 failed"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}: HTTP 404", server.url(&scoring_2))),
        "{text}"
    );
    assert!(text.contains("sha256 mismatch"), "{text}");
    assert!(
        text.contains(&format!("{}: no answer within 2s", server.url(&verdict_4))),
        "{text}"
    );
    // The cut file was resumed where it stopped, not fetched again.
    let resumed: Vec<Served> = server
        .served()
        .into_iter()
        .filter(|s| s.path == generated_1)
        .collect();
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    assert_eq!((resumed[0].from, resumed[0].bytes), (0, cut_at as u64));
    assert_eq!(resumed[1].from, cut_at as u64);
    // The mismatched file is kept aside, and its run is not there to ingest.
    let aside = out
        .join(".harvest/mismatched")
        .join(id(3))
        .join("generated-samples.jsonl");
    assert!(aside.exists(), "kept aside at {}", aside.display());
    assert!(!out.join(id(3)).exists());
    let lake = tmp.path().join("lake");
    ok(run_ingest(&lake, &out));
    assert_eq!(eval_runs(&lake), vec![id(0).to_string(), id(1).to_string()]);

    // The server mended, the rerun finishes the job without fetching a
    // complete file again.
    server.serve(&scoring_2, scoring_2_body);
    server.serve(&generated_3, good_3);
    server.state.faults.lock().unwrap().clear();
    let before = server.served().len();
    let o = ok(harvest(&c.dashboard, &out, &args));
    assert!(
        stdout(&o).contains("5 runs: 3 complete, 2 already there, 0 failed"),
        "{}",
        stdout(&o)
    );
    let again: Vec<String> = server.served()[before..]
        .iter()
        .map(|s| s.path.clone())
        .collect();
    assert!(
        again
            .iter()
            .all(|p| [2, 3, 4].iter().any(|i| p.contains(id(*i)))),
        "only the failed runs are fetched: {again:?}"
    );
    let entry: Value = serde_json::from_slice(
        &std::fs::read(out.join(id(0)).join("dashboard-entry.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(entry["eval_run_id"], id(0));

    // Harvest then ingest equals ingesting the corpus directly with the
    // dashboard beside it: each side names the model that played it.
    let (harvested, direct) = (tmp.path().join("harvested"), tmp.path().join("direct"));
    ok(run_ingest(&harvested, &out));
    let dashboard = c.dashboard.to_str().unwrap();
    let corpus = c.corpus.join("albedo");
    ok(run(
        &direct,
        &[
            "ingest",
            "albedo",
            "--dashboard",
            dashboard,
            corpus.to_str().unwrap(),
        ],
    ));
    let who = "SELECT e.eval_run_id, e.challenger_model_uri, e.challenger_uid, e.king_model_uri, e.king_version, \
               count(DISTINCT t.model) AS models, min(t.model) AS first_model \
               FROM evals e JOIN trajectories t USING (eval_run_id) \
               WHERE t.side = 'challenger' GROUP BY 1, 2, 3, 4, 5 ORDER BY 1";
    let rows = sql(&harvested, who);
    assert_eq!(rows.len(), 5);
    for (i, r) in rows.iter().enumerate() {
        let want_model = format!("miner-{i}/albedo-qwen3.6@{i:040}");
        let uid = i.to_string();
        let version = (100 + i).to_string();
        assert_eq!(
            r[1..].to_vec(),
            [
                &want_model,
                &uid,
                "king/albedo-qwen3.6@sha256:78e9",
                &version,
                "1",
                &want_model
            ],
            "{r:?}"
        );
    }
    assert_eq!(
        scalar(
            &harvested,
            "SELECT min(model) FROM trajectories WHERE side = 'previous_king'"
        ),
        "king/albedo-qwen3.6@sha256:78e9"
    );
    // stats and show name them.
    ok(run(&harvested, &["credit"]));
    let stats: Value =
        serde_json::from_slice(&ok(run(&harvested, &["stats", "--format", "json"])).stdout)
            .unwrap();
    let by_model = stats["by_model"].as_array().unwrap();
    let judged = |side: &str| {
        let q = format!("SELECT count(*) FROM trajectories WHERE judged AND side = '{side}'");
        scalar(&harvested, &q).parse::<i64>().unwrap()
    };
    assert_eq!(by_model[0]["model"], "king/albedo-qwen3.6@sha256:78e9");
    assert_eq!(by_model[0]["king_sides"], judged("previous_king"));
    assert_eq!(by_model.len(), 6, "{by_model:?}");
    let challenger_sides: i64 = by_model[1..]
        .iter()
        .map(|m| m["sides"].as_i64().unwrap())
        .sum();
    assert_eq!(challenger_sides, judged("challenger"));
    let side = scalar(
        &harvested,
        "SELECT min(traj_id) FROM trajectories WHERE side = 'challenger'",
    );
    let shown = stdout(&ok(run(&harvested, &["show", &side])));
    assert!(shown.contains("miner-"), "{shown}");
    let tables = lake_tables(&direct);
    assert_eq!(
        table_contents(&|a| run(&harvested, a), &tables),
        table_contents(&|a| run(&direct, a), &tables)
    );
}

fn run_ingest(lake: &Path, dir: &Path) -> std::process::Output {
    run(lake, &["ingest", "albedo", dir.to_str().unwrap()])
}

/// Someone else's dashboard: a run id that is not one path component, a
/// URL that is not http(s), a redirect to another host: each refused by
/// name, nothing written outside `--out`.
#[test]
fn an_untrusted_dashboard_cannot_write_outside_out_or_fetch_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start();
    let c = serve_corpus(&server, tmp.path());
    let mut d: Value = serde_json::from_slice(&std::fs::read(&c.dashboard).unwrap()).unwrap();
    let runs = d["eval_runs"].as_array_mut().unwrap();
    runs[0]["eval_run_id"] = json!("../escaped");
    runs[1]["artifacts"]["EVAL_VERDICT"] = json!("file:///etc/passwd");
    let verdict_2 = url_path(2, &c.runs[2], "verdict.json");
    let elsewhere = format!("http://localhost:{}{verdict_2}", server.addr.port());
    server.fault(&verdict_2, Fault::RedirectTo(elsewhere.clone()));
    // The dashboard by its URL, as the dashboard serves it.
    http_dashboard(&server, &d);
    let url = server.url("/dashboard.json");

    let out = tmp.path().join("nested/out");
    let o = bin()
        .args([
            "harvest",
            &url,
            "--out",
            out.to_str().unwrap(),
            "--retries",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let (text, err) = (stdout(&o), stderr(&o));
    assert!(
        err.contains(&format!(
            "{url}: eval_runs[0].eval_run_id: \"../escaped\" is not one path component"
        )),
        "{err}"
    );
    assert!(text.contains("only http(s) URLs are fetched"), "{text}");
    assert!(
        text.contains(&format!(
            "a redirect to another host ({elsewhere}) is not followed"
        )),
        "{text}"
    );
    assert!(
        text.contains("4 runs: 2 complete, 0 already there, 2 failed"),
        "{text}"
    );
    assert!(!tmp.path().join("nested/escaped").exists());
    assert!(server.served().iter().all(|s| !s.path.contains("escaped")));
}

/// A harvest killed mid-download: the rerun completes, and the server sent
/// no more than the corpus plus one write buffer per interrupted file.
#[test]
fn a_killed_harvest_is_finished_by_its_rerun_without_fetching_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start();
    let c = serve_corpus(&server, tmp.path());
    *server.state.pause.lock().unwrap() = Some(Duration::from_millis(15));
    let out = tmp.path().join("runs");
    let mut child = bin()
        .arg("harvest")
        .arg(&c.dashboard)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once about a third of the corpus has been sent.
    let sent = |s: &Server| s.served().iter().map(|x| x.bytes).sum::<u64>();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sent(&server) < c.bytes / 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let interrupted = walkdir::WalkDir::new(out.join(".harvest"))
        .into_iter()
        .flatten()
        .filter(|e| e.path().to_string_lossy().ends_with(".part"))
        .count() as u64;
    assert!(interrupted > 0, "the kill landed mid-download");

    *server.state.pause.lock().unwrap() = None;
    let o = ok(harvest(&c.dashboard, &out, &[]));
    assert!(stdout(&o).contains("5 runs: 5 complete"), "{}", stdout(&o));
    let total = sent(&server);
    // A write buffer of the killed process, and the chunk in flight.
    let slack = interrupted
        * (turnlake::pipeline::harvest::WRITE_BUFFER + crate::loopback_http::CHUNK) as u64;
    assert!(
        total <= c.bytes + slack,
        "sent {total} bytes for a corpus of {} ({interrupted} files interrupted)",
        c.bytes
    );
    for run in &c.runs {
        for (_, name) in NAMES {
            assert_eq!(
                std::fs::read(out.join(run).join(name)).unwrap(),
                std::fs::read(c.corpus.join("albedo").join(run).join(name)).unwrap(),
                "{run}/{name}"
            );
        }
    }
}
