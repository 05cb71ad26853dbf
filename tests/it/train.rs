//! The training sink through the CLI: a run on a built mix with its report,
//! curve and model directory, resumed from a checkpoint; mix sweeps over
//! every setting; and a sweep that finds the mixture effect synth planted.

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
fn train_on_a_mix_resumes_and_a_sweep_compares_every_setting() {
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

    // Ranked and random selection side by side: each candidate twice, and
    // the winner's block composes whichever won.
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

/// The proxy the planted-mixture test trains: SMALL at a higher learning rate.
fn proxy() -> String {
    SMALL.replace("lr = 5e-3", "lr = 2e-2")
}

/// Loss mean and spread (max - min) over seeds.
fn mean_spread(losses: &Value) -> (f64, f64) {
    let l: Vec<f64> = losses
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let (lo, hi) = l
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    (l.iter().sum::<f64>() / l.len() as f64, hi - lo)
}

/// `synth --plant-mixture` plants a known answer; on one thread, where runs
/// are bit-identical, the sweep finds it with its default three seeds: the
/// planted best shares first on the dev half beyond the noise floor, ranked
/// selection ahead of random by more than the noise floor on the test half,
/// and the winner's [mix] block composes the winning mix.
#[test]
fn a_sweep_finds_the_planted_mixture() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    ok(bin()
        .arg("synth")
        .arg("--out")
        .arg(&corpus)
        .args([
            "--seed",
            "9",
            "--eval-runs",
            "60",
            "--samples-per-run",
            "20",
        ])
        .args(["--mini-coder", "6000", "--mswea", "0", "--plant-mixture"])
        .output()
        .unwrap());
    let truth = json(&corpus.join("truth.json"));
    assert_eq!(
        truth["params"]["plant"]["mixture"], true,
        "{}",
        truth["params"]
    );
    let lake = tmp.path().join("lake");
    for kind in ["albedo", "mini-coder"] {
        ok(run(
            &lake,
            &["ingest", kind, corpus.join(kind).to_str().unwrap()],
        ));
    }
    for step in ["credit", "select", "mix"] {
        ok(run(&lake, &[step]));
    }
    let config = tmp.path().join("proxy.toml");
    std::fs::write(&config, proxy()).unwrap();
    let sweep = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "mix",
            "sweep",
            "--budget",
            "16000",
            "--train-config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(run(&lake, &args));
        json(&out.join("sweep.json"))
    };

    // Either mini-coder mix alone leaves one dialect of the target unseen.
    let shares = tmp.path().join("shares");
    let s = sweep(
        &shares,
        &[
            "--grid",
            "escape_mini=1;finish_mini=1;escape_mini=0.5,finish_mini=0.5",
        ],
    );
    let ranking = s["ranking"].as_array().unwrap();
    let names: Vec<&str> = ranking
        .iter()
        .map(|r| r["candidate"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "escape_mini=0.5,finish_mini=0.5", "{ranking:?}");
    assert_eq!(ranking[0]["beyond_noise"], true, "{ranking:?}");
    let (best, best_spread) = mean_spread(&ranking[0]["losses"]);
    let (next, next_spread) = mean_spread(&ranking[1]["losses"]);
    assert!(next - best > best_spread.max(next_spread), "{ranking:?}");
    for r in ranking {
        assert_eq!(r["losses"].as_array().unwrap().len(), 3);
        // Equal labelled budgets: each reaches 16000 trainable tokens by less
        // than a row per mix, whatever context came with them.
        let trainable = r["trainable_tokens"].as_u64().unwrap();
        assert!((16000..17000).contains(&trainable), "{r}");
        assert_eq!(r["short"], false, "{r}");
        assert!(r["context_tokens"].as_u64().unwrap() > trainable, "{r}");
    }

    // The winner's [mix] block composes its mix: half and half in tokens.
    let winner = shares.join("winner.toml");
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
    let composed: Vec<(String, f64)> = mix["mixes"]
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
    assert_eq!(composed.len(), 2, "{composed:?}");
    for (m, share) in &composed {
        assert!((share - 0.5).abs() < 0.05, "{m}: {share}");
    }

    // Within escape_duel the judge's score says which rows help: ranked
    // beats random on the test half by more than either's spread there.
    ok(run(&lake, &["mix"]));
    let select = tmp.path().join("select");
    let s = sweep(
        &select,
        &[
            "--grid",
            "escape_duel=1",
            "--select",
            "random,ranked",
            "--quality",
            "score=1",
        ],
    );
    let test_of = |name: &str| {
        let r = s["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["candidate"]["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {}", s["ranking"]));
        mean_spread(&r["test_losses"])
    };
    let (ranked, ranked_spread) = test_of("escape_duel=1 (ranked)");
    let (random, random_spread) = test_of("escape_duel=1 (random)");
    assert!(
        random - ranked > ranked_spread.max(random_spread),
        "ranked {ranked} +/- {ranked_spread}, random {random} +/- {random_spread}"
    );
}
