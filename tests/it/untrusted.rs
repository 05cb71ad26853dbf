//! Input written by someone else (SECURITY.md): each limit on one input hit
//! by a generated input and refused with its reason, the rest ingested.

use std::path::Path;

use crate::common::*;

/// `ingest` with the limits of `flags` lowered; it succeeds.
fn ingest_limited(lake: &Path, kind: &str, input: &Path, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["ingest", kind, input.to_str().unwrap()];
    args.extend_from_slice(flags);
    ok(run(lake, &args))
}

fn rejects(lake: &Path) -> Vec<Vec<String>> {
    sql(
        lake,
        "SELECT coalesce(CAST(line AS VARCHAR), '-'), coalesce(field, '-'), reason FROM rejects ORDER BY input_file, line",
    )
}

#[test]
fn a_record_over_the_size_limit_is_rejected_without_being_held_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixtures().join("mini-coder/shard.jsonl")).unwrap();
    let longest = good.lines().map(str::len).max().unwrap();
    // A record of a megabyte between the two good ones, under a limit the good ones fit.
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    lines.insert(
        1,
        format!(
            "{{\"instance_id\": \"big\", \"pad\": \"{}\"}}",
            "a".repeat(1 << 20)
        ),
    );
    let input = tmp.path().join("shard.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let lake = tmp.path().join("lake");
    let limit = (longest + 10).to_string();
    let o = ingest_limited(&lake, "mini-coder", &input, &["--max-record-bytes", &limit]);
    assert_eq!(counts(&o), (3, 2, 0, 1));
    assert_eq!(scalar(&lake, "SELECT count(*) FROM trajectories"), "2");
    let r = rejects(&lake);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0][0], "2");
    assert!(
        r[0][2].contains(&format!("more than {limit} bytes"))
            && r[0][2].contains("--max-record-bytes"),
        "{r:?}"
    );

    // A whole trajectory file over the limit is rejected unread, named by its path.
    let dir = tmp.path().join("mswea");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["colon.v1.traj.json", "sep.v2.traj.json"] {
        std::fs::copy(fixtures().join("mswea").join(f), dir.join(f)).unwrap();
    }
    let small = std::fs::metadata(dir.join("colon.v1.traj.json"))
        .unwrap()
        .len();
    let big = std::fs::metadata(dir.join("sep.v2.traj.json"))
        .unwrap()
        .len();
    assert!(small < big);
    let lake = tmp.path().join("lake2");
    let limit = small.to_string();
    ingest_limited(&lake, "mswea", &dir, &["--max-record-bytes", &limit]);
    let r = sql(&lake, "SELECT input_file, reason FROM rejects");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0][0].ends_with("sep.v2.traj.json"), "{r:?}");
    assert!(
        r[0][1].contains(&format!("{big} bytes, more than the limit of {small}")),
        "{r:?}"
    );
}

#[test]
fn json_nested_past_the_depth_limit_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixtures().join("mini-coder/shard.jsonl")).unwrap();
    let deep = format!(
        "{{\"instance_id\": \"deep\", \"x\": {}1{}}}",
        "[".repeat(40),
        "]".repeat(40)
    );
    let input = tmp.path().join("shard.jsonl");
    std::fs::write(&input, format!("{deep}\n{good}")).unwrap();
    let lake = tmp.path().join("lake");
    ingest_limited(&lake, "mini-coder", &input, &["--max-json-depth", "20"]);
    assert_eq!(scalar(&lake, "SELECT count(*) FROM trajectories"), "2");
    let r = rejects(&lake);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0][0], "1");
    assert!(
        r[0][2].contains("nested deeper than 20 levels (the limit: --max-json-depth)"),
        "{r:?}"
    );
    // The parser's own bound is the most a user may ask for.
    let o = run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            input.to_str().unwrap(),
            "--max-json-depth",
            "500",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--max-json-depth"), "{}", stderr(&o));
}

#[test]
fn a_trajectory_over_the_message_limit_is_rejected_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mswea");
    std::fs::create_dir_all(&dir).unwrap();
    let mut sizes = Vec::new();
    for f in ["colon.v1.traj.json", "sep.v2.traj.json"] {
        let from = fixtures().join("mswea").join(f);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&from).unwrap()).unwrap();
        sizes.push(v["messages"].as_array().unwrap().len());
        std::fs::copy(&from, dir.join(f)).unwrap();
    }
    let (fewer, more) = (sizes[0], sizes[1]);
    assert!(fewer < more);
    let lake = tmp.path().join("lake");
    // Set through the environment, as a batch job would.
    let o = ok(bin()
        .args([
            "--lake",
            lake.to_str().unwrap(),
            "ingest",
            "mswea",
            dir.to_str().unwrap(),
        ])
        .env("TURNLAKE_MAX_MESSAGES", fewer.to_string())
        .output()
        .unwrap());
    assert_eq!(counts(&o), (2, 1, 0, 1));
    let r = sql(&lake, "SELECT input_file, field, reason FROM rejects");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0][0].ends_with("sep.v2.traj.json"), "{r:?}");
    assert_eq!(r[0][1], "messages");
    assert!(
        r[0][2].contains(&format!(
            "{more} messages, more than the limit of {fewer} (--max-messages)"
        )),
        "{r:?}"
    );
}

/// `turnlake ARGS` as a user whom file permissions bind: as root, without
/// the capabilities that let root read any file (util-linux's setpriv).
fn run_bound_by_permissions(lake: &Path, args: &[&str]) -> std::process::Output {
    let root = stdout(&ok(std::process::Command::new("id")
        .arg("-u")
        .output()
        .unwrap()))
    .trim()
        == "0";
    let mut c = match root {
        true => {
            let mut c = std::process::Command::new("setpriv");
            c.arg("--bounding-set=-dac_override,-dac_read_search")
                .arg(env!("CARGO_BIN_EXE_turnlake"));
            c
        }
        false => bin(),
    };
    c.arg("--lake").arg(lake).args(args).output().unwrap()
}

/// Someone else's folder: a FIFO named like a run, a symlink loop, a file
/// without read permission, a symlink to a folder and one to a file outside
/// it neither hang nor stop the walk; each is skipped with a warning naming
/// it and counted in the closing report, and the good runs ingest.
/// `--follow` follows the symlinks (a loop is still skipped).
#[test]
fn a_folder_walk_skips_what_is_not_a_readable_regular_file_and_counts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for f in ["colon.v1.traj.json", "sep.v2.traj.json"] {
        std::fs::copy(fixtures().join("mswea").join(f), input.join(f)).unwrap();
    }
    let fifo = input.join("blocked.traj.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink(&input, input.join("loop")).unwrap();
    let unreadable = input.join("secret.traj.json");
    std::fs::copy(fixtures().join("mswea/colon.v1.traj.json"), &unreadable).unwrap();
    std::fs::set_permissions(
        &unreadable,
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    // Elsewhere: a folder with a third run, and a file of "yours".
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut third: serde_json::Value = serde_json::from_slice(
        &std::fs::read(fixtures().join("mswea/colon.v1.traj.json")).unwrap(),
    )
    .unwrap();
    third["info"]["note"] = "the third run".into();
    std::fs::write(elsewhere.join("third.traj.json"), third.to_string()).unwrap();
    std::fs::write(
        elsewhere.join("credentials"),
        "aws_secret_access_key = hunter2",
    )
    .unwrap();
    std::os::unix::fs::symlink(&elsewhere, input.join("linked")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("credentials"), input.join("creds.traj.json"))
        .unwrap();
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    let lake = tmp.path().join("lake");
    let o = run_bound_by_permissions(&lake, &["ingest", "mswea", input.to_str().unwrap()]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    let skipped = [
        "blocked.traj.json",
        "creds.traj.json",
        "linked",
        "loop",
        "secret.traj.json",
    ];
    for name in skipped {
        assert!(
            err.contains(&format!("warning: skipping {}", input.join(name).display())),
            "{name}: {err}"
        );
    }
    assert!(err.contains("Permission denied"), "{err}");
    assert!(
        out.contains(&format!("skipped: {} entries", skipped.len())),
        "{out}"
    );
    assert_eq!(counts(&o), (2, 2, 0, 0));

    // With --follow: the linked folder's run and the symlinked file are
    // read (the "credentials" one a reject), the loop is still skipped.
    let lake = tmp.path().join("followed");
    let o = run_bound_by_permissions(
        &lake,
        &["--follow", "ingest", "mswea", input.to_str().unwrap()],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "warning: skipping {}",
            input.join("loop").display()
        )),
        "{err}"
    );
    assert!(!err.contains("linked"), "{err}");
    assert_eq!(counts(&o), (4, 3, 0, 1));
    assert!(out.contains("skipped: 3 entries"), "{out}");
}

/// A panic that ends a command is one line naming the command, its input
/// and what to do; the backtrace comes only when `RUST_BACKTRACE` asks.
#[test]
fn a_panic_is_one_line_naming_the_command_and_its_input() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let input = fixtures().join("mswea");
    let ingest = |backtrace: Option<&str>| {
        let mut c = bin();
        c.args([
            "--lake",
            lake.to_str().unwrap(),
            "ingest",
            "mswea",
            input.to_str().unwrap(),
        ])
        .env("TURNLAKE_FAILPOINT", "panic@before-lake-commit")
        .env_remove("RUST_BACKTRACE");
        if let Some(b) = backtrace {
            c.env("RUST_BACKTRACE", b);
        }
        c.output().unwrap()
    };
    let o = ingest(None);
    assert_eq!(o.status.code(), Some(101));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("turnlake: `turnlake --lake "), "{err}");
    assert!(
        lines[0].contains(&format!("ingest mswea {}", input.display())),
        "{err}"
    );
    assert!(
        lines[0].contains("stopped on a bug (fail point before-lake-commit:1 panicked at src/"),
        "{err}"
    );
    assert!(
        lines[0].ends_with(
            "please report it with the command and its input (RUST_BACKTRACE=1 shows where)"
        ),
        "{err}"
    );

    let o = ingest(Some("1"));
    assert_eq!(o.status.code(), Some(101));
    let err = stderr(&o);
    assert!(err.lines().count() > 3, "{err}");
    assert!(err.contains("turnlake::failpoint::hit"), "{err}");
    assert!(
        err.lines().last().unwrap().contains("stopped on a bug"),
        "{err}"
    );
}

/// Each cause of a failed command's error said once: the `turnlake:` line's
/// causes (split at ": ") and the hint, none twice.
fn assert_each_cause_once(what: &str, err: &str) {
    let line = err
        .lines()
        .find(|l| l.starts_with("turnlake: "))
        .unwrap_or_else(|| panic!("{what}: no error line in {err}"));
    let mut causes: Vec<&str> = line["turnlake: ".len()..]
        .split(": ")
        .map(str::trim)
        .collect();
    causes.extend(err.lines().filter_map(|l| l.strip_prefix("hint: ")));
    for (i, c) in causes.iter().enumerate() {
        assert!(
            !causes[i + 1..]
                .iter()
                .any(|d| d.contains(c) || c.contains(d)),
            "{what}: the cause {c:?} is said twice in {err}"
        );
    }
}

/// What a full disk does to an ingest: the ingest run on a small tmpfs
/// (mounted in a mount namespace of its own, so nothing outlives it), its
/// exit status and error, and a copy of the lake it left. `None` where this
/// machine cannot mount one (not root); under `CI=true` that fails.
struct FullDisk {
    code: Option<i32>,
    err: String,
    lake: std::path::PathBuf,
}

fn ingest_onto_a_full_disk(
    work: &Path,
    input: &Path,
    kind: &str,
    disk_kib: u64,
) -> Option<FullDisk> {
    let mnt = work.join("disk");
    let out = work.join("left");
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let script = r#"mount -t tmpfs -o size="$1"k tmpfs "$2" || exit 99
"$4" --lake "$2/lake" ingest "$5" "$6" > "$3/stdout" 2> "$3/stderr"
echo $? > "$3/code"
cp -a "$2/lake" "$3/lake""#;
    let o = std::process::Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(disk_kib.to_string())
        .arg(&mnt)
        .arg(&out)
        .arg(env!("CARGO_BIN_EXE_turnlake"))
        .arg(kind)
        .arg(input)
        .env("TURNLAKE_INGEST_FLUSH", "20")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    if !out.join("code").exists() {
        let why = format!("cannot mount a tmpfs here: {}", stderr(&o));
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("the full-disk test did not run: {why}");
        return None;
    }
    Some(FullDisk {
        code: std::fs::read_to_string(out.join("code"))
            .unwrap()
            .trim()
            .parse()
            .ok(),
        err: std::fs::read_to_string(out.join("stderr")).unwrap(),
        lake: out.join("lake"),
    })
}

/// The bytes under a folder.
fn du(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn trajectories_of(lake: &Path) -> (String, String) {
    let r = sql(
        lake,
        "SELECT count(*), md5(string_agg(traj_id || ':' || traj_sha, ',' ORDER BY traj_id)) FROM trajectories",
    );
    (r[0][0].clone(), r[0][1].clone())
}

/// A disk that fills mid-ingest: a non-zero exit naming the device error
/// once, the lake at its last commit, and a rerun with space equal to an
/// uninterrupted ingest.
#[test]
fn a_full_disk_fails_the_ingest_once_leaves_the_last_commit_and_a_rerun_completes() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 13, (0, 0, 240, 0), None);
    let input = corpus.join("mini-coder");
    let reference = tmp.path().join("reference");
    let o = bin()
        .args([
            "--lake",
            reference.to_str().unwrap(),
            "ingest",
            "mini-coder",
            input.to_str().unwrap(),
        ])
        .env("TURNLAKE_INGEST_FLUSH", "20")
        .output()
        .unwrap();
    ok(o);
    let whole = trajectories_of(&reference);
    let Some(full) =
        ingest_onto_a_full_disk(tmp.path(), &input, "mini-coder", du(&reference) / 1024 / 2)
    else {
        return;
    };
    assert_ne!(full.code, Some(0), "{}", full.err);
    assert_eq!(
        full.err.matches("No space left on device").count(),
        1,
        "{}",
        full.err
    );
    assert_each_cause_once("full disk", &full.err);
    // The lake reads as one of its commits: whole flushes of 20.
    let (n, _) = trajectories_of(&full.lake);
    let n: u64 = n.parse().unwrap();
    assert!(n.is_multiple_of(20) && n < 240, "{n} trajectories");
    ok(run(
        &full.lake,
        &["ingest", "mini-coder", input.to_str().unwrap()],
    ));
    assert_eq!(trajectories_of(&full.lake), whole);
}

/// Every error of a table of failing commands says each cause once, the
/// first words naming what failed.
#[test]
fn each_cause_of_a_failed_command_is_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ingest_limited(&lake, "mswea", &fixtures().join("mswea"), &[]);
    let bad_toml = tmp.path().join("pipeline.toml");
    std::fs::write(&bad_toml, "[inputs]\nmswea = [\"runs\"\n").unwrap();
    let missing = tmp.path().join("no-lake");
    let server = crate::s3::S3Server::start();
    let mut s3 = bin();
    crate::s3::aws_env(&mut s3, &server.endpoint(), "wrong-secret");
    s3.args(["--lake", &crate::s3::s3_url("lake"), "tables"]);
    let cases: Vec<(&str, std::process::Output, &str)> = vec![
        (
            "bad column",
            run(&lake, &["sql", "SELECT no_such_column FROM turns"]),
            "no_such_column",
        ),
        ("missing lake", run(&missing, &["tables"]), "no-lake"),
        (
            "bad TOML",
            bin().arg("build").arg(&bad_toml).output().unwrap(),
            "pipeline.toml",
        ),
        ("S3 403", s3.output().unwrap(), "403"),
    ];
    for (what, o, names) in &cases {
        assert!(!o.status.success(), "{what}");
        let err = stderr(o);
        assert!(err.contains(names), "{what}: {err}");
        assert_each_cause_once(what, &err);
    }
    let corpus = tmp.path().join("corpus");
    synth_corpus(&corpus, 13, (0, 0, 120, 0), None);
    if let Some(full) =
        ingest_onto_a_full_disk(tmp.path(), &corpus.join("mini-coder"), "mini-coder", 256)
    {
        assert_each_cause_once("full disk", &full.err);
    }
}
