//! The real public samples in ../shared/samples, written by other people.

use crate::common::*;

#[test]
fn albedo_excerpt_reports_the_hash_mismatch_then_ingests_without_verification() {
    let Some(samples) = shared_samples(
        "albedo_excerpt_reports_the_hash_mismatch_then_ingests_without_verification",
    ) else {
        return;
    };
    let run_dir = samples.join("albedo");
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let o = run(&lake, &["ingest", "albedo", run_dir.to_str().unwrap()]);
    assert!(
        !o.status.success(),
        "the excerpt's hashes do not match verdict.json"
    );
    let err = stderr(&o);
    assert!(
        err.contains("generated-samples.jsonl: sha256 mismatch: verdict.json records 026b6208"),
        "{err}"
    );
    assert!(err.contains("--no-verify"), "{err}");

    let o = run(
        &lake,
        &["ingest", "albedo", "--no-verify", run_dir.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (read, written, _, rejected) = counts(&o);
    assert_eq!((read, written, rejected), (7, 7, 0));
    assert_eq!(
        scalar(&lake, "SELECT count(DISTINCT sample_id) FROM trajectories"),
        "3"
    );
    assert_eq!(scalar(&lake, "SELECT count(*) FROM trajectories"), "6");

    // One judgment per question per side, counted from the file itself.
    let scoring = std::fs::read_to_string(
        run_dir.join("8e56f148-9957-4d2a-81eb-3cec65f43dc9/scoring-results.jsonl"),
    )
    .unwrap();
    let mut expected = 0;
    let mut citing = 0;
    for line in scoring.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let nq = v["questions"].as_array().unwrap().len();
        expected += 2 * nq;
        for j in v["judge_results"].as_array().unwrap() {
            citing += j["explanations"]
                .as_object()
                .unwrap()
                .values()
                .filter(|e| {
                    e.as_str().unwrap().contains("CANDIDATE OUTPUT")
                        && e.as_str().unwrap().chars().any(|c| c.is_ascii_digit())
                })
                .count();
        }
    }
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM judgments"),
        expected.to_string()
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM questions"),
        (expected / 2).to_string()
    );
    let cited: usize = scalar(
        &lake,
        "SELECT count(*) FROM judgments WHERE cardinality(cited_outputs) > 0",
    )
    .parse()
    .unwrap();
    assert!(cited > 0 && cited <= citing, "{cited} of at most {citing}");
    // The explanation quoted in formats.md: CANDIDATE OUTPUTS 1-2.
    let q02 = scalar(&lake, "SELECT array_to_string(cited_outputs, ',') FROM judgments WHERE sample_id = 'open-swe-traces/data/train-00005.parquet:563:2' AND side = 'previous_king' AND question_id = 'q_02'");
    assert_eq!(q02, "1,2,3");

    // Numbering: CANDIDATE OUTPUT N is the side's N-th score_target turn, 8 per side here.
    let n = sql(&lake, "SELECT max(candidate_n), count(*) FILTER (WHERE candidate_n IS NULL) > 0 FROM turns WHERE source = 'albedo' GROUP BY traj_id");
    assert_eq!(n.len(), 6);
    assert!(n.iter().all(|r| r[0] == "8" && r[1] == "true"), "{n:?}");
    assert_eq!(
        scalar(
            &lake,
            "SELECT count(DISTINCT obs_format) FROM trajectories WHERE source = 'albedo'"
        ),
        "1"
    );
    assert_eq!(
        scalar(&lake, "SELECT min(obs_format) FROM trajectories"),
        "OPENHANDS"
    );

    let o = run(
        &lake,
        &[
            "sql",
            "SELECT cmd_kind, count(*) FROM turns GROUP BY 1 ORDER BY 2 DESC",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("cat -n"), "{}", stdout(&o));
}

#[test]
fn mswea_samples_yield_one_trajectory_each_with_their_turns() {
    let Some(samples) = shared_samples("mswea_samples_yield_one_trajectory_each_with_their_turns")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let o = run(
        &lake,
        &["ingest", "mswea", samples.join("mswea").to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (2, 2, 0, 0));
    let rows = sql(&lake, "SELECT instance_id, n_turns, coalesce(exit_status, '-'), obs_format FROM trajectories ORDER BY instance_id");
    assert_eq!(
        rows,
        vec![
            vec!["astropy__astropy-12907", "36", "Submitted", "RETURNCODE"],
            vec!["github_issue.v1", "10", "-", "RETURNCODE"],
        ]
    );
    // The rewritten fence is read, and the run ends on a submit in both.
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM turns WHERE n_bash_blocks = 1"),
        "46"
    );
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM turns WHERE is_submit"),
        "2"
    );
    // Empty content with the text in reasoning_content still has its tool-call command.
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM turns WHERE command IS NULL"),
        "0"
    );
}

/// The dashboard's own index (`albedo-dashboard/dashboard.json`): all 200
/// eval runs read, with every artifact URL and model, and nothing fetched
/// (its URLs are public ones; a dry run never connects).
#[test]
fn the_real_dashboard_lists_its_200_runs_with_their_urls_and_models() {
    let Some(samples) =
        shared_samples("the_real_dashboard_lists_its_200_runs_with_their_urls_and_models")
    else {
        return;
    };
    let dashboard = samples.join("albedo-dashboard/dashboard.json");
    let o = ok(bin()
        .args(["harvest", dashboard.to_str().unwrap(), "--dry-run"])
        .args(["--with", "progress,logs,transcript,judge"])
        .output()
        .unwrap());
    let text = stdout(&o);
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&dashboard).unwrap()).unwrap();
    let runs = d["eval_runs"].as_array().unwrap();
    let urls: usize = runs
        .iter()
        .map(|r| r["artifacts"].as_object().unwrap().len())
        .sum();
    let models: std::collections::BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| [&r["model_uri"], &r["king"]["model_uri"]])
        .filter_map(|m| m.as_str())
        .collect();
    assert_eq!(runs.len(), 200);
    assert!(
        text.contains(&format!(
            "plan: 200 runs, {urls} files to fetch, {} models (nothing fetched)",
            models.len()
        )),
        "{text}"
    );
    for r in runs {
        assert!(text.contains(r["eval_run_id"].as_str().unwrap()));
        assert!(text.contains(r["model_uri"].as_str().unwrap()));
    }
    assert!(stderr(&o).is_empty(), "no entry refused: {}", stderr(&o));
}
