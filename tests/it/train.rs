//! The training sink through the CLI: a run on a built mix with its report,
//! curve and model directory, resumed from a checkpoint; and a mix sweep
//! that ranks a planted better mix first over two seeds.

use serde_json::Value;
use std::path::Path;

use crate::common::*;

const SMALL: &str = "seed = 3\nsteps = 30\nbatch_size = 4\nseq_len = 64\nlr = 5e-3\nwarmup = 3\n\
min_lr_ratio = 0.1\nweight_decay = 0.01\nclip = 1.0\neval_every = 10\ncheckpoint_every = 10\n\
heldout_share = 0.15\nthreads = 1\n[model]\nhidden_size = 32\nintermediate_size = 64\n\
num_hidden_layers = 1\nnum_attention_heads = 4\nnum_key_value_heads = 2\nrope_theta = 10000.0\n";

/// `turnlake train --out OUT --config CFG EXTRA...`, which must succeed.
fn train(lake: &Path, out: &Path, cfg: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["train", "--out", out.to_str().unwrap(), "--config", cfg];
    args.extend_from_slice(extra);
    ok(run(lake, &args))
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn train_renders_with_a_model_folders_tokenizer_and_template() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let model = king_model(tmp.path());
    let config = tmp.path().join("small.toml");
    std::fs::write(
        &config,
        SMALL.replace("heldout_share = 0.15", "heldout_share = 0.0"),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = train(
        &lake,
        &out,
        config.to_str().unwrap(),
        &["--model", model.to_str().unwrap(), "--stop-after", "2"],
    );
    let text = stdout(&o);
    assert!(
        text.contains("tokenizer and template: the model folder"),
        "{text}"
    );
    assert!(text.contains("trained 2 steps"), "{text}");
}

#[test]
fn train_on_a_mix_resumes_and_a_sweep_ranks_the_planted_mix_first() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    // Enough mini-coder runs that every candidate below fills its budget.
    synth_corpus(&corpus, 9, (12, 20, 1200, 2), None);
    let lake = tmp.path().join("lake");
    ingest_corpus(&lake, &corpus);
    for step in ["credit", "select", "mix"] {
        ok(run(&lake, &[step]));
    }
    let config = tmp.path().join("small.toml");
    std::fs::write(&config, SMALL).unwrap();
    let out = tmp.path().join("run");
    let cfg = config.to_str().unwrap();
    let o = train(&lake, &out, cfg, &["--stop-after", "10"]);
    assert!(stdout(&o).contains("trained 10 steps"), "{}", stdout(&o));
    assert!(
        !out.join("model").exists(),
        "a stopped run has no final model yet"
    );
    let o = train(&lake, &out, cfg, &["--resume"]);
    assert!(stdout(&o).contains("resumed at 10"), "{}", stdout(&o));
    let report = json(&out.join("report.json"));
    assert_eq!(report["steps"], 30);
    assert_eq!(
        report["progress"]["train_loss"].as_array().unwrap().len(),
        30
    );
    assert!(report["lake"]["lake_commit"].as_u64().is_some());
    assert!(report["lake"]["tables"]["sft_mix"].as_u64().is_some());
    assert!(
        report["heldout_loss"].as_object().unwrap().len() >= 2,
        "{}",
        report["heldout_loss"]
    );
    assert!(report["tokens_per_second"].as_f64().unwrap() > 0.0);
    let losses: Vec<f64> = report["progress"]["train_loss"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_f64().unwrap())
        .collect();
    assert!(losses[29] < losses[0], "{losses:?}");
    assert!(out.join("loss.png").exists() && out.join("model/config.json").exists());

    // The same run straight through lands on the same curve.
    let straight = tmp.path().join("straight");
    train(&lake, &straight, cfg, &[]);
    assert_eq!(
        json(&straight.join("report.json"))["progress"]["train_loss"],
        report["progress"]["train_loss"]
    );

    // Held-out credit rows are the target: the candidate that trains on credit
    // rows must beat the two that leave their distribution out, each trained
    // on the same trainable tokens.
    let sweep = tmp.path().join("sweep");
    let o = ok(run(
        &lake,
        &[
            "mix",
            "sweep",
            "--grid",
            "finish_mini=1;credit=1,finish_mini=1;escape_mini=1",
            "--seeds",
            "1,2",
            "--budget",
            "1500",
            "--train-config",
            cfg,
            "--out",
            sweep.to_str().unwrap(),
        ],
    ));
    let text = stdout(&o);
    assert!(
        text.contains("beyond noise") && text.contains("[mix]"),
        "{text}"
    );
    let s = json(&sweep.join("sweep.json"));
    let ranking = s["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), 3);
    assert_eq!(
        ranking[0]["candidate"]["name"], "credit=1,finish_mini=1",
        "{ranking:?}"
    );
    assert!(s["dev_windows"].as_u64().unwrap() > 0 && s["test_windows"].as_u64().unwrap() > 0);
    for r in ranking {
        assert_eq!(r["losses"].as_array().unwrap().len(), 2);
        assert_eq!(r["test_losses"].as_array().unwrap().len(), 2);
        assert!(r["spread"].as_f64().unwrap() >= 0.0);
        // Equal labelled budgets: each reaches 1500 trainable tokens by less
        // than a row per mix, whatever context came with them.
        let trainable = r["trainable_tokens"].as_u64().unwrap();
        assert!((1500..2000).contains(&trainable), "{r}");
        assert_eq!(r["short"], false, "{r}");
        assert!(r["context_tokens"].as_u64().unwrap() > trainable, "{r}");
    }
    assert!(sweep.join("sweep.png").exists());

    // The winner's [mix] block composes its mix: its token shares, half and half.
    let winner = sweep.join("winner.toml");
    assert!(std::fs::read_to_string(&winner)
        .unwrap()
        .contains("unit = \"tokens\""));
    let o = ok(run(
        &lake,
        &[
            "mix",
            "--config",
            winner.to_str().unwrap(),
            "--format",
            "json",
        ],
    ));
    let mix: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let shares: Vec<(String, f64)> = mix["mixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["mix"].as_str().unwrap().to_string(),
                m["share_tokens"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shares.len(), 2, "{shares:?}");
    for (m, share) in &shares {
        assert!((share - 0.5).abs() < 0.05, "{m}: {share}");
    }

    // Ranked and random selection side by side: each candidate twice, and
    // the winner's block composes whichever won (over every product row again).
    ok(run(&lake, &["mix"]));
    let both = tmp.path().join("both");
    ok(run(
        &lake,
        &[
            "mix",
            "sweep",
            "--grid",
            "credit=1;finish_mini=1",
            "--select",
            "random,ranked",
            "--gate",
            "none,target",
            "--quality",
            "credit=1,score=0.5",
            "--seeds",
            "1,2",
            "--budget",
            "1000",
            "--train-config",
            cfg,
            "--out",
            both.to_str().unwrap(),
        ],
    ));
    let s = json(&both.join("sweep.json"));
    let mut names: Vec<&str> = s["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["candidate"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    let mut want = Vec::new();
    for c in ["credit=1", "finish_mini=1"] {
        for sel in ["random", "ranked"] {
            for g in ["gated", "ungated"] {
                want.push(format!("{c} ({sel}, {g})"));
            }
        }
    }
    assert_eq!(names, want);
    // The gate is the target's own central range of lengths.
    let gate = s["gate_tokens"].as_array().unwrap();
    assert!(
        gate[0].as_u64().unwrap() <= gate[1].as_u64().unwrap(),
        "{gate:?}"
    );
    // Every candidate here fills its budget; the short ones are said to be.
    assert!(s["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["trainable_tokens"] != 0)
        .all(|r| r["short"] == false));
    let winner = both.join("winner.toml");
    let block = std::fs::read_to_string(&winner).unwrap();
    let ranked_won = s["ranking"][0]["candidate"]["select"] == "ranked";
    assert_eq!(block.contains("select = \"ranked\""), ranked_won, "{block}");
    let gated_won = s["ranking"][0]["candidate"]["gated"] == true;
    assert_eq!(
        block.contains("target-calibrated gate"),
        gated_won,
        "{block}"
    );
    ok(run(&lake, &["mix", "--config", winner.to_str().unwrap()]));

    // A budget the mixes cannot fill: each candidate trains on what there is, marked short.
    let short = tmp.path().join("short");
    let o = ok(run(
        &lake,
        &[
            "mix",
            "sweep",
            "--grid",
            "credit=1;finish_mini=1",
            "--seeds",
            "1",
            "--budget",
            "10000000",
            "--train-config",
            cfg,
            "--out",
            short.to_str().unwrap(),
        ],
    ));
    assert!(stdout(&o).contains("(short)"), "{}", stdout(&o));
    let s = json(&short.join("sweep.json"));
    for r in s["ranking"].as_array().unwrap() {
        assert_eq!(r["short"], true, "{r}");
        assert!(r["trainable_tokens"].as_u64().unwrap() < 10_000_000);
    }
}
