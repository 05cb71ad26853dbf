//! `[mix] unit = "tokens"`: shares as quotas of trainable tokens (the train
//! turns' tokens and their end, as `train` labels them), counted with the
//! tokenizer `--model` names and recorded in the step's parameters.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// A lake with the products of a small synthetic corpus.
fn products_lake(tmp: &Path) -> std::path::PathBuf {
    let corpus = tmp.join("corpus");
    synth_corpus(&corpus, 4, (6, 40, 400, 0), None);
    let lake = tmp.join("lake");
    for kind in ["albedo", "mini-coder"] {
        ok(run(
            &lake,
            &["ingest", kind, corpus.join(kind).to_str().unwrap()],
        ));
    }
    ok(run(&lake, &["credit"]));
    ok(run(&lake, &["select"]));
    lake
}

const SHARES: [(&str, f64); 4] = [
    ("credit", 0.4),
    ("escape_duel", 0.3),
    ("escape_mini", 0.1),
    ("finish_mini", 0.2),
];

/// A file holding only `[mix]`, as `mix sweep` writes its winner.
fn mix_block(unit: &str) -> String {
    let shares: String = SHARES.iter().map(|(m, s)| format!("{m} = {s}\n")).collect();
    format!("[mix]\nmode = \"shares\"\nunit = \"{unit}\"\nseed = 3\n\n[mix.shares]\n{shares}")
}

#[test]
fn token_quotas_give_each_mix_its_share_of_trainable_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = products_lake(tmp.path());
    let cfg = tmp.path().join("winner.toml");
    std::fs::write(&cfg, mix_block("tokens")).unwrap();
    let o = ok(run(
        &lake,
        &["mix", "--config", cfg.to_str().unwrap(), "--format", "json"],
    ));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["unit"], "tokens");
    let mixes = report["mixes"].as_array().unwrap();
    let tokens: BTreeMap<&str, f64> = mixes
        .iter()
        .map(|m| {
            (
                m["mix"].as_str().unwrap(),
                m["train_tokens"].as_f64().unwrap(),
            )
        })
        .collect();
    let total: f64 = tokens.values().sum();
    // The largest mixture every share can fill, in trainable tokens; each
    // mix keeps rows until they reach its quota (the row that reaches it
    // kept), or all it has.
    let available = |m: &str| report["available"][m].as_f64().unwrap();
    let n = SHARES
        .iter()
        .map(|(m, s)| available(m) / s)
        .fold(f64::INFINITY, f64::min)
        .floor();
    for (mix, share) in SHARES {
        let (got, take) = (tokens[mix], (n * share).round());
        assert!(
            got >= take.min(available(mix)),
            "{mix}: kept {got} trainable tokens of a quota of {take}"
        );
        assert!((got / total - share).abs() < 0.1, "{mix}: {got} of {total}");
    }
    // Each mix keeps its rows in seeded-draw order (seed 3): a prefix of them.
    for (mix, table) in [
        ("credit", "sft_credit"),
        ("escape_duel", "escape_duel"),
        ("escape_mini", "escape_mini"),
        ("finish_mini", "finish_mini"),
    ] {
        let kept = sql(
            &lake,
            &format!("SELECT row_id FROM sft_mix WHERE mix = '{mix}' ORDER BY row_id"),
        );
        let prefix = sql(
            &lake,
            &format!(
                "SELECT row_id FROM (SELECT row_id FROM {table} ORDER BY md5('3' || row_id), row_id LIMIT {}) ORDER BY row_id",
                kept.len()
            ),
        );
        assert_eq!(kept, prefix, "{mix}");
    }
    // The counts are the trainable tokens a trainer sees: validate's label
    // spans (message by message) and one end token per train turn, per mix.
    let o = ok(run(
        &lake,
        &["validate", "--mode", "segments", "--format", "json"],
    ));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let lengths = v["report"]["lengths"].as_array().unwrap();
    assert_eq!(lengths.len(), 4, "{v}");
    for m in lengths {
        let mix = m["mix"].as_str().unwrap();
        let turns = m["train_turns"].as_f64().unwrap();
        assert_eq!(
            tokens[mix],
            m["trainable_tokens"].as_f64().unwrap() + turns,
            "{mix}: {m}"
        );
    }
    // The same block by rows composes another mix.
    let rows_cfg = tmp.path().join("rows.toml");
    std::fs::write(&rows_cfg, mix_block("rows")).unwrap();
    let o = ok(run(
        &lake,
        &[
            "mix",
            "--config",
            rows_cfg.to_str().unwrap(),
            "--format",
            "json",
        ],
    ));
    let by_rows: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(by_rows["unit"], "rows");
    assert!(by_rows["mixes"][0].get("train_tokens").is_none());
    assert_ne!(
        sql(
            &lake,
            "SELECT mix, count(*) FROM sft_mix GROUP BY 1 ORDER BY 1"
        ),
        mixes
            .iter()
            .map(|m| vec![
                m["mix"].as_str().unwrap().to_string(),
                m["rows"].to_string()
            ])
            .collect::<Vec<_>>(),
        "row quotas compose another mix than token quotas"
    );
}

/// `select = "ranked"`: a mix takes its quota best first by quality (here
/// the credit its train turns earned, plus half its side's judge score),
/// ties in the seeded draw.
#[test]
fn a_ranked_mix_keeps_its_best_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = products_lake(tmp.path());
    let cfg = tmp.path().join("ranked.toml");
    std::fs::write(
        &cfg,
        mix_block("rows").replace(
            "seed = 3\n",
            "seed = 3\nselect = \"ranked\"\n\n[mix.quality]\ncredit = 1.0\nscore = 0.5\n",
        ),
    )
    .unwrap();
    ok(run(&lake, &["mix", "--config", cfg.to_str().unwrap()]));
    let quality = "SELECT p.row_id, coalesce(sum(c.credit), 0) + 0.5 * coalesce(max(p.score), 0) AS q \
                   FROM sft_credit p LEFT JOIN turn_credit c ON c.traj_id = p.traj_id AND array_has(p.train_turns, c.t) \
                   GROUP BY p.row_id";
    let split = sql(
        &lake,
        &format!(
            "SELECT (SELECT min(q) FROM ({quality}) x WHERE row_id IN (SELECT row_id FROM sft_mix)) AS a, \
                    (SELECT max(q) FROM ({quality}) x WHERE row_id NOT IN (SELECT row_id FROM sft_mix)) AS b, \
                    (SELECT count(*) FROM sft_mix WHERE mix = 'credit') AS c, (SELECT count(*) FROM sft_credit) AS d"
        ),
    );
    let (kept_min, dropped_max): (f64, f64) =
        (split[0][0].parse().unwrap(), split[0][1].parse().unwrap());
    let (kept, all): (u64, u64) = (split[0][2].parse().unwrap(), split[0][3].parse().unwrap());
    assert!(
        kept > 0 && kept < all,
        "the credit mix is not subsampled: {split:?}"
    );
    assert!(
        kept_min >= dropped_max,
        "a dropped row is better than a kept one: {split:?}"
    );
    // At random, the same quota keeps some worse rows (the contrast the
    // ranked selection makes).
    let random = tmp.path().join("random.toml");
    std::fs::write(&random, mix_block("rows")).unwrap();
    ok(run(&lake, &["mix", "--config", random.to_str().unwrap()]));
    let again = sql(
        &lake,
        &format!(
            "SELECT (SELECT min(q) FROM ({quality}) x WHERE row_id IN (SELECT row_id FROM sft_mix)) AS a, \
                    (SELECT max(q) FROM ({quality}) x WHERE row_id NOT IN (SELECT row_id FROM sft_mix)) AS b"
        ),
    );
    let (kept_min, dropped_max): (f64, f64) =
        (again[0][0].parse().unwrap(), again[0][1].parse().unwrap());
    assert!(kept_min < dropped_max, "{again:?}");
}
