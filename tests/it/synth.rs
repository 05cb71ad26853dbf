//! `turnlake synth`: real formats, exact counts through ingest, byte-identical
//! output per seed, and planted turn-level truth recovered by SQL.

use crate::common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

fn synth(out: &Path, seed: &str) -> Value {
    let o = bin()
        .args([
            "synth",
            "--out",
            out.to_str().unwrap(),
            "--seed",
            seed,
            "--eval-runs",
            "4",
            "--samples-per-run",
            "30",
            "--mini-coder",
            "150",
            "--mswea",
            "6",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("MB/s"), "{}", stdout(&o));
    serde_json::from_slice(&std::fs::read(out.join("truth.json")).unwrap()).unwrap()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Format checks every Albedo sample must pass, real or synthetic.
fn assert_albedo_format(sample: &Value, scoring: &Value) {
    for key in [
        "eval_run_id",
        "sample_id",
        "prompt",
        "challenger_turns",
        "previous_king_turns",
        "challenger_output",
        "previous_king_output",
        "chal_error",
        "king_error",
    ] {
        assert!(sample.get(key).is_some(), "sample lacks {key}");
    }
    assert!(sample["prompt"]
        .as_str()
        .unwrap()
        .ends_with("<|im_start|>assistant\n<think>\n"));
    let sid = sample["sample_id"].as_str().unwrap();
    assert_eq!(sid.split(':').count(), 3, "{sid}");
    for side in ["challenger", "previous_king"] {
        let turns = sample[format!("{side}_turns")].as_array().unwrap();
        assert_eq!(turns[0]["role"], "system");
        let scored = turns
            .iter()
            .filter(|t| t.get("score_target").is_some())
            .count();
        assert!(scored > 0);
        // Unflagged turns lead; every observation answers a scored output.
        let first_own = turns
            .iter()
            .position(|t| t.get("score_target").is_some())
            .unwrap();
        assert!(turns[..first_own]
            .iter()
            .all(|t| t.get("environment_observation").is_none()));
        for (i, t) in turns.iter().enumerate() {
            if t.get("environment_observation").is_some() {
                assert!(turns[i - 1].get("score_target").is_some());
            }
            if t.get("score_target").is_some() {
                assert_eq!(t["role"], "assistant");
            }
        }
        let rendered = sample[format!("{side}_output")].as_str().unwrap();
        assert!(rendered.starts_with(
            "FULL CANDIDATE TRAJECTORY\nScore ONLY CANDIDATE OUTPUT 1 through CANDIDATE OUTPUT "
        ));
        assert!(rendered.contains(&format!("CANDIDATE OUTPUT {scored}")));
    }
    assert_eq!(scoring["sample_id"], sample["sample_id"]);
    let questions = scoring["questions"].as_array().unwrap();
    for q in questions {
        for key in ["id", "text", "tag", "category", "requires", "example_bad"] {
            assert!(q.get(key).is_some(), "question lacks {key}");
        }
        assert!(["action", "read", "neutral"].contains(&q["requires"].as_str().unwrap()));
    }
    let results = scoring["judge_results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for j in results {
        assert!(["previous_king", "challenger"].contains(&j["side"].as_str().unwrap()));
        let answers = j["answers"].as_object().unwrap();
        assert_eq!(answers.len(), questions.len());
        assert!(answers.values().all(|a| a == "1" || a == "0"));
        assert_eq!(
            j["explanations"].as_object().unwrap().len(),
            questions.len()
        );
        let yes = answers.values().filter(|a| *a == "1").count() as f64 / questions.len() as f64;
        assert!((j["yes_rate"].as_f64().unwrap() - yes).abs() < 1e-5);
    }
}

fn first_lines(run: &Path) -> (Value, Value) {
    let g = std::fs::read_to_string(run.join("generated-samples.jsonl")).unwrap();
    let s = std::fs::read_to_string(run.join("scoring-results.jsonl")).unwrap();
    (
        serde_json::from_str(g.lines().next().unwrap()).unwrap(),
        serde_json::from_str(s.lines().next().unwrap()).unwrap(),
    )
}

fn first_run(corpus: &Path) -> std::path::PathBuf {
    let mut runs: Vec<_> = std::fs::read_dir(corpus.join("albedo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    runs.remove(0)
}

#[test]
fn synthetic_and_real_samples_pass_the_same_format_checks() {
    let Some(samples) = shared_samples("synthetic_and_real_samples_pass_the_same_format_checks")
    else {
        return;
    };
    let real = samples.join("albedo/8e56f148-9957-4d2a-81eb-3cec65f43dc9");
    let (s, r) = first_lines(&real);
    assert_albedo_format(&s, &r);
    let tmp = tempfile::tempdir().unwrap();
    synth(tmp.path(), "11");
    let (s, r) = first_lines(&first_run(tmp.path()));
    assert_albedo_format(&s, &r);
}

#[test]
fn same_seed_gives_identical_bytes() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    synth(a.path(), "5");
    synth(b.path(), "5");
    let (fa, fb) = (files(a.path()), files(b.path()));
    assert!(fa.len() > 10);
    assert_eq!(fa.len(), fb.len());
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.0, y.0);
        assert!(x.1 == y.1, "{} differs", x.0);
    }
    let c = tempfile::tempdir().unwrap();
    synth(c.path(), "6");
    assert_ne!(files(c.path())[0].1, fa[0].1);
}

#[test]
fn ingest_reports_exactly_the_generated_counts_and_recovers_planted_truth() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let truth = synth(&corpus, "3");
    let c = &truth["counts"];
    let n = |k: &str| c[k].as_u64().unwrap();
    let lake = tmp.path().join("lake");
    let o = run(
        &lake,
        &["ingest", "albedo", corpus.join("albedo").to_str().unwrap()],
    );
    assert_eq!(
        counts(&o),
        (
            n("eval_runs") + 2 * n("samples"),
            n("eval_runs") + 2 * n("samples"),
            0,
            0
        )
    );
    let o = run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            corpus.join("mini-coder").to_str().unwrap(),
        ],
    );
    assert_eq!(
        counts(&o),
        (
            n("mini_coder_trajectories"),
            n("mini_coder_trajectories"),
            0,
            0
        )
    );
    let o = run(
        &lake,
        &["ingest", "mswea", corpus.join("mswea").to_str().unwrap()],
    );
    assert_eq!(
        counts(&o),
        (n("mswea_trajectories"), n("mswea_trajectories"), 0, 0)
    );

    let per_source = sql(
        &lake,
        "SELECT source, count(*), sum(n_turns) FROM trajectories GROUP BY 1 ORDER BY 1",
    );
    assert_eq!(
        per_source,
        vec![
            vec![
                "albedo".to_string(),
                n("sides").to_string(),
                n("albedo_turns").to_string()
            ],
            vec![
                "mini_coder".to_string(),
                n("mini_coder_trajectories").to_string(),
                n("mini_coder_turns").to_string()
            ],
            vec![
                "mswea".to_string(),
                n("mswea_trajectories").to_string(),
                n("mswea_turns").to_string()
            ],
        ]
    );
    let msgs = sql(
        &lake,
        "SELECT source, count(*) FROM messages GROUP BY 1 ORDER BY 1",
    );
    assert_eq!(
        msgs,
        vec![
            vec!["albedo".to_string(), n("albedo_messages").to_string()],
            vec![
                "mini_coder".to_string(),
                n("mini_coder_messages").to_string()
            ],
            vec!["mswea".to_string(), n("mswea_messages").to_string()],
        ]
    );
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM (SELECT DISTINCT eval_run_id, sample_id FROM trajectories WHERE source = 'albedo')"
        ),
        n("samples").to_string()
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM questions"),
        n("questions").to_string()
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM judgments"),
        n("judgments").to_string()
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM turns"),
        (n("albedo_turns") + n("mini_coder_turns") + n("mswea_turns")).to_string()
    );
    assert!(
        !run(&lake, &["sql", "SELECT * FROM rejects"])
            .status
            .success(),
        "no rejects table when nothing was rejected"
    );

    // Turn-level planted quantities (Albedo turns): exact against this corpus's plan,
    // and within sampling tolerance of what the parameters imply.
    let realized = &truth["realized"];
    let expected = &truth["expected"];
    let wellformed = "source = 'albedo' AND n_bash_blocks = 1 AND NOT is_submit";
    let shares = sql(&lake, &format!("SELECT cmd_kind, CAST(count(*) AS DOUBLE) / (SELECT count(*) FROM turns WHERE {wellformed}) FROM turns WHERE {wellformed} GROUP BY 1 ORDER BY 1"));
    for row in &shares {
        let measured: f64 = row[1].parse().unwrap();
        let planted = realized["cmd_kind_share"][&row[0]].as_f64().unwrap();
        assert!(
            (measured - planted).abs() < 1e-9,
            "{}: {measured} vs planted {planted}",
            row[0]
        );
        let model = truth["params"]["mix"][&row[0]].as_f64().unwrap();
        assert!(
            (measured - model).abs() < 0.03,
            "{}: {measured} vs parameter {model}",
            row[0]
        );
    }
    assert_eq!(
        shares.len(),
        realized["cmd_kind_share"].as_object().unwrap().len()
    );
    assert_eq!(shares.len(), 9, "every planted kind, plain grep included");
    let failed: f64 = scalar(&lake, &format!("SELECT avg(CAST(obs_failed AS DOUBLE)) FROM turns WHERE {wellformed} AND obs_failed IS NOT NULL")).parse().unwrap();
    assert!(
        (failed - realized["failed_obs_share"].as_f64().unwrap()).abs() < 1e-9,
        "{failed}"
    );
    // Four standard errors; the two sides of a sample share their context turns, so
    // count half the turns as independent.
    let n: f64 = scalar(
        &lake,
        &format!("SELECT count(*) FROM turns WHERE {wellformed} AND obs_failed IS NOT NULL"),
    )
    .parse()
    .unwrap();
    let p = expected["failed_obs_share"].as_f64().unwrap();
    let tol = 4.0 * (p * (1.0 - p) / (n / 2.0)).sqrt();
    assert!(
        (failed - p).abs() < tol,
        "{failed} vs model {p} (tol {tol})"
    );
    let repeats: f64 = scalar(&lake, &format!("SELECT avg(CAST(is_repeat AS DOUBLE)) FROM turns JOIN trajectories USING (traj_id) WHERE NOT looped AND turns.{wellformed}")).parse().unwrap();
    assert!(
        (repeats - realized["repeat_rate"].as_f64().unwrap()).abs() < 0.01,
        "{repeats}"
    );
    assert!(
        (repeats - expected["repeat_rate"].as_f64().unwrap()).abs() < 0.025,
        "{repeats}"
    );
    let looped: f64 = scalar(
        &lake,
        "SELECT avg(CAST(looped AS DOUBLE)) FROM trajectories WHERE source = 'albedo'",
    )
    .parse()
    .unwrap();
    assert!(
        (looped
            - truth["params"]["model"]["looped_side_rate"]
                .as_f64()
                .unwrap())
        .abs()
            < 0.03,
        "{looped}"
    );
}

#[test]
fn a_corrupted_copy_gives_exactly_the_expected_rejects() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth(&corpus, "9");
    let mut runs: Vec<_> = std::fs::read_dir(corpus.join("albedo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    // Run 0: one changed byte in scoring-results.jsonl, so its hash no longer matches.
    let sco = runs[0].join("scoring-results.jsonl");
    let text = std::fs::read_to_string(&sco)
        .unwrap()
        .replacen("\"binary\"", "\"binarY\"", 1);
    std::fs::write(&sco, text).unwrap();
    // Run 1: one truncated line, with verdict.json updated to the new hash.
    let gen = runs[1].join("generated-samples.jsonl");
    let text = std::fs::read_to_string(&gen).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[4].truncate(1000);
    let new = lines.join("\n") + "\n";
    std::fs::write(&gen, &new).unwrap();
    let verdict_path = runs[1].join("verdict.json");
    let mut verdict: Value =
        serde_json::from_slice(&std::fs::read(&verdict_path).unwrap()).unwrap();
    verdict["artifact_metadata"]["generated_samples"]["sha256"] = Value::String(format!(
        "sha256:{}",
        hex::encode(Sha256::digest(new.as_bytes()))
    ));
    std::fs::write(&verdict_path, serde_json::to_vec_pretty(&verdict).unwrap()).unwrap();

    let lake = tmp.path().join("lake");
    let o = run(
        &lake,
        &["ingest", "albedo", corpus.join("albedo").to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let per_run = 1 + 2 * 30;
    assert_eq!(counts(&o), (4 * per_run, 3 * per_run - 1, 0, per_run + 1));
    assert!(
        stderr(&o).contains("scoring-results.jsonl: sha256 mismatch"),
        "{}",
        stderr(&o)
    );
    let r = sql(&lake, "SELECT count(*), count(*) FILTER (WHERE field = 'sha256'), count(*) FILTER (WHERE reason LIKE 'truncated JSON%' AND line = 5) FROM rejects");
    assert_eq!(
        r,
        vec![vec![
            (per_run + 1).to_string(),
            per_run.to_string(),
            "1".to_string()
        ]]
    );
}
