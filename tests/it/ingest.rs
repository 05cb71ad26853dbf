//! `turnlake ingest` on the project's fixtures (data/fixtures, written to
//! mimic the real samples): exact rows and values in every table, rejects,
//! reconciled counts, and idempotent re-ingest.

use crate::common::*;

const COUNTS: &str = "SELECT (SELECT count(*) FROM trajectories) AS t, (SELECT count(*) FROM turns) AS u, (SELECT count(*) FROM messages) AS m, (SELECT count(*) FROM judgments) AS j";
const RUN: &str = "0f1e2d3c-aaaa-4bbb-8ccc-000000000001";

fn ingest_all(lake: &std::path::Path) {
    let f = fixtures();
    let o = run(
        lake,
        &["ingest", "albedo", f.join("albedo").to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (5, 5, 0, 0));
    let o = run(
        lake,
        &["ingest", "mswea", f.join("mswea").to_str().unwrap()],
    );
    assert_eq!(counts(&o), (2, 2, 0, 0));
    let o = run(
        lake,
        &[
            "ingest",
            "mini-coder",
            f.join("mini-coder").to_str().unwrap(),
        ],
    );
    assert_eq!(counts(&o), (2, 2, 0, 0));
}

#[test]
fn fixtures_land_with_exact_rows_and_values() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_all(&lake);

    let by_source = sql(
        &lake,
        "SELECT source, count(*), sum(n_turns) FROM trajectories GROUP BY 1 ORDER BY 1",
    );
    assert_eq!(
        by_source,
        vec![
            vec!["albedo", "4", "14"],
            vec!["mini_coder", "2", "5"],
            vec!["mswea", "2", "6"]
        ]
    );
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM messages WHERE source = 'albedo'"
        ),
        "32"
    );
    assert_eq!(scalar(&lake, "SELECT count(*) FROM messages"), "60");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM turns"), "25");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM questions"), "6");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM judgments"), "12");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM evals"), "1");
    assert_eq!(
        scalar(&lake, "SELECT CAST(hashes_verified AS VARCHAR) FROM evals"),
        "true"
    );

    // The king's side of sample A: a context turn, then three scored outputs.
    let king_a = format!("albedo/{RUN}/fixture-traces/data/train-00001.parquet:10:1/previous_king");
    let turns = sql(&lake, &format!(
        "SELECT t, coalesce(CAST(candidate_n AS VARCHAR), '-'), cmd_kind, n_bash_blocks, coalesce(CAST(obs_failed AS VARCHAR), '-'), \
         coalesce(CAST(returncode AS VARCHAR), '-'), CAST(think_unclosed AS VARCHAR) FROM turns WHERE traj_id = '{king_a}' ORDER BY t"));
    assert_eq!(
        turns,
        vec![
            vec!["1", "-", "find/ls", "1", "false", "0", "false"],
            vec!["2", "1", "cat -n", "1", "false", "-", "false"],
            vec!["3", "2", "grep -r", "1", "true", "2", "false"],
            vec!["4", "3", "sed -n", "1", "-", "-", "true"],
        ]
    );
    let traj = sql(&lake, &format!("SELECT obs_format, score, n_scored, CAST(looped AS VARCHAR), CAST(judged AS VARCHAR) FROM trajectories WHERE traj_id = '{king_a}'"));
    assert_eq!(
        traj,
        vec![vec!["OPENHANDS", "0.666667", "3", "false", "true"]]
    );

    // The challenger of sample A ends on a turn with no bash block.
    let chal_last = sql(&lake, &format!("SELECT cmd_kind, n_bash_blocks FROM turns WHERE traj_id = 'albedo/{RUN}/fixture-traces/data/train-00001.parquet:10:1/challenger' AND t = 4"));
    assert_eq!(chal_last, vec![vec!["other", "0"]]);

    // Sample B: the king loops (judge's flag and metrics), the challenger submits.
    let b = sql(&lake, "SELECT side, CAST(looped AS VARCHAR), round(dup_cmd_ratio, 4), max_cmd_run, obs_format FROM trajectories WHERE sample_id LIKE '%:20:0' ORDER BY side");
    assert_eq!(
        b,
        vec![
            vec!["challenger", "false", "0.0", "1", "RETURNCODE"],
            vec!["previous_king", "true", "0.6667", "3", "RETURNCODE"]
        ]
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM turns WHERE is_submit"),
        "4"
    );
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(*) FROM turns WHERE is_repeat AND source = 'albedo'"
        ),
        "2"
    );

    // Citations, every form.
    let cites = sql(&lake, "SELECT side, question_id, coalesce(CAST(answer AS VARCHAR), '-'), array_to_string(cited_outputs, ' ') FROM judgments \
                            WHERE sample_id LIKE '%:10:1' ORDER BY side, question_id");
    assert_eq!(
        cites,
        vec![
            vec!["challenger", "q_01", "0", "2 3"],
            vec!["challenger", "q_02", "1", ""],
            vec!["challenger", "q_03", "0", "1 2 3"],
            vec!["previous_king", "q_01", "1", "1 3"],
            vec!["previous_king", "q_02", "1", "1 2"],
            vec!["previous_king", "q_03", "0", ""],
        ]
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM judgments WHERE looped"),
        "3"
    );

    // mini-swe-agent: v2 tool calls, empty content with reasoning_content, exit record.
    let v2 = sql(&lake, "SELECT t, cmd_kind, n_bash_blocks, CAST(is_submit AS VARCHAR) FROM turns t JOIN trajectories USING (traj_id) WHERE instance_id = 'astro__sep-1' ORDER BY t");
    assert_eq!(
        v2,
        vec![
            vec!["1", "find/ls", "1", "false"],
            vec!["2", "cat -n", "1", "false"],
            vec!["3", "submit", "1", "true"]
        ]
    );
    assert_eq!(
        scalar(
            &lake,
            "SELECT exit_status FROM trajectories WHERE instance_id = 'astro__sep-1'"
        ),
        "Submitted"
    );
    assert_eq!(scalar(&lake, "SELECT count(*) FROM messages m JOIN trajectories t USING (traj_id) WHERE t.instance_id = 'astro__sep-1' AND m.role = 'exit'"), "1");
    // mini-coder: messages as a list and as a JSON string; the repeat of `ls -la`.
    let mc = sql(&lake, "SELECT n_turns, CAST(verified AS VARCHAR), round(dup_cmd_ratio, 4), max_cmd_run FROM trajectories WHERE source = 'mini_coder' ORDER BY n_turns");
    assert_eq!(
        mc,
        vec![
            vec!["1", "false", "0.0", "1"],
            vec!["4", "true", "0.3333", "2"]
        ]
    );

    // Messages are byte-exact.
    let content = scalar(&lake, "SELECT content FROM messages m JOIN trajectories t USING (traj_id) WHERE t.instance_id = 'astro__sep-1' AND idx = 3");
    assert_eq!(
        content,
        "<returncode>0</returncode>\n<output>\n./separable.py\n</output>"
    );
}

#[test]
fn reingest_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_all(&lake);
    let before = sql(&lake, COUNTS);
    let f = fixtures();
    let o = run(
        &lake,
        &["ingest", "albedo", f.join("albedo").to_str().unwrap()],
    );
    assert_eq!(counts(&o), (5, 0, 5, 0));
    let o = run(
        &lake,
        &["ingest", "mswea", f.join("mswea").to_str().unwrap()],
    );
    assert_eq!(counts(&o), (2, 0, 2, 0));
    let o = run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            f.join("mini-coder").to_str().unwrap(),
        ],
    );
    assert_eq!(counts(&o), (2, 0, 2, 0));
    let after = sql(&lake, COUNTS);
    assert_eq!(before, after);

    // A changed run replaces its rows instead of adding to them.
    let runs = tmp.path().join("runs");
    copy_dir(&f.join("albedo"), &runs);
    let verdict = runs.join(RUN).join("verdict.json");
    let text = std::fs::read_to_string(&verdict)
        .unwrap()
        .replace("\"state\": \"succeeded\"", "\"state\": \"rescored\"");
    std::fs::write(&verdict, text).unwrap();
    let o = run(&lake, &["ingest", "albedo", runs.to_str().unwrap()]);
    assert_eq!(counts(&o), (5, 5, 0, 0));
    assert!(stderr(&o).contains("replaced"), "{}", stderr(&o));
    assert_eq!(before, sql(&lake, COUNTS));
    assert_eq!(scalar(&lake, "SELECT state FROM evals"), "rescored");
}

#[test]
fn a_hash_mismatch_is_an_error_naming_file_and_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    copy_dir(&fixtures().join("albedo"), &runs);
    let scoring = runs.join(RUN).join("scoring-results.jsonl");
    let mut text = std::fs::read_to_string(&scoring).unwrap();
    text = text.replace("\"cold\"", "\"warm\"");
    std::fs::write(&scoring, &text).unwrap();
    let lake = tmp.path().join("lake");
    let o = run(&lake, &["ingest", "albedo", runs.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("scoring-results.jsonl: sha256 mismatch"),
        "{err}"
    );
    assert!(err.contains("--no-verify"), "{err}");
    assert_eq!(counts(&o), (5, 0, 0, 5));
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM rejects WHERE field = 'sha256'"),
        "5"
    );

    let o = run(
        &lake,
        &["ingest", "albedo", "--no-verify", runs.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (5, 5, 0, 0));
    assert_eq!(
        scalar(&lake, "SELECT CAST(hashes_verified AS VARCHAR) FROM evals"),
        "false"
    );
}

/// A run folder as a user saves it from the Albedo dashboard
/// (`artifact_<KIND>_<name>`) ingests as the plain one does.
#[test]
fn the_dashboards_saved_names_ingest_as_the_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let saved = tmp.path().join("saved");
    std::fs::create_dir_all(saved.join(RUN)).unwrap();
    for (kind, name) in [
        ("EVAL_VERDICT", "verdict.json"),
        ("GENERATED_SAMPLES", "generated-samples.jsonl"),
        ("SCORING_RESULTS", "scoring-results.jsonl"),
    ] {
        std::fs::copy(
            fixtures().join("albedo").join(RUN).join(name),
            saved.join(RUN).join(format!("artifact_{kind}_{name}")),
        )
        .unwrap();
    }
    let (plain_lake, saved_lake) = (tmp.path().join("plain"), tmp.path().join("lake"));
    let plain = fixtures().join("albedo");
    ok(run(
        &plain_lake,
        &["ingest", "albedo", plain.to_str().unwrap()],
    ));
    // The run folder itself, as well as the folder above it.
    for path in [saved.join(RUN), saved.clone()] {
        let o = ok(run(
            &saved_lake,
            &["ingest", "albedo", path.to_str().unwrap()],
        ));
        assert_eq!(counts(&o).0, 5, "{}", stdout(&o));
    }
    let tables = lake_tables(&plain_lake);
    assert_eq!(
        table_contents(&|a| run(&saved_lake, a), &tables),
        table_contents(&|a| run(&plain_lake, a), &tables)
    );
}

/// An ingest that finds nothing it can read fails, saying what it looked
/// for and where, and leaves the lake untouched.
#[test]
fn an_ingest_that_finds_no_input_says_what_it_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("downloads");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not an artifact").unwrap();
    let lake = tmp.path().join("lake");
    for (kind, wanted) in [
        ("albedo", "artifact_EVAL_VERDICT_verdict.json"),
        ("mswea", "*.traj.json"),
        ("mini-coder", "*.parquet"),
    ] {
        let o = run(&lake, &["ingest", kind, empty.to_str().unwrap()]);
        assert!(!o.status.success(), "{kind}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("no {kind} input under {}", empty.display()))
                && err.contains(wanted),
            "{kind}: {err}"
        );
    }
    assert!(!lake.join("_turnlake").exists(), "nothing was committed");
}

#[test]
fn bad_records_are_rejected_with_reasons_and_counts_reconcile() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");

    // Albedo: a truncated sample line, a duplicate scoring line, unverified.
    let runs = tmp.path().join("runs");
    copy_dir(&fixtures().join("albedo"), &runs);
    let gen = runs.join(RUN).join("generated-samples.jsonl");
    let text = std::fs::read_to_string(&gen).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(
        &gen,
        format!("{first}\n{}", &text.lines().nth(1).unwrap()[..500]),
    )
    .unwrap();
    let sco = runs.join(RUN).join("scoring-results.jsonl");
    let s = std::fs::read_to_string(&sco).unwrap();
    std::fs::write(&sco, format!("{s}{}\n", s.lines().next().unwrap())).unwrap();
    let o = run(
        &lake,
        &["ingest", "albedo", "--no-verify", runs.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (6, 4, 0, 2));
    assert!(
        stderr(&o).contains("have no line in generated-samples.jsonl"),
        "{}",
        stderr(&o)
    );
    let rejects = sql(
        &lake,
        "SELECT line, coalesce(field, '-'), reason FROM rejects ORDER BY input_file, line",
    );
    assert_eq!(rejects.len(), 2);
    assert_eq!(rejects[0][0], "2");
    assert!(
        rejects[0][2].starts_with("truncated JSON"),
        "{:?}",
        rejects[0]
    );
    assert_eq!(rejects[1][..2], ["3".to_string(), "sample_id".to_string()]);
    assert!(
        rejects[1][2].contains("duplicate sample_id"),
        "{:?}",
        rejects[1]
    );

    // mswea: malformed JSON, empty file, invalid UTF-8, a message without a role.
    let dir = tmp.path().join("mswea");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.traj.json"), "{\"messages\": [").unwrap();
    std::fs::write(dir.join("b.traj.json"), "").unwrap();
    std::fs::write(
        dir.join("c.traj.json"),
        b"[{\"role\": \"user\", \"content\": \"\xff\"}]",
    )
    .unwrap();
    std::fs::write(dir.join("d.traj.json"), "[{\"content\": \"hi\"}]").unwrap();
    std::fs::copy(
        fixtures().join("mswea/colon.v1.traj.json"),
        dir.join("e.traj.json"),
    )
    .unwrap();
    let o = run(&lake, &["ingest", "mswea", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (5, 1, 0, 4));
    let r = sql(&lake, "SELECT input_file, coalesce(field, '-'), reason FROM rejects WHERE source = 'mswea' ORDER BY input_file");
    let short: Vec<(String, String)> = r
        .iter()
        .map(|x| (x[0].rsplit('/').next().unwrap().to_string(), x[1].clone()))
        .collect();
    assert_eq!(
        short,
        vec![
            ("a.traj.json".into(), "-".into()),
            ("b.traj.json".into(), "-".into()),
            ("c.traj.json".into(), "-".into()),
            ("d.traj.json".into(), "messages[0].role".into())
        ]
    );
    assert!(r[2][2].contains("invalid UTF-8"), "{:?}", r[2]);

    // mini-coder JSONL: missing instance_id, mistyped messages.
    let mc = tmp.path().join("mc.jsonl");
    std::fs::write(
        &mc,
        "{\"messages\": []}\n{\"instance_id\": \"x\", \"messages\": 5}\n",
    )
    .unwrap();
    let o = run(&lake, &["ingest", "mini-coder", mc.to_str().unwrap()]);
    assert!(!o.status.success(), "nothing usable must fail");
    assert_eq!(counts(&o), (2, 0, 0, 2));
    let r = sql(
        &lake,
        "SELECT line, field FROM rejects WHERE source = 'mini_coder' ORDER BY line",
    );
    assert_eq!(r, vec![vec!["1", "instance_id"], vec!["2", "messages"]]);
}

#[test]
fn tables_lists_rows_versions_and_partitions() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_all(&lake);
    let o = run(&lake, &["tables"]);
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.contains(" turns "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("25") && row.contains("source"), "{row}");
}

#[test]
fn sql_formats_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_all(&lake);
    let o = run(
        &lake,
        &[
            "sql",
            "SELECT cmd_kind, count(*) AS n FROM turns GROUP BY 1 ORDER BY 2 DESC, 1",
            "--format",
            "ndjson",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o).lines().next().unwrap().to_string();
    assert_eq!(first, "{\"cmd_kind\":\"find/ls\",\"n\":10}");
    let out = tmp.path().join("r.parquet");
    let o = run(
        &lake,
        &[
            "sql",
            "SELECT * FROM turns",
            "--format",
            "parquet",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&out).unwrap().starts_with(b"PAR1"));
    let f = tmp.path().join("q.sql");
    std::fs::write(
        &f,
        "CREATE VIEW k AS SELECT cmd_kind FROM turns;\nSELECT count(*) FROM nope;\n",
    )
    .unwrap();
    let o = run(&lake, &["sql", "-f", f.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("statement 2"), "{}", stderr(&o));
    // UDFs are there for ad-hoc SQL.
    assert_eq!(
        scalar(
            &lake,
            "SELECT cmd_kind(command) FROM turns WHERE cmd_kind = 'grep -r' LIMIT 1"
        ),
        "grep -r"
    );
}
