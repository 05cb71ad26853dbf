//! `export sft --for`: the same rows shaped for each trainer. TRL gets one
//! prompt/completion pair per train turn (the prompt is exactly the
//! messages before it); axolotl gets the rows with the config that loads
//! them beside the file; `rebuild` reproduces every shape byte for byte.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

fn export(lake: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec!["export", "sft", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(run(lake, &args));
}

/// A message without its train flag, and without the fields Parquet writes as null.
fn plain(m: &Value) -> Value {
    let mut m = m.clone();
    let map = m.as_object_mut().unwrap();
    map.remove("train");
    map.retain(|_, v| !v.is_null());
    m
}

fn rebuilt(manifest: &Path) -> String {
    stdout(&ok(bin().arg("rebuild").arg(manifest).output().unwrap()))
}

#[test]
fn trl_gets_a_pair_per_train_turn_and_axolotl_its_config() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let rows_at = tmp.path().join("rows.jsonl");
    export(&lake, &rows_at, &[]);
    let rows = json_lines(&rows_at);

    // TRL: one pair per train turn, in row order; the prompt is the row's
    // messages before the turn, the completion the turn.
    let mut want = Vec::new();
    for row in &rows {
        let messages = row["messages"].as_array().unwrap();
        for (i, m) in messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m["train"] == true)
        {
            let prompt: Vec<Value> = messages[..i].iter().map(plain).collect();
            want.push((row["row_id"].clone(), prompt, vec![plain(m)]));
        }
    }
    assert!(
        want.len() > rows.len(),
        "the fixture mix has rows with several train turns"
    );
    for format in ["jsonl", "parquet"] {
        let out = tmp.path().join(format!("trl.{format}"));
        export(&lake, &out, &["--for", "trl", "--format", format]);
        let pairs = match format {
            "jsonl" => json_lines(&out),
            _ => parquet_rows(&out),
        };
        assert_eq!(pairs.len(), want.len(), "{format}");
        for (pair, (row_id, prompt, completion)) in pairs.iter().zip(&want) {
            assert_eq!(&pair["row_id"], row_id, "{format}");
            let got = |k: &str| {
                pair[k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(plain)
                    .collect::<Vec<_>>()
            };
            assert_eq!(&got("prompt"), prompt, "{format} {row_id}");
            assert_eq!(&got("completion"), completion, "{format} {row_id}");
            assert!(pair["t"].as_i64().is_some(), "{format}");
        }
        let manifest = tmp.path().join(format!("trl.{format}.manifest.json"));
        assert!(rebuilt(&manifest).contains("rebuilt 1 file(s)"));
    }

    // axolotl: the rows as they are, and the config that loads them.
    let out = tmp.path().join("mix.parquet");
    export(&lake, &out, &["--for", "axolotl", "--format", "parquet"]);
    let config = std::fs::read_to_string(tmp.path().join("mix.parquet.axolotl.yml")).unwrap();
    assert!(
        config.contains("  - path: mix.parquet\n    ds_type: parquet\n"),
        "{config}"
    );
    assert!(config.contains("message_field_training: train"), "{config}");
    assert_eq!(parquet_rows(&out).len(), rows.len());
    let manifest = tmp.path().join("mix.parquet.manifest.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(m["export"]["for"], "axolotl");
    assert_eq!(m["files"].as_array().unwrap().len(), 2);
    // Rebuilt, both files match the manifest.
    assert!(rebuilt(&manifest).contains("rebuilt 2 file(s)"));
    let keep = tmp.path().join("rebuilt");
    let o = bin()
        .arg("rebuild")
        .arg(&manifest)
        .arg("--out")
        .arg(&keep)
        .output()
        .unwrap();
    ok(o);
    assert_eq!(
        std::fs::read_to_string(keep.join("mix.parquet.axolotl.yml")).unwrap(),
        config
    );
}

/// `python/trl_prepare.py PAIRS ARGS...` with the project venv: TRL's own
/// data preparation of the pairs, each pair's completion mask checked.
fn trl_prepares(pairs: &Path, args: &[&std::ffi::OsStr]) -> String {
    let mut all = vec![pairs.as_os_str()];
    all.extend_from_slice(args);
    venv_python("trl_prepare.py", &all, pairs.parent().unwrap())
}

#[test]
fn trl_prepares_the_pairs_with_chatml_and_the_kings_template() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let pairs = tmp.path().join("pairs.jsonl");
    export(&lake, &pairs, &["--for", "trl"]);
    let n = json_lines(&pairs).len();
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tokenizer.json");
    // ChatML: every completion trained exactly.
    let out = trl_prepares(&pairs, &["chatml".as_ref(), tokenizer.as_os_str()]);
    assert!(
        out.contains(&format!(
            "ok: {n} pairs, each training its completion; 0 lose"
        )),
        "{out}"
    );
    // The king's template: TRL's prompt/completion split merges the
    // generation prompt's last newline with the completion's first.
    let model = king_model(tmp.path());
    let out = trl_prepares(&pairs, &["model".as_ref(), model.as_os_str()]);
    assert!(out.contains(&format!("ok: {n} pairs")), "{out}");
}

#[test]
fn kto_labels_every_train_turn_true_and_the_other_judged_turns_by_credit() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = mixed_lake(tmp.path());
    let trl = tmp.path().join("trl.jsonl");
    export(&lake, &trl, &["--for", "trl"]);
    let pairs = json_lines(&trl);
    for format in ["jsonl", "parquet"] {
        let out = tmp.path().join(format!("kto.{format}"));
        export(&lake, &out, &["--for", "kto", "--format", format]);
        let rows = match format {
            "jsonl" => json_lines(&out),
            _ => parquet_rows(&out),
        };
        let strip = |r: &Value| {
            let msgs = |k: &str| {
                r[k].as_array()
                    .unwrap()
                    .iter()
                    .map(plain)
                    .collect::<Vec<_>>()
            };
            (
                r["row_id"].clone(),
                r["t"].clone(),
                msgs("prompt"),
                msgs("completion"),
            )
        };
        // The positives that are train turns are exactly TRL's pairs.
        let train: std::collections::BTreeSet<(String, i64)> = pairs
            .iter()
            .map(|p| {
                (
                    p["row_id"].as_str().unwrap().to_string(),
                    p["t"].as_i64().unwrap(),
                )
            })
            .collect();
        let key = |r: &Value| {
            (
                r["row_id"].as_str().unwrap().to_string(),
                r["t"].as_i64().unwrap(),
            )
        };
        let of_train: Vec<_> = rows
            .iter()
            .filter(|r| train.contains(&key(r)))
            .map(strip)
            .collect();
        assert_eq!(
            of_train,
            pairs.iter().map(strip).collect::<Vec<_>>(),
            "{format}"
        );
        assert!(rows
            .iter()
            .filter(|r| train.contains(&key(r)))
            .all(|r| r["label"] == true));
        // The judge's other turns come labelled, and some earned nothing.
        let others: Vec<&Value> = rows.iter().filter(|r| !train.contains(&key(r))).collect();
        assert!(
            others.iter().any(|r| r["label"] == false),
            "{format}: no negative"
        );
        for r in &others {
            assert_eq!(r["completion"][0]["role"], "assistant", "{format}");
        }
        let manifest = tmp.path().join(format!("kto.{format}.manifest.json"));
        assert!(rebuilt(&manifest).contains("rebuilt 1 file(s)"));
    }
    // TRL's own KTO data steps take the rows as they are, under ChatML and
    // under the king's template.
    let out = tmp.path().join("kto.jsonl");
    let n = json_lines(&out).len();
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tokenizer.json");
    let model = king_model(tmp.path());
    for (mode, source) in [("chatml", tokenizer.as_path()), ("model", model.as_path())] {
        let text = venv_python(
            "trl_kto_prepare.py",
            &[out.as_os_str(), mode.as_ref(), source.as_os_str()],
            tmp.path(),
        );
        assert!(text.contains(&format!("ok: {n} rows")), "{mode}: {text}");
    }
}

/// In a run no judge saw, the KTO label of a turn that is not a train turn
/// is the local scorer's (verl's `r_turn`), and only while the scorer
/// labelled that turn as it stands.
#[cfg(feature = "scorer")]
#[test]
fn kto_labels_the_turns_of_unjudged_runs_by_the_scorer() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 7, (6, 12, 30, 0), None);
    let lake = tmp.path().join("lake");
    for kind in ["albedo", "mini-coder"] {
        ok(run(
            &lake,
            &["ingest", kind, corpus.join(kind).to_str().unwrap()],
        ));
    }
    fit_and_label(&lake);
    ok(run(&lake, &["select"]));
    ok(run(&lake, &["mix"]));
    let out = tmp.path().join("kto.jsonl");
    export(&lake, &out, &["--for", "kto"]);
    let rows = json_lines(&out);
    let labels: std::collections::BTreeMap<(String, i64), bool> =
        sql(&lake, "SELECT traj_id, t, earns_credit FROM turn_labels")
            .into_iter()
            .map(|r| ((r[0].clone(), r[1].parse().unwrap()), r[2] == "true"))
            .collect();
    let trajs: std::collections::BTreeMap<String, String> =
        sql(&lake, "SELECT row_id, traj_id FROM sft_mix")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
    let traj_of = |r: &Value| trajs[r["row_id"].as_str().unwrap()].clone();
    let by_scorer: Vec<&Value> = rows
        .iter()
        .filter(|r| r["label_source"] == "scorer")
        .collect();
    assert!(
        !by_scorer.is_empty(),
        "no scorer-labelled turn among {} rows",
        rows.len()
    );
    for r in &by_scorer {
        let key = (traj_of(r), r["t"].as_i64().unwrap());
        assert_eq!(
            Some(&r["label"].as_bool().unwrap()),
            labels.get(&key),
            "{key:?}"
        );
    }
    // No judged run's turn is labelled by the scorer, nor the other way round.
    assert!(rows
        .iter()
        .filter(|r| r["label_source"] == "judge")
        .all(|r| !labels.contains_key(&(traj_of(r), r["t"].as_i64().unwrap()))));
    for r in &rows {
        assert!(["train", "judge", "scorer"].contains(&r["label_source"].as_str().unwrap()));
    }
}
