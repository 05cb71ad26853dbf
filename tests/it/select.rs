//! `turnlake select`, `mix` and `export sft` on hand-made fixtures
//! (data/fixtures/select) and on a synthetic corpus.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn build_lake(lake: &Path) {
    let f = fixtures().join("select");
    ok(run(
        lake,
        &["ingest", "albedo", f.join("albedo").to_str().unwrap()],
    ));
    ok(run(
        lake,
        &[
            "ingest",
            "mini-coder",
            f.join("mini-coder").to_str().unwrap(),
        ],
    ));
    ok(run(lake, &["credit"]));
    ok(run(lake, &["select"]));
}

#[test]
fn product_rules_on_hand_made_cases() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    build_lake(&lake);

    // credit: s1 has two passing sides (the higher score wins); in s2 each side fails
    // exactly one gate (king: score 0.8; challenger: dup ratio 0.5); the unclosed <think>
    // of s1's challenger turn 3 is demoted, the row keeps turns 2 and 4.
    let credit = sql(
        &lake,
        "SELECT traj_id, array_to_string(train_turns, ','), n_demoted FROM sft_credit",
    );
    assert_eq!(credit.len(), 1, "{credit:?}");
    assert!(
        credit[0][0].ends_with("sel/s1:1:1/challenger"),
        "{credit:?}"
    );
    assert_eq!(credit[0][1..], ["2,4".to_string(), "1".to_string()]);

    // escape_duel: s3's king escapes at its first scored turn (after a failed context
    // observation) and after its failed pytest; s2's challenger escapes a repeated command.
    let esc = sql(&lake, "SELECT regexp_replace(traj_id, '.*/(sel/[^/]*/[a-z_]*)$', '\\1'), array_to_string(train_turns, ','), prior_failures, \
                          CAST(passed_credit_gates AS VARCHAR), upto_msg FROM escape_duel ORDER BY 1, 2");
    assert_eq!(
        esc,
        vec![
            vec!["sel/s2:2:0/challenger", "3", "0", "false", "6"],
            vec!["sel/s3:3:2/previous_king", "3", "1", "false", "6"],
            vec!["sel/s3:3:2/previous_king", "5", "1", "false", "10"],
        ]
    );
    // s3's challenger escape had two bash blocks: demoted, and its row dropped.
    let demoted = sql(&lake, "SELECT mix, t, reason, CAST(row_dropped AS VARCHAR) FROM gate_demotions ORDER BY mix, row_id");
    assert_eq!(
        demoted,
        vec![
            vec!["credit", "3", "unclosed <think>", "false"],
            vec!["escape_duel", "3", "not exactly one bash block", "true"],
        ]
    );

    // escape_mini (data/fixtures/select/mini-coder/boundaries.jsonl): a repeat run in the
    // two turns before, a different command at the turn, in turns 5-32. The escape at t=4
    // (select.jsonl's org__escape and boundaries' t4) and at t=33 are out of range; a
    // command that reappears after another is no run; in a run of three, the third
    // command stays in the run and the fourth escapes. One train turn per row, the row
    // ends at it.
    let mini = sql(
        &lake,
        "SELECT instance_id, array_to_string(train_turns, ','), upto_msg FROM escape_mini ORDER BY instance_id",
    );
    assert_eq!(
        mini,
        vec![
            vec!["org__esc.long.func_pm__n", "6", "12"],
            vec!["org__esc.t16.func_pm__o", "16", "32"],
            vec!["org__esc.t17.func_pm__p", "17", "34"],
            vec!["org__esc.t32.func_pm__k", "32", "64"],
            vec!["org__esc.t5.func_pm__j", "5", "10"],
        ]
    );

    // finish_mini: verified runs ending in a submit, one train turn each: the closing
    // submit when it lies in 17-32 (t=17, t=20 for org__many's two verified runs, which
    // keep one row, t=32); for a submit at t=33, the one non-repeating, non-failing
    // command turn in 17-32 (t=21). A run ending at 16, an unverified run and a run with
    // no submit give nothing.
    let fin = sql(
        &lake,
        "SELECT instance_id, array_to_string(train_turns, ','), upto_msg FROM finish_mini ORDER BY instance_id",
    );
    // org__fin.many submits at t=40 with every turn in 17-32 eligible: the seeded hash
    // picks one there, and the same seed picks the same one.
    let many: Vec<Vec<String>> = fin
        .iter()
        .filter(|r| r[0] == "org__fin.many.func_pm__q")
        .cloned()
        .collect();
    assert_eq!(many.len(), 1, "{fin:?}");
    let picked: i64 = many[0][1].parse().unwrap();
    assert!((17..=32).contains(&picked), "{picked}");
    assert_eq!(many[0][2], (2 * picked).to_string());
    let fin: Vec<Vec<String>> = fin
        .into_iter()
        .filter(|r| r[0] != "org__fin.many.func_pm__q")
        .collect();
    assert_eq!(
        fin,
        vec![
            vec!["org__fin.t17.func_pm__b", "17", "34"],
            vec!["org__fin.t32.func_pm__c", "32", "64"],
            vec!["org__fin.t33.func_pm__d", "21", "42"],
            vec!["org__many.aaa1111.func_pm__x", "20", "40"],
        ]
    );
    // The summary counts one candidate per trajectory and the submit turns among them.
    let o = ok(run(&lake, &["select"]));
    let out = stdout(&o);
    let figure = |label: &str| {
        out.lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label} in\n{out}"))
            .split(['|', '│'])
            .nth(2)
            .map(|c| c.trim().to_string())
            .unwrap()
    };
    assert_eq!(figure("finish_mini candidates (one per trajectory)"), "6");
    assert_eq!(figure("finish_mini candidates that are submit turns"), "4");
    // t16 is not past turn 16, t17 and t32 are: 2 of 5.
    assert_eq!(figure("escape_mini train turns past turn 16"), "40.0%");
    // escape_duel: two rows follow a failed observation, one a repeat run; consecutive
    // failures before them: 1, 1, 0.
    assert_eq!(
        figure("escape_duel rows following a failed observation"),
        "66.7%"
    );
    assert_eq!(figure("escape_duel rows following a repeat run"), "33.3%");
    assert_eq!(
        figure("escape_duel prior consecutive failures, mean"),
        "0.667"
    );
    assert_eq!(figure("escape_duel prior consecutive failures, max"), "1");
    // Recovery turns: credited right after a failed observation, counted by SQL here.
    let recovery = scalar(
        &lake,
        "SELECT count(*) FROM turn_credit c JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t \
         WHERE c.credit > 0 AND u.prev_failed",
    );
    assert_ne!(recovery, "0");
    assert_eq!(figure("recovery turns over all judged sides"), recovery);

    // A cap of one row keeps one finish_mini row, the same one for the same seed.
    let cfg = tmp.path().join("cap.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    std::fs::write(&cfg, default.replace("cap = 16000", "cap = 1")).unwrap();
    let mut kept = Vec::new();
    for _ in 0..2 {
        ok(run(&lake, &["select", "--config", cfg.to_str().unwrap()]));
        kept.push(sql(&lake, "SELECT row_id FROM finish_mini"));
    }
    assert_eq!(kept[0].len(), 1);
    assert_eq!(kept[0], kept[1]);
}

#[test]
fn mix_and_export_are_deterministic_and_byte_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    build_lake(&lake);
    let cfg = tmp.path().join("all.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    assert!(
        default.contains("mode = \"all\""),
        "the default mix keeps every row"
    );
    std::fs::write(&cfg, default.replace("mode = \"all\"", "mode = \"shares\"")).unwrap();
    // With target shares, the mix subsamples; by default it keeps every product row.
    ok(run(&lake, &["mix", "--config", cfg.to_str().unwrap()]));
    let products = "(SELECT count(*) FROM sft_credit) + (SELECT count(*) FROM escape_duel) + (SELECT count(*) FROM escape_mini) + (SELECT count(*) FROM finish_mini)";
    let total: i64 = scalar(&lake, &format!("SELECT {products}"))
        .parse()
        .unwrap();
    let shared: i64 = scalar(&lake, "SELECT count(*) FROM sft_mix")
        .parse()
        .unwrap();
    assert!(shared < total, "{shared} of {total}");
    let o = ok(run(&lake, &["mix"]));
    assert!(stdout(&o).contains("escape_duel"), "{}", stdout(&o));
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM sft_mix"),
        total.to_string()
    );

    let a = tmp.path().join("a.jsonl");
    let b = tmp.path().join("b.jsonl");
    ok(run(&lake, &["export", "sft", "--out", a.to_str().unwrap()]));
    ok(run(&lake, &["export", "sft", "--out", b.to_str().unwrap()]));
    let (ta, tb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(ta, tb, "two exports differ");
    let rows: Vec<Value> = String::from_utf8(ta)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len() as i64, total);
    // The escape at s3 king t3: seven messages, only the last trains, content byte-exact.
    let esc = rows
        .iter()
        .find(|r| {
            r["row_id"]
                .as_str()
                .unwrap()
                .ends_with("sel/s3:3:2/previous_king/3")
        })
        .unwrap();
    let msgs = esc["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 7);
    assert_eq!(msgs.iter().filter(|m| m["train"] == true).count(), 1);
    assert_eq!(msgs[6]["train"], true);
    assert_eq!(
        msgs[6]["content"],
        "THOUGHT: next step.\n\n```bash\ncat -n ok.py\n```"
    );
    assert_eq!(
        msgs[5]["content"],
        "<returncode>1</returncode>\n<output>\nok\n</output>"
    );
    let meta = &esc["train_meta"][0];
    assert_eq!(
        (
            meta["t"].as_i64(),
            meta["cmd_kind"].as_str(),
            meta["is_recovery"].as_bool()
        ),
        (Some(3), Some("cat -n"), Some(true))
    );
    assert_eq!(meta["weight"].as_f64(), Some(1.0));
    assert_eq!(meta["tags"], serde_json::json!(["explore"]));
    assert_eq!(esc["mix"], "escape_duel");
    // A recovery turn earned credit right after a failed observation: finish_mini's t=21
    // follows a failed observation but earned nothing (mini-coder has no judge).
    let fin = rows
        .iter()
        .find(|r| r["row_id"].as_str().unwrap().contains("org__fin.t33"))
        .unwrap();
    let meta = &fin["train_meta"][0];
    assert_eq!(
        (meta["t"].as_i64(), meta["is_recovery"].as_bool()),
        (Some(21), Some(false))
    );
    assert_eq!(fin["messages"].as_array().unwrap().len(), 43);
    // Every train flag is on an assistant message and matches train_meta.
    for r in &rows {
        let flagged = r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["train"] == true)
            .count();
        assert_eq!(
            flagged,
            r["train_meta"].as_array().unwrap().len(),
            "{}",
            r["row_id"]
        );
        assert!(r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["train"] == false || m["role"] == "assistant"));
    }
    let p = tmp.path().join("mix.parquet");
    ok(run(
        &lake,
        &[
            "export",
            "sft",
            "--out",
            p.to_str().unwrap(),
            "--format",
            "parquet",
        ],
    ));
    assert!(std::fs::read(&p).unwrap().starts_with(b"PAR1"));
}

/// Whether every file of `table` is in `row_id` order, by
/// `engine::register_sorted`, which reads them (in `ctx`, over `lake`).
async fn in_row_id_order(ctx: &datafusion::prelude::SessionContext, table: &str) -> bool {
    turnlake::engine::register_sorted(ctx, table, &[table], "row_id")
        .await
        .unwrap()
}

/// The physical plan of `sql` in `ctx`, as text.
async fn plan_of(ctx: &datafusion::prelude::SessionContext, sql: &str) -> String {
    let plan = turnlake::engine::run_sql(ctx, &format!("EXPLAIN {sql}"), "plan")
        .await
        .unwrap();
    arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string()
}

#[test]
fn mix_reads_the_products_in_row_id_order_and_sorts_them_when_they_are_not() {
    use turnlake::engine;
    use turnlake::pipeline::{mix, select, sqlstep};
    let tmp = tempfile::tempdir().unwrap();
    let lake_dir = tmp.path().join("lake");
    build_lake(&lake_dir);
    ok(run(&lake_dir, &["mix"]));
    let mix_rows = sql(&lake_dir, "SELECT * FROM sft_mix ORDER BY row_id");
    assert!(mix_rows.len() > 3, "{mix_rows:?}");
    // The step's SQL file runs on its own too, its candidates registered
    // as the step registers them.
    let mix_sql = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/mix.sql");
    let o = ok(run(
        &lake_dir,
        &[
            "sql",
            "-f",
            mix_sql.to_str().unwrap(),
            "SELECT count(*) AS n FROM mix_rows",
            "--format",
            "csv",
        ],
    ));
    assert_eq!(stdout(&o), format!("n\n{}\n", mix_rows.len()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lake = turnlake::lake::Lake::open(lake_dir.to_str().unwrap()).unwrap();
    let config = select::SelectConfig::default_config();
    rt.block_on(async {
        // select wrote each product in row_id order, and the mix reads
        // their files one after another in that order: no sort, no merge.
        let ctx = engine::step_session(&lake).await.unwrap();
        for (_, table) in select::PRODUCTS {
            assert!(in_row_id_order(&ctx, table).await, "{table}");
        }
        assert!(in_row_id_order(&ctx, "sft_mix").await);
        mix::register_candidates(&ctx, &config.mix).await.unwrap();
        mix::register_quota(&ctx, &config.mix, None).await.unwrap();
        sqlstep::run_script(&ctx, mix::SQL_FILE, mix::SQL)
            .await
            .unwrap();
        let plan = plan_of(&ctx, "SELECT * FROM mix_rows ORDER BY row_id").await;
        assert!(!plan.contains("SortPreservingMergeExec"), "{plan}");
        assert!(!plan.contains("SortExec"), "{plan}");
        assert!(!plan.contains("RepartitionExec"), "{plan}");
        assert_eq!(
            engine::run_sql(&ctx, "SELECT count(*) FROM mix_candidates", "count")
                .await
                .unwrap()[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap()
                .value(0) as usize,
            sql(&lake_dir, "SELECT * FROM sft_mix").len(),
            "mode all: every candidate is in the mix"
        );
        // Tables whose ranges overlap (sft_mix holds escape_duel's rows)
        // are merged, file by file.
        assert!(engine::register_sorted(
            &ctx,
            "overlapping",
            &["sft_mix", "escape_duel"],
            "row_id"
        )
        .await
        .unwrap());
        let plan = plan_of(&ctx, "SELECT * FROM overlapping ORDER BY row_id").await;
        assert!(plan.contains("SortPreservingMergeExec"), "{plan}");
        assert!(!plan.contains("SortExec"), "{plan}");

        // A product whose file is not in row_id order (here written in
        // reverse) is read as it is, and the mix sorts it.
        let reversed = engine::run_sql(
            &ctx,
            "SELECT * FROM escape_duel ORDER BY row_id DESC",
            "reversed",
        )
        .await
        .unwrap();
        assert!(reversed.iter().map(|b| b.num_rows()).sum::<usize>() > 1);
        let writer = lake.begin("test", serde_json::json!({})).await.unwrap();
        lake.overwrite("escape_duel", reversed, serde_json::json!({}))
            .await
            .unwrap();
        writer.finish().await.unwrap();
        let ctx = engine::step_session(&lake).await.unwrap();
        assert!(!in_row_id_order(&ctx, "escape_duel").await);
        assert!(in_row_id_order(&ctx, "escape_mini").await);
    });
    ok(run(&lake_dir, &["mix"]));
    assert_eq!(
        sql(&lake_dir, "SELECT * FROM sft_mix ORDER BY row_id"),
        mix_rows
    );
    let lake = turnlake::lake::Lake::open(lake_dir.to_str().unwrap()).unwrap();
    rt.block_on(async {
        let ctx = engine::step_session(&lake).await.unwrap();
        assert!(in_row_id_order(&ctx, "sft_mix").await);
    });
}

#[test]
fn synthetic_products_reconcile_and_match_their_shares() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    ok(bin()
        .args([
            "synth",
            "--out",
            corpus.to_str().unwrap(),
            "--seed",
            "4",
            "--eval-runs",
            "6",
            "--samples-per-run",
            "40",
            "--mini-coder",
            "400",
            "--mswea",
            "0",
        ])
        .output()
        .unwrap());
    let truth: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("truth.json")).unwrap()).unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &["ingest", "albedo", corpus.join("albedo").to_str().unwrap()],
    ));
    ok(run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            corpus.join("mini-coder").to_str().unwrap(),
        ],
    ));
    ok(run(&lake, &["credit"]));
    let o = ok(run(&lake, &["select"]));
    let out = stdout(&o);
    for mix in ["credit", "escape_duel", "escape_mini", "finish_mini"] {
        assert!(out.contains(mix), "{out}");
    }
    // Every candidate turn is trained, demoted (with its reason) or not selected.
    let products = "(SELECT * FROM sft_credit UNION ALL SELECT * FROM escape_duel UNION ALL SELECT * FROM escape_mini UNION ALL SELECT * FROM finish_mini)";
    let trained: i64 = scalar(&lake, &format!("SELECT sum(n_train) FROM {products}"))
        .parse()
        .unwrap();
    let demoted: i64 = scalar(&lake, "SELECT count(*) FROM gate_demotions")
        .parse()
        .unwrap();
    let (mut c_trained, mut c_demoted) = (0i64, 0i64);
    for line in out
        .lines()
        .filter(|l| l.contains("trained") || l.contains("demoted:"))
    {
        let n: i64 = line
            .split(['|', '│'])
            .filter_map(|c| c.trim().parse().ok())
            .next_back()
            .unwrap_or_else(|| panic!("no count in {line}"));
        if line.contains("trained") {
            c_trained += n
        } else {
            c_demoted += n
        }
    }
    assert_eq!((c_trained, c_demoted), (trained, demoted));
    for (mix, table) in [
        ("credit", "sft_credit"),
        ("escape_duel", "escape_duel"),
        ("escape_mini", "escape_mini"),
        ("finish_mini", "finish_mini"),
    ] {
        let n: i64 = scalar(&lake, &format!("SELECT count(*) FROM {table}"))
            .parse()
            .unwrap();
        assert!(n > 0, "{mix} is empty");
    }
    // Product sizes against the plan: escapes are planted exactly; measured repeats also
    // catch the rare command that happens to equal an earlier one, so allow 10%.
    for (table, key) in [
        ("escape_duel", "escape_duel_rows"),
        ("escape_mini", "escape_mini_rows"),
    ] {
        let measured: f64 = scalar(&lake, &format!("SELECT count(*) FROM {table}"))
            .parse()
            .unwrap();
        let planted = truth["counts"][key].as_f64().unwrap();
        assert!(
            (measured - planted).abs() <= 0.1 * planted + 2.0,
            "{table}: {measured} rows, planted {planted}"
        );
    }
    // The JSON summary carries the reproduction pairs and, with --truth, the planted sizes.
    let truth_path = corpus.join("truth.json");
    let o = ok(run(
        &lake,
        &[
            "select",
            "--format",
            "json",
            "--truth",
            truth_path.to_str().unwrap(),
        ],
    ));
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let figures = summary["reproduction"]["figures"].as_array().unwrap();
    let rows = figures
        .iter()
        .find(|f| f["key"] == "select.escape_duel.rows")
        .unwrap();
    assert_eq!(rows["reference"], 13979.0);
    assert_eq!(
        rows["planted"].as_f64(),
        truth["counts"]["escape_duel_rows"].as_f64()
    );
    let lake_rows = rows["lake"].as_f64().unwrap();
    let diff = rows["diff"].as_f64().unwrap();
    assert_eq!(diff, lake_rows - 13979.0);
    // Every demotion names what its turn really holds (the hand-made fixtures plant each reason).
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM gate_demotions g JOIN turns u ON u.traj_id = g.traj_id AND u.t = g.t \
             WHERE (g.reason = 'not exactly one bash block' AND u.n_bash_blocks = 1) \
                OR (g.reason = 'unclosed <think>' AND NOT u.think_unclosed)"
        ),
        "0"
    );

    // The mix at target shares: as configured, within one row of rounding.
    let cfg = tmp.path().join("shares.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    std::fs::write(&cfg, default.replace("mode = \"all\"", "mode = \"shares\"")).unwrap();
    let o = ok(run(&lake, &["mix", "--config", cfg.to_str().unwrap()]));
    assert!(stdout(&o).contains("recovery turns"), "{}", stdout(&o));
    let rows = sql(
        &lake,
        "SELECT mix, count(*) FROM sft_mix GROUP BY 1 ORDER BY 1",
    );
    let total: f64 = rows.iter().map(|r| r[1].parse::<f64>().unwrap()).sum();
    for (r, share) in rows.iter().zip([0.112, 0.337, 0.164, 0.386]) {
        let n: f64 = r[1].parse().unwrap();
        assert!(
            (n - share * total).abs() <= 1.0 + 0.01 * total,
            "{r:?} of {total}"
        );
    }
    // Each mix keeps exactly its rows of lowest seeded draw (seed 1, ties by row_id).
    let mut subsampled = false;
    for (r, table) in rows
        .iter()
        .zip(["sft_credit", "escape_duel", "escape_mini", "finish_mini"])
    {
        let kept = sql(
            &lake,
            &format!(
                "SELECT row_id FROM sft_mix WHERE mix = '{}' ORDER BY row_id",
                r[0]
            ),
        );
        let lowest = sql(
            &lake,
            &format!(
                "SELECT row_id FROM (SELECT row_id FROM {table} \
                 ORDER BY md5('1' || row_id), row_id LIMIT {}) ORDER BY row_id",
                r[1]
            ),
        );
        assert_eq!(kept, lowest, "{}", r[0]);
        subsampled |= scalar(&lake, &format!("SELECT count(*) FROM {table}")) != r[1];
    }
    assert!(subsampled, "no mix was subsampled: {rows:?}");

    // The report counted over chunks of a few rows (each a share of the
    // trajectories) is the report counted over the whole mix, and the mix
    // composed again is the same.
    let shares_text = std::fs::read_to_string(&cfg).unwrap();
    let o = ok(run(
        &lake,
        &["mix", "--config", cfg.to_str().unwrap(), "--format", "json"],
    ));
    let whole: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mix_rows = sql(&lake, "SELECT * FROM sft_mix ORDER BY row_id");
    let chunked_lake = tmp.path().join("chunked");
    copy_dir(&lake, &chunked_lake);
    let config = turnlake::pipeline::select::SelectConfig::from_toml(&shares_text).unwrap();
    let chunk_rows = 7;
    let chunked = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let lake = turnlake::lake::Lake::open(chunked_lake.to_str().unwrap()).unwrap();
        turnlake::pipeline::mix::build_with_report_chunks(&lake, &config.mix, None, chunk_rows)
            .await
            .unwrap()
    });
    assert!(
        mix_rows.len() > 4 * chunk_rows,
        "{} rows are not many chunks",
        mix_rows.len()
    );
    assert_eq!(
        sql(&chunked_lake, "SELECT * FROM sft_mix ORDER BY row_id"),
        mix_rows
    );
    assert_eq!(
        rounded(serde_json::to_value(&chunked).unwrap()),
        rounded(whole.clone())
    );
    // Its counts are those of sql/mix_report.sql run over the whole mix at
    // once, straight on the lake's tables (no chunks, no scratch files).
    let report_sql = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/mix_report.sql");
    for (view, key, field) in [
        ("mix_cmd", "cmd_kind", "commands"),
        ("mix_tags", "tag", "tags"),
        ("credit_set_categories", "category", "credit_categories"),
    ] {
        let query = format!("SELECT {key}, turns FROM {view} ORDER BY {key}");
        let o = ok(run(
            &lake,
            &[
                "sql",
                "-f",
                report_sql.to_str().unwrap(),
                &query,
                "--format",
                "ndjson",
            ],
        ));
        let mut expected: Vec<(String, i64)> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| {
                (
                    v[key].as_str().unwrap_or("").to_string(),
                    v["turns"].as_i64().unwrap(),
                )
            })
            .collect();
        let mut counted: Vec<(String, i64)> = whole[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_str().unwrap().to_string(), c[1].as_i64().unwrap()))
            .collect();
        expected.sort();
        counted.sort();
        assert!(!expected.is_empty(), "{view}");
        assert_eq!(counted, expected, "{view}");
    }
    // The whole report adds up: rows per mix, and commands' turns to the train turns.
    let mixes = whole["mixes"].as_array().unwrap();
    let rows_of = |m: &Value| m["rows"].as_i64().unwrap();
    assert_eq!(
        mixes.iter().map(rows_of).sum::<i64>(),
        mix_rows.len() as i64
    );
    let train: i64 = mixes
        .iter()
        .map(|m| m["train_turns"].as_i64().unwrap())
        .sum();
    let commands: i64 = whole["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[1].as_i64().unwrap())
        .sum();
    assert_eq!(commands, train);
    assert_eq!(
        scalar(&lake, "SELECT sum(n_train) FROM sft_mix"),
        train.to_string()
    );
}

#[test]
fn show_lays_out_a_side_turn_by_turn_with_credit_and_products() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    build_lake(&lake);
    ok(run(&lake, &["mix"]));
    let o = ok(run(
        &lake,
        &[
            "show",
            "--sample-id",
            "sel/s3:3:2",
            "--side",
            "previous_king",
            "--format",
            "json",
        ],
    ));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let traj_id = v["traj_id"].as_str().unwrap().to_string();
    assert!(traj_id.ends_with("sel/s3:3:2/previous_king"), "{traj_id}");
    let turns = v["turns"].as_array().unwrap();
    let n_turns = scalar(
        &lake,
        &format!("SELECT count(*) FROM turns WHERE traj_id = '{traj_id}'"),
    );
    assert_eq!(turns.len().to_string(), n_turns);
    // Turn 3 escapes a failed observation: credited, cited, trained by escape_duel and the mix.
    let t3 = turns.iter().find(|t| t["t"] == 3).unwrap();
    assert!(t3["credit"].as_f64().unwrap() > 0.0, "{t3}");
    assert!(!t3["cited_by"].as_array().unwrap().is_empty(), "{t3}");
    let trained: Vec<&str> = t3["trained_in"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        trained
            .iter()
            .any(|r| r.starts_with("escape_duel: escape_duel/")),
        "{trained:?}"
    );
    assert!(
        trained.iter().any(|r| r.starts_with("sft_mix: ")),
        "{trained:?}"
    );
    let t2 = turns.iter().find(|t| t["t"] == 2).unwrap();
    assert_eq!(t2["obs_failed"], true, "{t2}");
    // The same by traj_id, as a table: plain text when piped.
    let o = ok(run(&lake, &["show", &traj_id]));
    let out = stdout(&o);
    assert!(!out.contains('\u{1b}'), "no colour codes when piped");
    assert!(
        out.contains("FAILED") && out.contains("escape_duel: escape_duel/"),
        "{out}"
    );
    // An unknown id is a clear error.
    let o = run(&lake, &["show", "albedo/no/such"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no trajectory albedo/no/such"),
        "{}",
        stderr(&o)
    );
}

/// The selection in many parts (a bucket per eval run of Albedo sides, a
/// part per few mini-coder runs, a finish_mini cap that binds across the
/// parts) gives the products, demotions and summary of the selection in one.
#[test]
fn selection_in_parts_equals_the_selection_in_one() {
    use turnlake::pipeline::{select, select_parts::PartSizes};
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 9, (3, 30, 300, 0), None);
    let one = tmp.path().join("one");
    for (kind, dir) in [("albedo", "albedo"), ("mini-coder", "mini-coder")] {
        ok(run(
            &one,
            &["ingest", kind, corpus.join(dir).to_str().unwrap()],
        ));
    }
    ok(run(&one, &["credit"]));
    let parted = tmp.path().join("parted");
    copy_dir(&one, &parted);
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    let text = default.replace("cap = 16000", "cap = 9");
    assert_ne!(text, default, "data/select.toml sets the finish_mini cap");
    let cfg = tmp.path().join("select.toml");
    std::fs::write(&cfg, &text).unwrap();

    let o = ok(run(
        &one,
        &[
            "select",
            "--config",
            cfg.to_str().unwrap(),
            "--format",
            "json",
        ],
    ));
    let whole: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let config = select::SelectConfig::from_toml(&text).unwrap();
    let sizes = PartSizes {
        bucket_sides: 1,
        part_runs: 20,
    };
    let summary = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let lake = turnlake::lake::Lake::open(parted.to_str().unwrap()).unwrap();
        select::build_in_parts(&lake, &config, sizes).await.unwrap()
    });
    // Figures agree to the last digits printed (a difference of two
    // percentages may differ in its last bit).
    assert_eq!(
        rounded(turnlake::cmd::select::summary_json(&summary)),
        rounded(whole)
    );

    // It was many parts, and the cap bound.
    let runs: usize = scalar(
        &one,
        "SELECT count(*) FROM trajectories WHERE source = 'mini_coder' AND verified",
    )
    .parse()
    .unwrap();
    assert!(runs > 3 * sizes.part_runs, "{runs} verified runs");
    assert_eq!(
        scalar(
            &one,
            "SELECT count(DISTINCT eval_run_id) FROM trajectories WHERE judged"
        ),
        "3"
    );
    assert_eq!(scalar(&one, "SELECT count(*) FROM finish_mini"), "9");
    // Instances are counted across parts: at least those the cap kept, at
    // most every instance of a verified run.
    let instances: i64 = scalar(
        &one,
        "SELECT count(DISTINCT instance_id) FROM trajectories WHERE source = 'mini_coder' AND verified",
    )
    .parse()
    .unwrap();
    assert!(
        (9..=instances).contains(&summary.finish_instances),
        "{} of {instances}",
        summary.finish_instances
    );
    let tables: Vec<String> = [
        "sft_credit",
        "escape_duel",
        "escape_mini",
        "finish_mini",
        "gate_demotions",
    ]
    .map(String::from)
    .to_vec();
    let whole_rows = table_contents(&|a: &[&str]| run(&one, a), &tables);
    assert!(whole_rows.len() > 5 + 9, "{whole_rows:?}");
    assert_eq!(
        table_contents(&|a: &[&str]| run(&parted, a), &tables),
        whole_rows
    );
}

/// `v` with every fractional number rounded to nine decimals.
fn rounded(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap();
            serde_json::json!((x * 1e9).round() / 1e9)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(rounded).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, rounded(v))).collect()),
        other => other,
    }
}

/// A sample that recurs across eval runs (data/fixtures/recurring: sel/s1
/// duelled in two runs, its challenger judged higher in the second) gives
/// credit one side, the passing side with the highest score of any run,
/// and the report counts the recurring sample and the run left out.
#[test]
fn credit_keeps_one_side_per_sample_id_across_eval_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let runs = fixtures().join("recurring/albedo");
    ok(run(&lake, &["ingest", "albedo", runs.to_str().unwrap()]));
    ok(run(&lake, &["credit"]));
    let o = ok(run(&lake, &["select", "--format", "json"]));
    let passing = scalar(
        &lake,
        "SELECT count(DISTINCT eval_run_id) FROM trajectories WHERE sample_id = 'sel/s1:1:1'",
    );
    assert_eq!(passing, "2", "the sample recurs");
    let credit = sql(&lake, "SELECT traj_id FROM sft_credit");
    assert_eq!(
        credit,
        vec![vec![
            "albedo/5e1ec700-0000-4000-8000-0000000000a2/sel/s1:1:1/challenger".to_string()
        ]]
    );
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let figure = |key: &str| {
        summary["reproduction"]["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key)
            .unwrap_or_else(|| panic!("{key} in {summary}"))["lake"]
            .clone()
    };
    assert_eq!(figure("select.credit.samples_recurring"), 1.0);
    assert_eq!(figure("select.credit.runs_dropped"), 1.0);
    assert_eq!(summary["credit_recurring"][0]["kept"], credit[0][0]);
    assert_eq!(summary["credit_recurring"][0]["runs"], 2);
}

/// Every step SQL file the registry declares runs alone under `sql -f`, its
/// inputs registered as its step registers them (the registry, not file-name
/// matching, decides), and a query over its last view answers.
#[test]
fn every_declared_step_file_runs_alone_under_sql_f() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    build_lake(&lake);
    ok(run(&lake, &["mix"]));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let declared = turnlake::pipeline::steps::SQL_FILES;
    assert!(declared.len() >= 9, "{declared:?}");
    for f in declared {
        let path = root.join(f.file);
        let text = std::fs::read_to_string(&path).unwrap();
        // The last view or table the file creates.
        let last = text
            .lines()
            .rev()
            .filter_map(|l| {
                l.strip_prefix("CREATE VIEW ")
                    .or_else(|| l.strip_prefix("CREATE OR REPLACE VIEW "))
                    .or_else(|| l.strip_prefix("CREATE TABLE "))
            })
            .filter_map(|l| l.split_whitespace().next())
            .next()
            .unwrap_or_else(|| panic!("{} creates no view", f.file));
        let query = format!("SELECT count(*) AS n FROM {last}");
        let o = run(
            &lake,
            &[
                "sql",
                "-f",
                path.to_str().unwrap(),
                &query,
                "--format",
                "csv",
            ],
        );
        assert!(o.status.success(), "{}: {}", f.file, stderr(&o));
        assert!(stdout(&o).starts_with("n\n"), "{}: {}", f.file, stdout(&o));
    }
    // A file that is not a step's takes no --config.
    let o = run(
        &lake,
        &[
            "sql",
            "-f",
            root.join("sql/stats.sql").to_str().unwrap(),
            "--config",
            root.join("data/select.toml").to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--config is for a pipeline step's SQL file"),
        "{}",
        stderr(&o)
    );
}
