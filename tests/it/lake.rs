//! Lake commits across tables: a command killed between its table commits
//! leaves the lake as the previous lake commit, a rerun converges to the
//! tables of an uninterrupted run, concurrent writers both land once, and
//! snapshots and `--as-of` read earlier commits.

use crate::common::*;
use std::path::Path;

/// Row counts of the ingest tables and a digest of their keys, as readers see them.
fn lake_state(lake: &Path) -> Vec<Vec<String>> {
    sql(
        lake,
        "SELECT (SELECT count(*) FROM trajectories) AS t, (SELECT count(*) FROM messages) AS m, \
                (SELECT count(*) FROM turns) AS u, \
                (SELECT md5(string_agg(traj_id || ':' || traj_sha, ',' ORDER BY traj_id)) FROM trajectories) AS tk, \
                (SELECT md5(string_agg(turn_sha, ',' ORDER BY turn_sha)) FROM turns) AS uk",
    )
}

fn ingest(lake: &Path, kind: &str, dir: &Path, failpoint: Option<&str>) -> std::process::Output {
    let mut c = bin();
    c.arg("--lake").arg(lake).args(["ingest", kind]);
    if kind == "albedo" {
        c.arg("--no-verify");
    }
    c.arg(dir);
    if let Some(f) = failpoint {
        c.env("TURNLAKE_FAILPOINT", f);
    }
    c.output().expect("run turnlake")
}

/// Delta versions on disk for `table` (committed to the lake or not).
fn delta_versions(lake: &Path, table: &str) -> usize {
    std::fs::read_dir(lake.join(table).join("_delta_log"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_command_killed_between_table_commits_leaves_the_last_lake_commit_and_a_rerun_converges() {
    let tmp = tempfile::tempdir().unwrap();
    let (albedo, mswea) = (fixtures().join("albedo"), fixtures().join("mswea"));
    // The uninterrupted run.
    let reference = tmp.path().join("reference");
    ok(ingest(&reference, "albedo", &albedo, None));
    let after_albedo = lake_state(&reference);
    ok(ingest(&reference, "mswea", &mswea, None));
    let after_both = lake_state(&reference);
    assert_ne!(after_albedo, after_both);

    for (i, point) in [
        "after-table-write:trajectories",
        "after-table-write:messages",
        "after-table-write:turns",
        "before-lake-commit",
    ]
    .iter()
    .enumerate()
    {
        // Killed in the second ingest: the first stays as it was.
        let lake = tmp.path().join(format!("crash{i}"));
        ok(ingest(&lake, "albedo", &albedo, None));
        let committed = delta_versions(&lake, "trajectories");
        let o = ingest(&lake, "mswea", &mswea, Some(point));
        assert!(
            !o.status.success(),
            "{point}: the fail point must stop the command"
        );
        assert!(
            stderr(&o).contains(&format!("fail point {point}:1 fired")),
            "{}",
            stderr(&o)
        );
        assert!(
            delta_versions(&lake, "trajectories") > committed,
            "{point}: a newer trajectories version was written"
        );
        assert_eq!(
            lake_state(&lake),
            after_albedo,
            "{point}: the lake reads as its last commit"
        );
        // The rerun restores the tables and completes the input.
        let o = ok(ingest(&lake, "mswea", &mswea, None));
        assert!(stderr(&o).contains("restored"), "{point}: {}", stderr(&o));
        assert_eq!(
            lake_state(&lake),
            after_both,
            "{point}: the rerun converges"
        );
    }

    // Killed in the very first ingest of a lake: the tables it created are removed.
    let lake = tmp.path().join("first");
    let o = ingest(&lake, "albedo", &albedo, Some("after-table-write:messages"));
    assert!(!o.status.success());
    let tables = ok(run(&lake, &["tables"]));
    assert!(
        !stdout(&tables).contains("trajectories"),
        "{}",
        stdout(&tables)
    );
    ok(ingest(&lake, "albedo", &albedo, None));
    assert_eq!(lake_state(&lake), after_albedo);
}

#[test]
fn two_concurrent_ingests_both_land_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (albedo, mswea) = (fixtures().join("albedo"), fixtures().join("mswea"));
    let reference = tmp.path().join("reference");
    ok(ingest(&reference, "albedo", &albedo, None));
    ok(ingest(&reference, "mswea", &mswea, None));
    let lake = tmp.path().join("lake");
    let spawn = |kind: &str, dir: &Path| {
        let mut c = bin();
        c.arg("--lake").arg(&lake).args(["ingest", kind]);
        if kind == "albedo" {
            c.arg("--no-verify");
        }
        c.arg(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let (a, b) = (spawn("albedo", &albedo), spawn("mswea", &mswea));
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(lake_state(&lake), lake_state(&reference));
}

#[test]
fn snapshots_and_as_of_read_earlier_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(ingest(&lake, "albedo", &fixtures().join("albedo"), None));
    let before = lake_state(&lake);
    let o = ok(run(
        &lake,
        &["snapshot", "create", "s1", "--note", "albedo only"],
    ));
    assert!(
        stdout(&o).contains("snapshot s1 = lake commit"),
        "{}",
        stdout(&o)
    );
    let o = run(&lake, &["snapshot", "create", "s1"]);
    assert!(!o.status.success() && stderr(&o).contains("already exists"));
    ok(ingest(&lake, "mswea", &fixtures().join("mswea"), None));
    let after = lake_state(&lake);
    assert_ne!(before, after);

    // Reading as of the snapshot, its commit version, or the time it was taken.
    let as_of = |at: &str| sql_as_of(&lake, at, "SELECT count(*) FROM trajectories");
    assert_eq!(as_of("s1"), before[0][0]);
    let version = stdout(&ok(run(&lake, &["snapshot", "list"])))
        .lines()
        .find(|l| l.contains("s1"))
        .and_then(|l| l.split(['|', '│']).nth(2).map(|c| c.trim().to_string()))
        .unwrap();
    assert_eq!(as_of(&version), before[0][0]);
    assert_eq!(
        sql(&lake, "SELECT count(*) FROM trajectories")[0][0],
        after[0][0]
    );
    // A writing command refuses a lake read as of an earlier commit.
    let o = run(
        &lake,
        &[
            "--as-of",
            "s1",
            "ingest",
            "mswea",
            fixtures().join("mswea").to_str().unwrap(),
        ],
    );
    assert!(
        !o.status.success() && stderr(&o).contains("can be read, not written"),
        "{}",
        stderr(&o)
    );
    let o = run(&lake, &["--as-of", "nope", "tables"]);
    assert!(
        !o.status.success() && stderr(&o).contains("no snapshot named \"nope\""),
        "{}",
        stderr(&o)
    );

    // The diff's row changes match SQL counts at both commits.
    ok(run(&lake, &["snapshot", "create", "s2"]));
    let o = ok(run(&lake, &["snapshot", "diff", "s1", "s2"]));
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains("trajectories"))
        .map(str::to_string)
        .unwrap();
    let cells: Vec<String> = line
        .split(['|', '│'])
        .map(|c| c.trim().to_string())
        .collect();
    assert_eq!(cells[4], before[0][0], "{line}");
    assert_eq!(cells[5], after[0][0], "{line}");
    let o = ok(run(&lake, &["snapshot", "show", "s1"]));
    assert!(stdout(&o).contains("ingest albedo"), "{}", stdout(&o));

    // Each lake commit records the tables' versions and the input files it read.
    let log = lake.join("_turnlake/log");
    let mut commits: Vec<serde_json::Value> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    commits.sort_by_key(|c| c["version"].as_u64());
    let mswea = commits
        .iter()
        .find(|c| c["command"] == "ingest mswea")
        .expect("the mswea ingest's commit");
    assert!(mswea["tables"]["turns"].is_u64(), "{mswea}");
    assert_eq!(mswea["turnlake"], env!("CARGO_PKG_VERSION"));
    let inputs = mswea["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2, "{mswea}");
    for i in inputs {
        let path = Path::new(i["path"].as_str().unwrap());
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(i["size"].as_u64(), Some(bytes.len() as u64));
        use sha2::Digest;
        assert_eq!(
            i["sha256"].as_str().unwrap(),
            hex::encode(sha2::Sha256::digest(&bytes))
        );
    }
}

/// A one-value query `--as-of` a commit.
fn sql_as_of(lake: &Path, at: &str, query: &str) -> String {
    let o = ok(run(lake, &["--as-of", at, "sql", query, "--format", "csv"]));
    stdout(&o).lines().nth(1).unwrap_or_default().to_string()
}

#[test]
fn an_export_as_of_a_snapshot_is_byte_identical_and_rebuild_verifies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let f = fixtures().join("select");
    ok(ingest(&lake, "albedo", &f.join("albedo"), None));
    ok(ingest(&lake, "mini-coder", &f.join("mini-coder"), None));
    let steps = |lake: &Path| {
        for step in ["credit", "select", "mix"] {
            ok(run(lake, &[step]));
        }
    };
    steps(&lake);
    let first = tmp.path().join("first.jsonl");
    ok(run(
        &lake,
        &["export", "sft", "--out", first.to_str().unwrap()],
    ));
    ok(run(&lake, &["snapshot", "create", "v1"]));

    // More data and the steps again: the export changes.
    ok(ingest(&lake, "albedo", &fixtures().join("albedo"), None));
    ok(ingest(
        &lake,
        "mini-coder",
        &fixtures().join("mini-coder"),
        None,
    ));
    steps(&lake);
    let second = tmp.path().join("second.jsonl");
    ok(run(
        &lake,
        &["export", "sft", "--out", second.to_str().unwrap()],
    ));
    let (a, b) = (
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap(),
    );
    assert_ne!(a, b, "the new data changes the export");

    // As of the snapshot: byte-identical to the first.
    let again = tmp.path().join("again.jsonl");
    ok(run(
        &lake,
        &[
            "--as-of",
            "v1",
            "export",
            "sft",
            "--out",
            again.to_str().unwrap(),
        ],
    ));
    assert_eq!(std::fs::read(&again).unwrap(), a);

    // The manifest records the lake commit, table versions and the file's hash;
    // rebuild reproduces it, and names the file when the hash cannot match.
    let manifest_path = tmp.path().join("first.jsonl.manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    assert!(manifest["tables"]["sft_mix"].is_number(), "{manifest}");
    assert_eq!(manifest["files"][0]["path"], "first.jsonl");
    assert_eq!(manifest["files"][0]["size"], a.len() as u64);
    assert_eq!(manifest["written_by"]["sft_mix"]["command"], "mix");
    let o = ok(bin()
        .args(["rebuild", manifest_path.to_str().unwrap()])
        .output()
        .unwrap());
    assert!(
        stdout(&o).contains("every sha256 matches"),
        "{}",
        stdout(&o)
    );
    let mut tampered = manifest.clone();
    tampered["files"][0]["sha256"] = serde_json::json!("0".repeat(64));
    let bad = tmp.path().join("bad.manifest.json");
    std::fs::write(&bad, serde_json::to_vec(&tampered).unwrap()).unwrap();
    let o = bin()
        .args(["rebuild", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("mismatch: first.jsonl"),
        "{}",
        stderr(&o)
    );

    // A manifest is someone else's file: a path that leaves --out (by `..`,
    // absolutely, or through a symlink under it) is refused, naming the
    // path, and nothing is written outside --out.
    let out = tmp.path().join("rebuilt");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("link")).unwrap();
    let absolute = outside.join("abs.jsonl");
    for path in [
        "../escaped.jsonl",
        absolute.to_str().unwrap(),
        "link/x.jsonl",
    ] {
        let mut hostile = manifest.clone();
        hostile["files"][0]["path"] = serde_json::json!(path);
        let at = tmp.path().join("hostile.manifest.json");
        std::fs::write(&at, serde_json::to_vec(&hostile).unwrap()).unwrap();
        let o = bin()
            .args([
                "rebuild",
                at.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{path}");
        assert!(
            stderr(&o).contains(&format!("file path {path:?}")),
            "{path}: {}",
            stderr(&o)
        );
        assert!(!tmp.path().join("escaped.jsonl").exists());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "{path}");
    }
    // It says which lake it reads before reading it: the manifest's, or the
    // one the user names (here a copy of it).
    let o = ok(bin()
        .args(["rebuild", manifest_path.to_str().unwrap()])
        .output()
        .unwrap());
    assert!(
        stderr(&o).contains("that the manifest names"),
        "{}",
        stderr(&o)
    );
    let copy = tmp.path().join("lake-copy");
    let cp = std::process::Command::new("cp")
        .arg("-r")
        .arg(&lake)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let o = ok(bin()
        .arg("--lake")
        .arg(&copy)
        .args(["rebuild", manifest_path.to_str().unwrap()])
        .output()
        .unwrap());
    assert!(
        stderr(&o).contains(&format!("reading the lake {}", copy.display()))
            && stderr(&o).contains("(the manifest names"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("every sha256 matches"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn vacuum_frees_bytes_and_keeps_every_named_snapshot_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(ingest(&lake, "albedo", &fixtures().join("albedo"), None));
    ok(run(&lake, &["credit"]));
    ok(run(&lake, &["snapshot", "create", "kept"]));
    let query = "SELECT count(*) AS turns, sum(credit) AS credit, (SELECT count(*) FROM trajectories) AS trajectories FROM turn_credit";
    let at_snapshot = stdout(&ok(run(
        &lake,
        &["--as-of", "kept", "sql", query, "--format", "csv"],
    )));
    // Many commits: each credit run rewrites its tables; each ingest adds small files.
    for _ in 0..3 {
        ok(run(&lake, &["credit"]));
    }
    ok(ingest(&lake, "mswea", &fixtures().join("mswea"), None));
    let o = ok(run(&lake, &["optimize"]));
    assert!(stdout(&o).contains("files compacted"), "{}", stdout(&o));
    let latest = stdout(&ok(run(&lake, &["sql", query, "--format", "csv"])));

    let o = ok(run(&lake, &["vacuum", "--retention-hours", "0"]));
    let freed: u64 = stdout(&o)
        .lines()
        .find(|l| l.ends_with("bytes freed"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert!(freed > 0, "{}", stdout(&o));
    // The snapshot and the latest commit still read exactly as before.
    let again = stdout(&ok(run(
        &lake,
        &["--as-of", "kept", "sql", query, "--format", "csv"],
    )));
    assert_eq!(again, at_snapshot);
    assert_eq!(
        stdout(&ok(run(&lake, &["sql", query, "--format", "csv"]))),
        latest
    );
}

#[test]
fn sigkill_at_any_time_leaves_a_lake_commit_and_a_rerun_converges() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 9, (3, 20, 0, 0), None);
    let runs = corpus.join("albedo");
    let reference = tmp.path().join("reference");
    ok(ingest(&reference, "mswea", &fixtures().join("mswea"), None));
    let before = lake_state(&reference);
    ok(ingest(&reference, "albedo", &runs, None));
    let after = lake_state(&reference);
    let mut outcomes = std::collections::BTreeSet::new();
    for (i, millis) in [30u64, 120, 250, 400, 600, 900, 1300].iter().enumerate() {
        let lake = tmp.path().join(format!("killed{i}"));
        ok(ingest(&lake, "mswea", &fixtures().join("mswea"), None));
        let mut child = bin()
            .arg("--lake")
            .arg(&lake)
            .args(["ingest", "albedo"])
            .arg(&runs)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*millis));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let state = lake_state(&lake);
        assert!(
            state == before || state == after,
            "killed after {millis} ms: the lake reads as neither commit: {state:?}"
        );
        outcomes.insert((status.success(), state == after));
        ok(ingest(&lake, "albedo", &runs, None));
        assert_eq!(
            lake_state(&lake),
            after,
            "killed after {millis} ms: the rerun converges"
        );
    }
    eprintln!("(finished, reads as the new commit) after a kill: {outcomes:?}");
    assert!(
        outcomes.contains(&(false, false)),
        "no kill landed before the ingest's commit: {outcomes:?}"
    );
}

/// A pipeline file in `dir` over the select fixtures, exporting to `dir/out/mix.jsonl`.
fn select_pipeline(dir: &Path, configs: &str) -> std::path::PathBuf {
    let f = fixtures().join("select");
    let pipeline = dir.join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[inputs]\nalbedo = [{:?}]\nmini_coder = [{:?}]\n{configs}[outputs]\nsft = \"out/mix.jsonl\"\n",
            f.join("albedo"),
            f.join("mini-coder")
        ),
    )
    .unwrap();
    pipeline
}

/// The closing table of `turnlake build`: step -> ran / skipped.
fn build_steps(o: &std::process::Output) -> Vec<(String, String)> {
    stdout(o)
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(['|', '│']).map(str::trim).collect();
            (cells.len() > 3 && cells[1] != "step" && (cells[2] == "ran" || cells[2] == "skipped"))
                .then(|| (cells[1].to_string(), cells[2].to_string()))
        })
        .collect()
}

#[test]
fn build_skips_what_is_current_and_reruns_from_a_changed_parameter() {
    let tmp = tempfile::tempdir().unwrap();
    let select = tmp.path().join("select.toml");
    let default =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/select.toml"))
            .unwrap();
    std::fs::write(&select, &default).unwrap();
    let pipeline = select_pipeline(tmp.path(), "[configs]\nselect = \"select.toml\"\n");
    let lake = tmp.path().join("lake");
    let build = || ok(run(&lake, &["build", pipeline.to_str().unwrap()]));
    let steps = [
        "ingest albedo",
        "ingest mini-coder",
        "credit",
        "select",
        "mix",
        "validate",
        "export sft",
    ];
    let first = build_steps(&build());
    assert_eq!(
        first.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        steps
    );
    assert!(first.iter().all(|(_, r)| r == "ran"), "{first:?}");
    let export = std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap();
    assert!(tmp.path().join("out/mix.jsonl.manifest.json").exists());

    let second = build_steps(&build());
    assert!(second.iter().all(|(_, r)| r == "skipped"), "{second:?}");

    // One selection parameter changes: credit stays, select and everything after reruns.
    std::fs::write(&select, default.replace("cap = 16000", "cap = 1")).unwrap();
    let third = build_steps(&build());
    let ran: Vec<&str> = third
        .iter()
        .filter(|(_, r)| r == "ran")
        .map(|(s, _)| s.as_str())
        .collect();
    assert_eq!(
        ran,
        ["select", "mix", "validate", "export sft"],
        "{third:?}"
    );
    assert_ne!(
        std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap(),
        export
    );

    // A mix parameter only: select stays.
    let capped = std::fs::read_to_string(&select).unwrap();
    std::fs::write(
        &select,
        capped.replace("mode = \"all\"", "mode = \"shares\""),
    )
    .unwrap();
    let fourth = build_steps(&build());
    let ran: Vec<&str> = fourth
        .iter()
        .filter(|(_, r)| r == "ran")
        .map(|(s, _)| s.as_str())
        .collect();
    assert_eq!(ran, ["mix", "validate", "export sft"], "{fourth:?}");
}

#[test]
fn a_build_killed_mid_step_resumes_to_the_uninterrupted_result() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = select_pipeline(tmp.path(), "");
    let state = |lake: &Path| {
        sql(
            lake,
            "SELECT (SELECT count(*) FROM turn_credit) AS c, (SELECT count(*) FROM sft_credit) AS s, \
                    (SELECT count(*) FROM sft_mix) AS m, (SELECT count(*) FROM sft_validated) AS v",
        )
    };
    let reference = tmp.path().join("reference");
    ok(run(&reference, &["build", pipeline.to_str().unwrap()]));
    let export = std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap();
    let done = state(&reference);
    for point in [
        "after-table-write:credit_citations",
        "after-table-write:escape_duel",
        "after-table-write:sft_mix",
        "after-table-write:sft_validated",
    ] {
        std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
        let lake = tmp.path().join(format!("lake-{}", point.replace(':', "-")));
        let o = bin()
            .arg("--lake")
            .arg(&lake)
            .args(["build", pipeline.to_str().unwrap()])
            .env("TURNLAKE_FAILPOINT", point)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{point}");
        assert!(
            stderr(&o).contains(&format!("fail point {point}:1 fired")),
            "{}",
            stderr(&o)
        );
        // What the killed step wrote is invisible: its output is absent or as before.
        let tables = stdout(&ok(run(&lake, &["tables"])));
        let table = point.trim_start_matches("after-table-write:");
        assert!(
            !tables.contains(&format!("| {table} ")),
            "{point}: {tables}"
        );
        // The rerun completes the build and gives the uninterrupted result.
        ok(run(&lake, &["build", pipeline.to_str().unwrap()]));
        assert_eq!(state(&lake), done, "{point}");
        assert_eq!(
            std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap(),
            export,
            "{point}"
        );
    }
}

#[test]
fn a_lock_left_by_a_dead_writer_is_taken_over_or_removed_by_unlock() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(ingest(&lake, "mswea", &fixtures().join("mswea"), None));
    let lock = lake.join("_turnlake/lock");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    // A dead process on this machine: the next writer takes its lock over.
    let dead = serde_json::json!({"pid": 999_999_999u32, "host": host, "command": "ingest mswea", "since": "2026-01-01T00:00:00.000Z"});
    std::fs::write(&lock, dead.to_string()).unwrap();
    ok(ingest(&lake, "albedo", &fixtures().join("albedo"), None));
    assert!(!lock.exists());
    // A writer on another machine: `turnlake unlock` removes its lock and says whose it was.
    let elsewhere = serde_json::json!({"pid": 1, "host": "elsewhere", "command": "credit", "since": "2026-01-01T00:00:00.000Z"});
    std::fs::write(&lock, elsewhere.to_string()).unwrap();
    let o = ok(run(&lake, &["unlock"]));
    assert!(
        stdout(&o).contains("removed the writer lock of `credit` (pid 1 on elsewhere"),
        "{}",
        stdout(&o)
    );
    assert!(!lock.exists());
    assert!(stdout(&ok(run(&lake, &["unlock"]))).contains("no writer lock"));
}

#[test]
fn a_build_killed_at_any_time_reads_as_a_commit_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = select_pipeline(tmp.path(), "");
    let reference = tmp.path().join("reference");
    ok(run(&reference, &["build", pipeline.to_str().unwrap()]));
    let export = std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap();
    let counts = "SELECT (SELECT count(*) FROM sft_mix) AS m, (SELECT count(*) FROM turns) AS u";
    let done = sql(&reference, counts);
    for (i, millis) in [150u64, 400, 800, 1300, 2000, 3000].iter().enumerate() {
        std::fs::remove_dir_all(tmp.path().join("out")).unwrap();
        let lake = tmp.path().join(format!("killed{i}"));
        let mut child = bin()
            .arg("--lake")
            .arg(&lake)
            .args(["build", pipeline.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*millis));
        let _ = child.kill();
        child.wait().unwrap();
        // Every table the lake shows reads whole (a table the kill cut short stays invisible).
        if lake.join("_turnlake").exists() {
            let tables = stdout(&ok(run(&lake, &["tables"])));
            for name in ["trajectories", "turns", "turn_credit", "sft_mix"] {
                if tables.contains(&format!("| {name} ")) {
                    ok(run(
                        &lake,
                        &["sql", &format!("SELECT count(*) FROM {name}")],
                    ));
                }
            }
        }
        ok(run(&lake, &["build", pipeline.to_str().unwrap()]));
        assert_eq!(sql(&lake, counts), done, "killed after {millis} ms");
        assert_eq!(
            std::fs::read(tmp.path().join("out/mix.jsonl")).unwrap(),
            export,
            "killed after {millis} ms"
        );
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly_by_sigpipe() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            fixtures().join("mini-coder").to_str().unwrap(),
        ],
    ));
    let mut child = bin()
        .arg("--lake")
        .arg(&lake)
        .args([
            "sql",
            "SELECT * FROM generate_series(1, 2000000)",
            "--format",
            "csv",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (this side of the pipe) is gone now.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// A filter on a partition column reads only that partition's files and
/// answers as the same filter applied to every row; a boolean cast to a
/// number (rewritten to a column-wise kernel) answers as the CASE spelling.
#[test]
fn partition_filters_prune_files_and_bool_casts_answer_as_case() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(ingest(&lake, "albedo", &fixtures().join("albedo"), None));
    ok(ingest(&lake, "mswea", &fixtures().join("mswea"), None));

    let plan = stdout(&ok(run(
        &lake,
        &[
            "sql",
            "EXPLAIN SELECT count(t) FROM turns WHERE source = 'mswea'",
            "--format",
            "csv",
        ],
    )));
    assert!(plan.contains("source=mswea/"), "{plan}");
    assert!(!plan.contains("source=albedo/"), "{plan}");

    let by_kind = "SELECT source, cmd_kind, count(*), avg(CAST(obs_failed AS DOUBLE)), \
                   avg(CASE WHEN obs_failed THEN 1.0 WHEN NOT obs_failed THEN 0.0 END), \
                   sum(CAST(is_repeat AS INT)), count(*) FILTER (WHERE is_repeat) \
                   FROM turns {WHERE} GROUP BY source, cmd_kind ORDER BY source, cmd_kind";
    let all = sql(&lake, &by_kind.replace("{WHERE}", ""));
    let albedo = sql(
        &lake,
        &by_kind.replace("{WHERE}", "WHERE source = 'albedo'"),
    );
    let expected: Vec<_> = all.iter().filter(|r| r[0] == "albedo").cloned().collect();
    assert!(!albedo.is_empty() && albedo.len() < all.len(), "{all:?}");
    assert_eq!(albedo, expected);
    for row in &all {
        assert_eq!(row[3], row[4], "cast and CASE shares differ: {row:?}");
        assert_eq!(row[5], row[6], "cast and FILTER counts differ: {row:?}");
    }
    let failed_shares: Vec<f64> = all.iter().filter_map(|r| r[3].parse().ok()).collect();
    assert!(failed_shares.iter().any(|s| *s > 0.0), "{all:?}");
}

/// A lake written before `credit_citations` carried `category`: `mix` stops
/// before writing, naming the column and the command that adds it; `credit`
/// replaces the table with the schema file's columns, in its order, and
/// `mix` then runs.
#[test]
fn a_lake_from_before_a_schema_gained_a_column_is_told_what_to_rerun() {
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let pipeline = select_pipeline(tmp.path(), "");
    ok(run(&lake, &["build", pipeline.to_str().unwrap()]));
    let mix_before = sql(&lake, "SELECT row_id FROM sft_mix ORDER BY row_id");
    // What an earlier release left: no lake log, and the table without the column.
    std::fs::remove_dir_all(lake.join("_turnlake")).unwrap();
    let schema = turnlake::lake::table_schema("credit_citations")
        .unwrap()
        .schema;
    let older = Arc::new(arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .filter(|f| f.name() != "category")
            .cloned()
            .collect::<Vec<_>>(),
    ));
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let url = url::Url::from_directory_path(lake.join("credit_citations")).unwrap();
        let table = deltalake::open_table(url).await.unwrap();
        table
            .write(vec![arrow::array::RecordBatch::new_empty(older)])
            .with_save_mode(deltalake::protocol::SaveMode::Overwrite)
            .with_schema_mode(deltalake::operations::write::SchemaMode::Overwrite)
            .await
            .unwrap();
    });
    let columns = || -> Vec<String> {
        sql(&lake, "DESCRIBE credit_citations")
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    };
    assert!(!columns().contains(&"category".to_string()));

    let o = run(&lake, &["mix"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("credit_citations has no category column")
            && stderr(&o).contains("run `turnlake credit` again"),
        "{}",
        stderr(&o)
    );
    ok(run(&lake, &["credit"]));
    let wanted: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(
        columns(),
        wanted,
        "replaced under the schema file's columns"
    );
    ok(run(&lake, &["mix"]));
    assert_eq!(
        sql(&lake, "SELECT row_id FROM sft_mix ORDER BY row_id"),
        mix_before
    );
}
