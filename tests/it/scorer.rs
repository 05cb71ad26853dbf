//! The local scorer end to end through the CLI: features, a fit split by eval
//! run, the held-out report against the corpus's planted answers, turn
//! labels, and scoring a run of one's own; the loop verdict on the real sample.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::*;

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn set(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// A lake of a 12-run synthetic corpus with credit built.
fn scored_lake(root: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let corpus = root.join("corpus");
    let truth = synth_corpus(&corpus, 11, (12, 20, 40, 4), None);
    let lake = root.join("lake");
    ingest_corpus(&lake, &corpus);
    ok(run(&lake, &["credit"]));
    (lake, truth)
}

#[test]
fn scorer_fits_evaluates_labels_and_scores_on_a_synthetic_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let (lake, truth) = scored_lake(tmp.path());
    ok(run(&lake, &["scorer", "features"]));
    // One row per judged side and question of its sample.
    let rows = scalar(&lake, "SELECT count(*) FROM scorer_features");
    assert_eq!(
        rows,
        (2 * truth["counts"]["questions"].as_u64().unwrap()).to_string()
    );
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM scorer_features WHERE label IS NULL"
        ),
        "0"
    );

    ok(run(&lake, &["scorer", "fit"]));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lake.join("models/checklist/meta.json")).unwrap())
            .unwrap();
    let split = &meta["split"];
    let (train, val, test) = (
        set(&split["train"]),
        set(&split["validation"]),
        set(&split["test"]),
    );
    assert!(train.is_disjoint(&test) && train.is_disjoint(&val) && val.is_disjoint(&test));
    let runs: BTreeSet<String> = sql(&lake, "SELECT DISTINCT eval_run_id FROM scorer_features")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let all: BTreeSet<String> = train.iter().chain(&val).chain(&test).cloned().collect();
    assert_eq!(all, runs, "every eval run is in exactly one part");
    assert!(test.len() >= 2, "{test:?}");
    assert!(meta["lake_commit"].as_u64().is_some());

    // Fitting again on the same lake gives the same model bytes.
    let model = std::fs::read(lake.join("models/checklist/model.json")).unwrap();
    ok(run(&lake, &["scorer", "fit"]));
    assert_eq!(
        model,
        std::fs::read(lake.join("models/checklist/model.json")).unwrap()
    );

    let o = ok(run(&lake, &["scorer", "eval", "--json"]));
    let report = json(&o);
    let c = &report["checklist"];
    let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"));
    assert!(f("auc") >= 0.75, "AUC {}", f("auc"));
    assert!(
        f("accuracy") >= f("tag_base_rate_accuracy") + 0.05,
        "accuracy {} vs base rate {}",
        f("accuracy"),
        f("tag_base_rate_accuracy")
    );
    // No scorer beats the planted probabilities by much.
    let planted = truth["scorer"]["planted_accuracy"].as_f64().unwrap();
    assert!(
        f("accuracy") <= planted + 0.05,
        "{} vs planted {planted}",
        f("accuracy")
    );
    let loops = &c["loops"];
    assert_eq!(
        loops["disagreements"].as_array().unwrap().len(),
        0,
        "{loops}"
    );
    assert!(loops["judge_looped"].as_u64().unwrap() > 0, "{loops}");
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lake.join("models/checklist/report.json")).unwrap())
            .unwrap();
    assert_eq!(&saved, c);
    let turn = &report["turn_credit"];
    assert!(turn["kappa"].as_f64().unwrap() > 0.0, "{turn}");
    let tables = stdout(&ok(run(&lake, &["scorer", "eval"])));
    assert!(
        tables.contains("picks the better side") && tables.contains("0.849"),
        "{tables}"
    );

    ok(run(&lake, &["scorer", "label"]));
    let unjudged = scalar(&lake, "SELECT count(*) FROM turns WHERE source <> 'albedo'");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM turn_labels"), unjudged);
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM turn_labels WHERE p_credit < 0 OR p_credit > 1"
        ),
        "0"
    );

    // A held-out challenger written back as a mini-swe-agent run of one's own.
    let held_out = test.iter().next().unwrap();
    let side = sql(
        &lake,
        &format!(
            "SELECT traj_id, sample_id, n_scored FROM trajectories \
             WHERE eval_run_id = '{held_out}' AND side = 'challenger' AND NOT looped \
             AND traj_id NOT IN (SELECT traj_id FROM turns WHERE cmd_kind = 'submit') ORDER BY sample_id LIMIT 1"
        ),
    );
    let (traj_id, sample_id) = (&side[0][0], &side[0][1]);
    let messages = sql(
        &lake,
        &format!("SELECT role, content FROM messages WHERE traj_id = '{traj_id}' ORDER BY idx"),
    );
    let run_file = tmp.path().join("mine.traj.json");
    let list: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| serde_json::json!({"role": m[0], "content": m[1]}))
        .collect();
    std::fs::write(
        &run_file,
        serde_json::to_vec(&serde_json::json!({"messages": list, "info": {}})).unwrap(),
    )
    .unwrap();
    let features = tmp.path().join("mine.csv");
    let o = ok(run(
        &lake,
        &[
            "scorer",
            "score",
            run_file.to_str().unwrap(),
            "--json",
            "--features-out",
            features.to_str().unwrap(),
        ],
    ));
    let s = json(&o);
    let r = &s["runs"][0];
    assert_eq!(r["sample_id"].as_str().unwrap(), sample_id);
    assert_eq!(r["matched_by"], "task text");
    assert_eq!(
        r["scored_outputs"].as_u64().unwrap().to_string(),
        side[0][2]
    );
    assert!(s["interval"].as_f64().is_some());
    assert!(s["notes"].to_string().contains("too few samples"), "{s}");
    // Its features are the judged side's, question by question.
    let mine = std::fs::read_to_string(&features).unwrap();
    let o = ok(run(
        &lake,
        &[
            "sql",
            &format!(
                "SELECT * FROM scorer_features WHERE traj_id = '{traj_id}' ORDER BY question_id"
            ),
            "--format",
            "csv",
        ],
    ));
    let judged = stdout(&o);
    let strip = |csv: &str| -> Vec<String> {
        // Drop the columns that name the run (traj_id, side, model) and the
        // judge's (judge_looped, label). A run submitting with its sample's
        // own marker would differ: a user's run does not carry that marker.
        csv.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                let n = f.len();
                [&f[1..3], &f[5..n - 2]].concat().join(",")
            })
            .collect()
    };
    assert_eq!(strip(&mine), strip(&judged));

    // Before submitting: the known samples a model continues, and the batch
    // report of runs on them against the judged king.
    let out = tmp.path().join("samples");
    let o = ok(run(
        &lake,
        &[
            "export",
            "samples",
            "--out",
            out.to_str().unwrap(),
            "--n",
            "5",
        ],
    ));
    assert!(stdout(&o).contains("exported 5 samples"), "{}", stdout(&o));
    let exported: Vec<serde_json::Value> = std::fs::read_to_string(out.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = exported
        .iter()
        .map(|e| e["sample_id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "one per sample id, in order");
    for e in &exported {
        let king = sql(
            &lake,
            &format!(
                "SELECT prompt_text, score FROM trajectories WHERE side = 'previous_king' \
                 AND sample_id = '{}' AND eval_run_id = '{}'",
                e["sample_id"].as_str().unwrap(),
                e["eval_run_id"].as_str().unwrap()
            ),
        );
        assert_eq!(e["prompt"], king[0][0].as_str());
        assert!(e["prompt"]
            .as_str()
            .unwrap()
            .ends_with("<|im_start|>assistant\n<think>\n"));
        let messages = e["messages"].as_array().unwrap();
        assert!(
            !messages.is_empty()
                && messages
                    .iter()
                    .all(|m| m["role"] != "assistant" || m["content"].is_string())
        );
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap();
        assert_eq!(e["task"], first_user["content"]);
    }
    let batch = stdout(&ok(run(
        &lake,
        &["scorer", "report", run_file.to_str().unwrap()],
    )));
    for part in [
        "margin vs the king",
        "paired samples to resolve it (80% power)",
        "would it win?",
        "loops (the validator's verdict",
        "falls apart (predicted < 0.35)",
        "(reference 0.820)",
    ] {
        assert!(batch.contains(part), "{part}: {batch}");
    }
    let r = json(&ok(run(
        &lake,
        &["scorer", "report", run_file.to_str().unwrap(), "--json"],
    )));
    assert_eq!(r["catastrophic_precision"], c["catastrophic_precision"]);

    // A sample id that is not in the lake is refused, naming the file.
    let o = run(
        &lake,
        &[
            "scorer",
            "score",
            run_file.to_str().unwrap(),
            "--sample",
            "no-such-sample",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("mine.traj.json") && stderr(&o).contains("no-such-sample"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn loop_verdict_matches_the_judge_on_the_real_sample() {
    let Some(samples) = shared_samples("loop_verdict_matches_the_judge_on_the_real_sample") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "albedo",
            "--no-verify",
            samples.join("albedo").to_str().unwrap(),
        ],
    ));
    ok(run(&lake, &["scorer", "features"]));
    let sides = sql(
        &lake,
        "SELECT traj_id, bool_or(judge_looped), bool_or(loop_verdict) FROM scorer_features GROUP BY traj_id",
    );
    assert_eq!(sides.len(), 6, "three samples, two sides each");
    let disagree: Vec<_> = sides.iter().filter(|r| r[1] != r[2]).collect();
    assert!(disagree.is_empty(), "{disagree:?}");
    // The economy questions parse, and the measures are filled for every side.
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM scorer_features WHERE tag = 'economy' AND (econ_limit IS NULL OR econ_value IS NULL)"),
        "0"
    );
}
