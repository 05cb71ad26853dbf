//! `turnlake credit` and `turnlake stats` end to end: the fixtures, the real
//! samples against a hand count, and a synthetic corpus against its planted truth.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn ingest_albedo(lake: &Path, dir: &Path, verify: bool) {
    let mut args = vec!["ingest", "albedo"];
    if !verify {
        args.push("--no-verify");
    }
    args.push(dir.to_str().unwrap());
    let o = run(lake, &args);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn credit(lake: &Path, extra: &[&str]) {
    let mut args = vec!["credit"];
    args.extend_from_slice(extra);
    let o = run(lake, &args);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn fixture_credit_blame_and_invalid_citations() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let o = run(&lake, &["stats"]);
    assert!(!o.status.success());
    ingest_albedo(&lake, &fixtures().join("albedo"), true);
    let o = run(&lake, &["stats"]);
    assert!(
        stderr(&o).contains("run `turnlake credit` first"),
        "{}",
        stderr(&o)
    );
    credit(&lake, &[]);

    let rows = sql(&lake, "SELECT side, sample_id LIKE '%:10:1', candidate_n, credit, blame, array_to_string(tags, ',') FROM turn_credit JOIN trajectories USING (traj_id) ORDER BY 2 DESC, 1, 3");
    let want = [
        ["challenger", "true", "1", "0.0", "1.0", ""],
        ["challenger", "true", "2", "0.0", "2.0", ""],
        ["challenger", "true", "3", "0.0", "2.0", ""],
        [
            "previous_king",
            "true",
            "1",
            "2.0",
            "0.0",
            "explore,verification",
        ],
        ["previous_king", "true", "2", "1.0", "0.0", "verification"],
        ["previous_king", "true", "3", "1.0", "0.0", "explore"],
        [
            "challenger",
            "false",
            "1",
            "2.0",
            "0.0",
            "explore,verification",
        ],
        [
            "challenger",
            "false",
            "2",
            "2.0",
            "0.0",
            "explore,verification",
        ],
        [
            "challenger",
            "false",
            "3",
            "2.0",
            "0.0",
            "explore,verification",
        ],
        ["previous_king", "false", "1", "0.0", "0.0", ""],
        ["previous_king", "false", "2", "0.0", "0.0", ""],
        ["previous_king", "false", "3", "0.0", "0.0", ""],
    ];
    assert_eq!(
        rows,
        want.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    // Each citation carries its question's category, which the mix report counts.
    let categories = sql(
        &lake,
        "SELECT count(c.category), count(*) FILTER (WHERE c.category IS DISTINCT FROM q.category) \
         FROM credit_citations c JOIN questions q USING (eval_run_id, sample_id, question_id)",
    );
    assert_ne!(
        categories[0][0], "0",
        "the fixture's questions have categories"
    );
    assert_eq!(
        categories[0][1], "0",
        "every citation has its question's category"
    );
    let invalid = sql(
        &lake,
        "SELECT candidate_n, reason FROM credit_citations WHERE NOT valid",
    );
    assert_eq!(
        invalid,
        vec![vec![
            "9",
            "cites CANDIDATE OUTPUT 9 but the side has 3 scored outputs"
        ]]
    );
    let sides = sql(&lake, "SELECT side, yes_answers, yes_uncited, invalid_citations, credit FROM side_credit WHERE sample_id LIKE '%:10:1' ORDER BY side");
    assert_eq!(
        sides,
        vec![
            vec!["challenger", "1", "1", "0", "0.0"],
            vec!["previous_king", "2", "0", "0", "4.0"]
        ]
    );

    // The acceptance query.
    let o = run(&lake, &["sql", "SELECT cmd_kind, avg(credit) FROM turn_credit JOIN turns USING (traj_id, t) GROUP BY 1"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Another config: split multi-citations, explore weighs 3.
    let cfg = tmp.path().join("credit.toml");
    std::fs::write(&cfg, "split_multi = true\n[tag_weights]\nexplore = 3.0\n").unwrap();
    credit(&lake, &["--config", cfg.to_str().unwrap()]);
    let king = sql(&lake, "SELECT credit FROM turn_credit JOIN trajectories USING (traj_id) WHERE side = 'previous_king' AND sample_id LIKE '%:10:1' ORDER BY t");
    assert_eq!(king, vec![vec!["2.0"], vec!["0.5"], vec!["1.5"]]);
}

#[test]
fn real_sample_credit_matches_a_hand_count() {
    let Some(samples) = shared_samples("real_sample_credit_matches_a_hand_count") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_albedo(&lake, &samples.join("albedo"), false);
    credit(&lake, &[]);
    // Challenger of open-swe-traces/data/train-00005.parquet:563:2, counted by reading its
    // yes-explanations: output 6 is cited by q_02 q_04 q_09 q_11 q_12 q_14, output 7 by
    // q_02 q_06 q_12 q_13 q_14 q_15, output 8 by q_19 q_22 q_23; nothing cites 1-5.
    let rows = sql(&lake, "SELECT candidate_n, t, credit, array_to_string(tags, ',') FROM turn_credit JOIN trajectories USING (traj_id) \
                           WHERE sample_id = 'open-swe-traces/data/train-00005.parquet:563:2' AND side = 'challenger' ORDER BY candidate_n");
    let credits: Vec<(String, String)> =
        rows.iter().map(|r| (r[0].clone(), r[2].clone())).collect();
    let want: Vec<(String, String)> = [
        ("1", "0.0"),
        ("2", "0.0"),
        ("3", "0.0"),
        ("4", "0.0"),
        ("5", "0.0"),
        ("6", "6.0"),
        ("7", "6.0"),
        ("8", "3.0"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(credits, want);
    assert_eq!(
        rows[5][1], "8",
        "two context turns come before CANDIDATE OUTPUT 1"
    );
    assert_eq!(rows[5][3], "explore,verification");
    assert_eq!(rows[7][3], "verification");
}

#[test]
fn stats_recover_the_planted_credit_on_a_synthetic_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let o = bin()
        .args([
            "synth",
            "--out",
            corpus.to_str().unwrap(),
            "--seed",
            "21",
            "--eval-runs",
            "8",
            "--samples-per-run",
            "60",
            "--mini-coder",
            "0",
            "--mswea",
            "0",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let truth: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("truth.json")).unwrap()).unwrap();
    let lake = tmp.path().join("lake");
    ingest_albedo(&lake, &corpus.join("albedo"), true);
    credit(&lake, &[]);
    let plots = tmp.path().join("plots");
    let o = run(
        &lake,
        &[
            "stats",
            "--format",
            "json",
            "--plots",
            plots.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for png in [
        "credit_by_kind.png",
        "credit_by_turn.png",
        "exposure_bias.png",
    ] {
        assert!(
            std::fs::read(plots.join(png))
                .unwrap()
                .starts_with(b"\x89PNG"),
            "{png}"
        );
    }

    let (realized, expected) = (&truth["realized"], &truth["expected"]);
    // By command kind: exactly what was planted in this corpus, and near what the parameters imply.
    let kinds = report["by_kind"].as_array().unwrap();
    assert_eq!(
        kinds.len(),
        realized["credit_by_kind"].as_object().unwrap().len()
    );
    for k in kinds {
        let name = k["cmd_kind"].as_str().unwrap();
        let (mean, pct) = (
            k["mean_credit"].as_f64().unwrap(),
            k["pct_earning"].as_f64().unwrap(),
        );
        let planted = &realized["credit_by_kind"][name];
        assert!(
            (mean - planted["mean_credit"].as_f64().unwrap()).abs() < 1e-9,
            "{name} mean {mean} vs planted {planted}"
        );
        assert!(
            (pct - planted["pct_earning"].as_f64().unwrap()).abs() < 1e-9,
            "{name} % {pct} vs planted {planted}"
        );
        let model = &expected["credit_by_kind"][name];
        let turns = k["turns"].as_f64().unwrap();
        // Tolerance: four standard errors of a mean of credits with spread ~2.
        let tol = 4.0 * 2.0 / turns.sqrt();
        assert!(
            (mean - model["mean_credit"].as_f64().unwrap()).abs() < tol.max(0.05),
            "{name} mean {mean} vs model {model} (tol {tol})"
        );
    }
    // By turn index.
    for t in report["by_turn"].as_array().unwrap() {
        let key = t["t"].as_i64().unwrap().to_string();
        let planted = &realized["credit_by_turn"][&key];
        assert!(
            (t["mean_credit"].as_f64().unwrap() - planted["mean_credit"].as_f64().unwrap()).abs()
                < 1e-9,
            "t={key}"
        );
        let turns = t["turns"].as_f64().unwrap();
        let tol = (4.0 * 2.0 / turns.sqrt()).max(0.05);
        let model = expected["credit_by_turn"][&key]["mean_credit"]
            .as_f64()
            .unwrap();
        assert!(
            (t["mean_credit"].as_f64().unwrap() - model).abs() < tol,
            "t={key}: {} vs {model}",
            t["mean_credit"]
        );
    }
    // Exposure bias.
    let e = &report["exposure"];
    for (measured, planted, tol) in [
        ("share_after_failure", "share_after_failure", 0.02),
        (
            "pct_earning_after_failure",
            "pct_earning_after_failure",
            4.0,
        ),
        ("pct_earning_baseline", "pct_earning_baseline", 2.0),
    ] {
        let m = e[measured].as_f64().unwrap();
        assert!(
            (m - realized[planted].as_f64().unwrap()).abs() < 1e-9,
            "{measured}: {m} vs planted {}",
            realized[planted]
        );
        assert!(
            (m - expected[planted].as_f64().unwrap()).abs() < tol,
            "{measured}: {m} vs model {}",
            expected[planted]
        );
    }
    assert!(
        e["pct_earning_after_failure"].as_f64().unwrap()
            < e["pct_earning_otherwise"].as_f64().unwrap()
    );

    // The other renderings carry the same figures.
    let o = run(&lake, &["stats", "--format", "markdown"]);
    assert!(
        stdout(&o).contains("## Credit by command kind"),
        "{}",
        stdout(&o)
    );
    let o = run(&lake, &["stats"]);
    assert!(stdout(&o).contains("Exposure bias"), "{}", stdout(&o));
}

#[test]
fn the_reproduction_table_shows_the_lake_beside_the_reference_and_the_planted_truth() {
    // A corpus planted far from the reference: `cat -n` rarely earns, failures are common.
    let tmp = tempfile::tempdir().unwrap();
    let params = tmp.path().join("params.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/synth.toml"))
            .unwrap();
    let changed = default
        .replace("\"cat -n\" = 1.25", "\"cat -n\" = 0.15")
        .replace("\"cat -n\" = 0.06", "\"cat -n\" = 0.60");
    assert_ne!(changed, default);
    std::fs::write(&params, changed).unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 5, (4, 50, 0, 0), Some(&params));
    let lake = tmp.path().join("lake");
    ingest_albedo(&lake, &corpus.join("albedo"), true);
    credit(&lake, &[]);
    let truth = corpus.join("truth.json");
    let o = ok(run(
        &lake,
        &[
            "stats",
            "--format",
            "json",
            "--truth",
            truth.to_str().unwrap(),
        ],
    ));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let figures = report["reproduction"]["figures"].as_array().unwrap();
    let figure = |key: &str| {
        figures
            .iter()
            .find(|f| f["key"] == key)
            .unwrap_or_else(|| panic!("no {key} in {figures:?}"))
    };
    // Every published figure has its reference; the lake's column is the planted value.
    let mut planted_seen = 0;
    for f in figures {
        assert!(f["reference"].is_number(), "{f}");
        if let Some(planted) = f["planted"].as_f64() {
            planted_seen += 1;
            let lake = f["lake"].as_f64().unwrap();
            assert!((lake - planted).abs() < 1e-9, "{f}");
            let diff = f["diff"].as_f64().unwrap();
            assert!(
                (diff - (lake - f["reference"].as_f64().unwrap())).abs() < 1e-9,
                "{f}"
            );
        }
    }
    assert!(planted_seen >= 10, "{planted_seen} planted figures");
    // ... and far from the reference where the corpus was planted away from it.
    let cat = figure("stats.cat_n.pct_earning");
    assert!(cat["lake"].as_f64().unwrap() < 25.0, "{cat}");
    assert!(cat["diff"].as_f64().unwrap() < -15.0, "{cat}");
    let failed = figure("stats.failed_own");
    assert!(failed["lake"].as_f64().unwrap() > 25.0, "{failed}");
    // The table rendering shows the same columns.
    let o = ok(run(&lake, &["stats", "--truth", truth.to_str().unwrap()]));
    let out = stdout(&o);
    for col in [
        "reference",
        "lake - reference",
        "planted",
        "`cat -n` % earning",
    ] {
        assert!(out.contains(col), "{col} in\n{out}");
    }
}

#[test]
fn a_step_sql_file_runs_on_its_own_with_its_config() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_albedo(&lake, &fixtures().join("albedo"), true);
    credit(&lake, &[]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("sql/credit.sql");
    let query = "SELECT count(*) AS n, sum(credit) AS c FROM turn_credit_v";
    let step = |config: &Path| {
        let o = ok(run(
            &lake,
            &[
                "sql",
                "-f",
                file.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
                query,
                "--format",
                "csv",
            ],
        ));
        stdout(&o).lines().nth(1).unwrap().to_string()
    };
    // With the step's own config, the views answer exactly what the step wrote.
    let table = sql(
        &lake,
        "SELECT count(*) AS n, sum(credit) AS c FROM turn_credit",
    );
    assert_eq!(step(&root.join("data/credit.toml")), table[0].join(","));
    // Another config changes the answer, and writes nothing.
    let split = tmp.path().join("split.toml");
    let default = std::fs::read_to_string(root.join("data/credit.toml")).unwrap();
    std::fs::write(
        &split,
        default.replace("split_multi = false", "split_multi = true"),
    )
    .unwrap();
    assert_ne!(step(&split), table[0].join(","));
    assert_eq!(
        sql(
            &lake,
            "SELECT count(*) AS n, sum(credit) AS c FROM turn_credit"
        ),
        table
    );
}
