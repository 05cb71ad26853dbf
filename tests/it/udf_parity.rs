//! Every turn rule that exists as a UDF gives exactly the value ingest
//! stored, for every turn of a whole synthetic corpus and of the real
//! samples, given the same trajectory context. The coverage per observation
//! format and per submit signal is printed and, for the synthetic corpus,
//! required: a corpus that never exercises a branch cannot pass it.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Per (observation format, submit signal): turns covered, observations
/// seen failing and passing, and each UDF's differences from the stored column.
const TURN_PARITY: &str = "
WITH x AS (
  SELECT u.*, s.obs_format AS fmt, s.submit_marker AS marker,
         m.content, m.reasoning_content, m.tool_calls,
         n.content AS next_obs,
         CASE WHEN u.is_last AND e.exit_idx > u.msg_idx THEN coalesce(s.exit_status, '') END AS exit_after,
         p.command AS prev_command
  FROM turns u
  JOIN trajectories s ON s.traj_id = u.traj_id
  JOIN messages m ON m.traj_id = u.traj_id AND m.idx = u.msg_idx
  LEFT JOIN messages n ON n.traj_id = u.traj_id AND n.idx = u.msg_idx + 1 AND n.role IN ('user', 'tool')
  LEFT JOIN (SELECT traj_id, min(idx) AS exit_idx FROM messages WHERE role = 'exit' GROUP BY traj_id) e
    ON e.traj_id = u.traj_id
  LEFT JOIN turns p ON p.traj_id = u.traj_id AND p.t = u.t - 1
)
SELECT coalesce(fmt, '(none)') AS obs_format, coalesce(submit_signal, '(none)') AS signal,
  count(*) AS turns,
  count(*) FILTER (WHERE next_obs IS NOT NULL AND obs_failed) AS failed_obs,
  count(*) FILTER (WHERE next_obs IS NOT NULL AND NOT obs_failed) AS ok_obs,
  count(*) FILTER (WHERE tool_calls IS NULL
                     AND bash_command(content, reasoning_content) IS DISTINCT FROM command) AS d_bash_command,
  count(*) FILTER (WHERE tool_calls IS NULL
                     AND n_bash_blocks(content, reasoning_content) IS DISTINCT FROM n_bash_blocks) AS d_n_bash_blocks,
  count(*) FILTER (WHERE cmd_kind(command, marker, submit_signal) IS DISTINCT FROM cmd_kind) AS d_cmd_kind,
  count(*) FILTER (WHERE submit_signal(command, next_obs, exit_after, marker) IS DISTINCT FROM submit_signal) AS d_submit_signal,
  count(*) FILTER (WHERE command IS NOT NULL
                     AND is_submit(command, marker) IS DISTINCT FROM coalesce(submit_signal = 'command', false)) AS d_is_submit,
  count(*) FILTER (WHERE think_unclosed(content) IS DISTINCT FROM think_unclosed) AS d_think_unclosed,
  count(*) FILTER (WHERE obs_failed(next_obs, fmt) IS DISTINCT FROM obs_failed) AS d_obs_failed,
  count(*) FILTER (WHERE coalesce(normalize_command(prev_command) = normalize_command(command), false)
                     IS DISTINCT FROM repeats_prev) AS d_repeats_prev
FROM x GROUP BY 1, 2 ORDER BY 1, 2";

/// Each trajectory's format from its first observation, and each judgment's citations.
const TRAJECTORY_PARITY: &str = "
SELECT (SELECT count(*) FROM trajectories s
        LEFT JOIN (SELECT u.traj_id, min(u.msg_idx) + 1 AS idx FROM turns u
                   JOIN messages n ON n.traj_id = u.traj_id AND n.idx = u.msg_idx + 1 AND n.role IN ('user', 'tool')
                   GROUP BY u.traj_id) f ON f.traj_id = s.traj_id
        LEFT JOIN messages m ON m.traj_id = s.traj_id AND m.idx = f.idx
        WHERE obs_format(m.content) IS DISTINCT FROM s.obs_format) AS d_obs_format,
       (SELECT count(*) FROM judgments
        WHERE array_to_string(cited_outputs(explanation), ',') IS DISTINCT FROM array_to_string(cited_outputs, ',')) AS d_cited_outputs,
       (SELECT count(*) FROM judgments WHERE cardinality(cited_outputs) > 0) AS citing,
       (SELECT count(*) FROM trajectories) AS trajectories";

/// (format, signal) -> column -> value, from TURN_PARITY.
type Coverage = BTreeMap<(String, String), BTreeMap<String, i64>>;

fn turn_parity(lake: &Path) -> Coverage {
    let o = ok(run(lake, &["sql", TURN_PARITY, "--format", "json"]));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let mut out = Coverage::new();
    for r in rows {
        let key = (
            r["obs_format"].as_str().unwrap().to_string(),
            r["signal"].as_str().unwrap().to_string(),
        );
        let cols = r
            .as_object()
            .unwrap()
            .iter()
            .filter_map(|(k, v)| v.as_i64().map(|n| (k.clone(), n)))
            .collect();
        out.insert(key, cols);
    }
    out
}

/// Assert zero differences everywhere and print the coverage table.
fn assert_parity(lake: &Path, what: &str) -> Coverage {
    let cov = turn_parity(lake);
    eprintln!("UDF parity over {what}: turns covered per observation format and submit signal");
    for ((fmt, sig), cols) in &cov {
        eprintln!(
            "  {fmt:<11} {sig:<12} turns {:>6}  failed obs {:>5}  ok obs {:>5}",
            cols["turns"], cols["failed_obs"], cols["ok_obs"]
        );
        for (col, n) in cols.iter().filter(|(c, _)| c.starts_with("d_")) {
            assert_eq!(*n, 0, "{what}: {col} differs on {n} turns ({fmt}, {sig})");
        }
    }
    let t = sql(lake, TRAJECTORY_PARITY);
    assert_eq!(t[0][0], "0", "{what}: obs_format differs");
    assert_eq!(t[0][1], "0", "{what}: cited_outputs differs");
    eprintln!(
        "  {} trajectories, {} citing judgments: obs_format and cited_outputs agree",
        t[0][3], t[0][2]
    );
    cov
}

fn total(cov: &Coverage, pick: impl Fn(&(String, String)) -> bool, col: &str) -> i64 {
    cov.iter()
        .filter(|(k, _)| pick(k))
        .map(|(_, c)| c[col])
        .sum()
}

#[test]
fn udfs_match_ingest_on_a_whole_synthetic_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let lake = tmp.path().join("lake");
    synth_corpus(&corpus, 7, (4, 12, 200, 24), None);
    ingest_corpus(&lake, &corpus);
    let cov = assert_parity(&lake, "the synthetic corpus");
    for fmt in ["RETURNCODE", "OPENHANDS", "SWE_AGENT"] {
        for col in ["failed_obs", "ok_obs"] {
            assert!(
                total(&cov, |(f, _)| f == fmt, col) > 0,
                "the corpus never exercises {fmt} {col}"
            );
        }
    }
    for signal in ["command", "observation", "exit"] {
        assert!(
            total(&cov, |(_, s)| s == signal, "turns") > 0,
            "the corpus never exercises the {signal} submit signal"
        );
    }
}

#[test]
fn udfs_match_ingest_on_the_real_samples() {
    let Some(samples) = shared_samples("udfs_match_ingest_on_the_real_samples") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let albedo = samples.join("albedo");
    ok(run(
        &lake,
        &["ingest", "albedo", "--no-verify", albedo.to_str().unwrap()],
    ));
    ok(run(
        &lake,
        &["ingest", "mswea", samples.join("mswea").to_str().unwrap()],
    ));
    let cov = assert_parity(&lake, "the real samples");
    assert!(total(&cov, |_| true, "turns") > 0);
}
