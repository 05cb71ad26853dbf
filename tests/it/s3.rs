//! S3-backed lakes and inputs against a real S3 server (s3s-fs, installed by
//! `./setup.sh`) that each test starts on a free loopback port with its own
//! bucket folder and stops afterwards. No request leaves loopback: every
//! command gets keys, the endpoint and `AWS_EC2_METADATA_DISABLED=true`.

use crate::common::*;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BUCKET: &str = "lake-bucket";
const ACCESS_KEY: &str = "turnlake-test-key";
const SECRET_KEY: &str = "s3cr3t-Turnlake-9f2c41";

/// The s3s-fs binary: `TURNLAKE_S3S_FS`, else where `./setup.sh` installs it.
fn s3s_fs() -> PathBuf {
    if let Some(p) = std::env::var_os("TURNLAKE_S3S_FS") {
        return PathBuf::from(p);
    }
    let p = tools_dir().join("bin/s3s-fs");
    assert!(
        p.exists(),
        "{} is missing: run ./setup.sh (the README's commands do)",
        p.display()
    );
    p
}

/// A running s3s-fs on loopback; stopped when dropped.
pub(crate) struct S3Server {
    child: Option<Child>,
    port: u16,
    root: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Wait until the server listens; fail with its log if it exits first.
fn wait_for_port(port: u16, child: &mut Child, log: &Path) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        let said = || std::fs::read_to_string(log).unwrap_or_default();
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "s3s-fs exited ({status}) before listening on {port}:\n{}",
                said()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "s3s-fs did not start on port {port}:\n{}",
            said()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl S3Server {
    pub(crate) fn start() -> S3Server {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(BUCKET)).unwrap();
        let mut s = S3Server {
            child: None,
            port: free_port(),
            root,
        };
        s.resume();
        s
    }

    fn resume(&mut self) {
        use std::os::unix::process::CommandExt;
        let log = std::fs::File::create(self.root.path().join("s3s-fs.log")).unwrap();
        let mut c = Command::new(s3s_fs());
        c.args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(self.root.path())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: prctl is async-signal-safe; the server dies with the test
        // thread that started it, even when the test binary is killed.
        unsafe {
            c.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = c.spawn().expect("start s3s-fs");
        wait_for_port(self.port, &mut child, &self.root.path().join("s3s-fs.log"));
        self.child = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The bucket's folder on disk (s3s-fs keeps an object at its key's path).
    pub(crate) fn bucket_dir(&self) -> PathBuf {
        self.root.path().join(BUCKET)
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `turnlake` with the environment a user of this server would set.
    fn turnlake(&self) -> Command {
        let mut c = bin();
        aws_env(&mut c, &self.endpoint(), SECRET_KEY);
        c
    }

    /// A client of our own, configured explicitly (not from the environment).
    fn client(&self) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .build()
            .unwrap()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Keys, endpoint and region as the AWS tools read them; never the metadata address.
pub(crate) fn aws_env(c: &mut Command, endpoint: &str, secret: &str) {
    for k in ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"] {
        c.env_remove(k);
    }
    c.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent");
}

pub(crate) fn s3_url(key: &str) -> String {
    format!("s3://{BUCKET}/{key}")
}

/// Every file under `dir`, by its path relative to `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_pipeline_on_an_s3_lake_from_s3_inputs_matches_the_local_run() {
    let server = S3Server::start();
    let local = tempfile::tempdir().unwrap();
    synth_corpus(&local.path().join("corpus"), 11, (3, 6, 40, 4), None);
    std::fs::write(local.path().join("pipeline.toml"), PIPELINE).unwrap();
    let lake = local.path().join("lake");
    ok(run(
        &lake,
        &[
            "build",
            local.path().join("pipeline.toml").to_str().unwrap(),
        ],
    ));

    // The same corpus and pipeline file as objects in the bucket.
    let job = server.bucket_dir().join("job");
    copy_dir(&local.path().join("corpus"), &job.join("corpus"));
    std::fs::write(job.join("pipeline.toml"), PIPELINE).unwrap();
    let s3_lake = s3_url("job/lake");
    let s3_run = |args: &[&str]| {
        server
            .turnlake()
            .args(["--lake", &s3_lake])
            .args(args)
            .output()
            .unwrap()
    };
    let built = ok(s3_run(&["build", &s3_url("job/pipeline.toml")]));
    let mut printed = format!("{}{}", stdout(&built), stderr(&built));
    assert!(printed.contains("export sft"), "{printed}");

    // Identical table contents and a byte-identical export.
    let tables = lake_tables(&lake);
    assert!(tables.len() >= 10, "{tables:?}");
    let local_run = |args: &[&str]| run(&lake, args);
    assert_eq!(
        table_contents(&s3_run, &tables),
        table_contents(&local_run, &tables)
    );
    assert_eq!(
        std::fs::read(job.join("out/mix.jsonl")).unwrap(),
        std::fs::read(local.path().join("out/mix.jsonl")).unwrap()
    );
    assert!(job.join("out/mix.jsonl.manifest.json").exists());

    // The artifacts on S3 were verified against verdict.json; its URIs recorded.
    assert_eq!(
        scalar_with(&s3_run, "SELECT count(*) FROM evals WHERE hashes_verified AND generated_samples_uri LIKE 's3://%'"),
        "3"
    );

    // A second build finds every step current, reading its manifest back from S3.
    let again = ok(s3_run(&["build", &s3_url("job/pipeline.toml")]));
    printed += &format!("{}{}", stdout(&again), stderr(&again));
    let skipped = stdout(&again)
        .lines()
        .filter(|l| l.contains("| skipped "))
        .count();
    assert_eq!(skipped, 8, "{}", stdout(&again));

    // rebuild reads the manifest from S3 and reproduces the export byte for byte.
    let rebuilt = ok(server
        .turnlake()
        .args(["rebuild", &s3_url("job/out/mix.jsonl.manifest.json")])
        .output()
        .unwrap());
    assert!(
        stdout(&rebuilt).contains("every sha256 matches"),
        "{}",
        stdout(&rebuilt)
    );
    printed += &format!("{}{}", stdout(&rebuilt), stderr(&rebuilt));

    // The secret is nowhere: not in any object, not in any output.
    for f in files_under(&server.bucket_dir()) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes
                .windows(SECRET_KEY.len())
                .any(|w| w == SECRET_KEY.as_bytes()),
            "{} holds the secret key",
            f.display()
        );
    }
    assert!(!printed.contains(SECRET_KEY));
}

fn scalar_with(run: &dyn Fn(&[&str]) -> std::process::Output, q: &str) -> String {
    let o = ok(run(&["sql", q, "--format", "csv"]));
    stdout(&o).lines().nth(1).unwrap_or_default().to_string()
}

#[test]
fn a_second_put_if_absent_of_a_lake_log_or_delta_commit_is_refused() {
    // s3s-fs checks If-None-Match and then writes, which is not atomic under
    // true concurrency: the semantics are tested sequentially.
    let server = S3Server::start();
    copy_dir(&fixtures().join("mswea"), &server.bucket_dir().join("in"));
    ok(server
        .turnlake()
        .args(["--lake", &s3_url("lake"), "ingest", "mswea", &s3_url("in")])
        .output()
        .unwrap());
    let client = server.client();
    let rt = tokio::runtime::Runtime::new().unwrap();
    use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
    for key in [
        "lake/_turnlake/log/00000000000000000001.json",
        "lake/trajectories/_delta_log/00000000000000000000.json",
    ] {
        let before = std::fs::read(server.bucket_dir().join(key)).unwrap();
        let put = rt.block_on(client.put_opts(
            &object_store::path::Path::from(key),
            PutPayload::from_static(b"{}"),
            PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            },
        ));
        match put {
            Err(object_store::Error::AlreadyExists { source, .. }) => {
                assert!(source.to_string().contains("412"), "{source}")
            }
            other => panic!("{key}: a second put-if-absent was not refused: {other:?}"),
        }
        assert_eq!(
            std::fs::read(server.bucket_dir().join(key)).unwrap(),
            before
        );
    }

    // The lake log's own writer reports the lost race as a conflict.
    let log = turnlake::lake::LakeLog::new(
        std::sync::Arc::new(client),
        &object_store::path::Path::from("lake"),
        &s3_url("lake"),
    );
    let latest = rt.block_on(log.latest()).unwrap().expect("a lake commit");
    let err = rt.block_on(log.write(&latest)).unwrap_err();
    assert!(
        matches!(err, turnlake::lake::LakeError::Conflict { .. }),
        "{err}"
    );
}

#[test]
fn wrong_credentials_are_a_403_with_nothing_written_and_no_secret_printed() {
    let server = S3Server::start();
    copy_dir(&fixtures().join("mswea"), &server.bucket_dir().join("in"));
    let wrong = "wrong-Secret-0e1d77aa";
    let mut c = bin();
    aws_env(&mut c, &server.endpoint(), wrong);
    let o = c
        .args(["--lake", &s3_url("lake"), "ingest", "mswea", &s3_url("in")])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("403"), "{err}");
    assert!(err.contains("access denied"), "{err}");
    assert!(
        err.contains(&s3_url("lake")) || err.contains("/lake"),
        "{err}"
    );
    assert!(!err.contains(wrong) && !stdout(&o).contains(wrong), "{err}");
    assert!(!server.bucket_dir().join("lake").exists());
}

#[test]
fn no_credentials_and_no_metadata_lookup_is_a_clear_error() {
    let mut c = bin();
    for k in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_SKIP_SIGNATURE",
    ] {
        c.env_remove(k);
    }
    let o = c
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .args(["--lake", "s3://b/lake", "tables"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no S3 credentials"), "{}", stderr(&o));
}

#[test]
fn a_server_that_never_answers_fails_within_the_timeout_with_a_clear_error() {
    // A listener that accepts connections and never says a word.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let mut c = bin();
    aws_env(&mut c, &format!("http://127.0.0.1:{port}"), SECRET_KEY);
    let started = Instant::now();
    let o = c
        .env("TURNLAKE_S3_TIMEOUT", "1")
        .env("TURNLAKE_S3_RETRIES", "1")
        .args(["--lake", &s3_url("lake"), "tables"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(!o.status.success());
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let err = stderr(&o);
    assert!(err.contains("did not answer in time"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}

/// Table name -> version, as `turnlake tables` prints them.
fn table_versions(o: &std::process::Output) -> std::collections::BTreeMap<String, u64> {
    stdout(o)
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(['|', '│']).map(str::trim).collect();
            (cells.len() > 4).then(|| Some((cells[1].to_string(), cells[3].parse().ok()?)))?
        })
        .collect()
}

/// Stop the server in the middle of an ingest of `kind` from S3 into an S3
/// lake; after a restart the lake reads as its last lake commit, and a
/// rerun ends where an uninterrupted ingest does, with no reject left behind.
fn stop_mid_ingest(kind: &str, corpus_dir: &str, sizes: (u32, u32, u32, u32)) {
    let mut server = S3Server::start();
    let corpus = tempfile::tempdir().unwrap();
    synth_corpus(corpus.path(), 5, sizes, None);
    copy_dir(
        &corpus.path().join(corpus_dir),
        &server.bucket_dir().join("in"),
    );
    let lake = s3_url("lake");
    let ingest = |server: &S3Server| {
        let mut c = server.turnlake();
        c.env("TURNLAKE_INGEST_FLUSH", "8")
            .env("TURNLAKE_S3_TIMEOUT", "2")
            .env("TURNLAKE_S3_RETRIES", "1")
            .args(["--lake", &lake, "ingest", kind, &s3_url("in")]);
        c
    };

    // Stop the server once the ingest has made its second lake commit.
    let mut child = ingest(&server)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = server.bucket_dir().join("lake/_turnlake/log");
    let started = Instant::now();
    while !log.join("00000000000000000002.json").exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{kind}: the ingest ended before the server was stopped"
        );
        assert!(started.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(5));
    }
    server.stop();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(stderr(&o).contains("127.0.0.1"), "{}", stderr(&o));

    // After a restart every table reads at the last lake commit's version.
    server.resume();
    let last = files_under(&log)
        .iter()
        .filter_map(|p| p.file_stem()?.to_str()?.parse::<u64>().ok())
        .max()
        .unwrap();
    let commit: serde_json::Value =
        serde_json::from_slice(&std::fs::read(log.join(format!("{last:020}.json"))).unwrap())
            .unwrap();
    let committed: std::collections::BTreeMap<String, u64> =
        serde_json::from_value(commit["tables"].clone()).unwrap();
    let tables = ok(server
        .turnlake()
        .args(["--lake", &lake, "tables"])
        .output()
        .unwrap());
    assert_eq!(table_versions(&tables), committed, "{}", stdout(&tables));

    let q = |sql: &str| {
        let o = server
            .turnlake()
            .args(["--lake", &lake, "sql", sql, "--format", "csv"])
            .output()
            .unwrap();
        o.status
            .success()
            .then(|| stdout(&o).lines().nth(1).unwrap_or_default().to_string())
    };
    let fresh = tempfile::tempdir().unwrap();
    let flake = fresh.path().join("lake");
    let whole = ok(run(
        &flake,
        &[
            "ingest",
            kind,
            corpus.path().join(corpus_dir).to_str().unwrap(),
        ],
    ));
    let total: u64 = scalar(&flake, "SELECT count(*) FROM trajectories")
        .parse()
        .unwrap();
    let partial: u64 = q("SELECT count(*) FROM trajectories")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        partial > 0 && partial < total,
        "{partial} of {total} trajectories after commit {last}"
    );

    // A rerun completes to what an uninterrupted ingest holds: the same
    // rows, and no reject made of the storage failure.
    let o = ok(ingest(&server).output().unwrap());
    assert!(counts(&o).0 > 0);
    assert_eq!(counts(&o).3, counts(&whole).3, "rejects: {}", stdout(&o));
    let local_q = |sql: &str| {
        let o = run(&flake, &["sql", sql, "--format", "csv"]);
        o.status
            .success()
            .then(|| stdout(&o).lines().nth(1).unwrap_or_default().to_string())
    };
    for digest in [
        "SELECT count(*) FROM trajectories",
        "SELECT count(*) FROM rejects",
        "SELECT md5(string_agg(turn_sha, ',' ORDER BY turn_sha)) FROM turns",
        "SELECT md5(string_agg(question_id || judgment_key, ',' ORDER BY question_id, judgment_key)) FROM (SELECT question_id, traj_id || coalesce(CAST(answer AS VARCHAR), '-') AS judgment_key FROM judgments)",
    ] {
        assert_eq!(q(digest), local_q(digest), "{digest}");
    }
}

#[test]
fn a_server_stopped_mid_albedo_ingest_leaves_the_last_lake_commit_and_a_rerun_completes() {
    stop_mid_ingest("albedo", "albedo", (6, 10, 0, 0));
}

#[test]
fn a_server_stopped_mid_parquet_ingest_leaves_the_last_lake_commit_and_a_rerun_completes() {
    stop_mid_ingest("mini-coder", "mini-coder", (0, 0, 80, 0));
}

#[test]
fn a_lock_another_machine_stopped_renewing_is_taken_over_after_its_lease_and_a_live_one_is_not() {
    let server = S3Server::start();
    copy_dir(
        &fixtures().join("mswea"),
        &server.bucket_dir().join("mswea"),
    );
    let corpus = tempfile::tempdir().unwrap();
    synth_corpus(corpus.path(), 9, (6, 10, 0, 0), None);
    copy_dir(
        &corpus.path().join("albedo"),
        &server.bucket_dir().join("albedo"),
    );
    let lake = s3_url("lake");
    let ingest = |kind: &str| {
        let mut c = server.turnlake();
        c.env("TURNLAKE_LOCK_LEASE", "1")
            .args(["--lake", &lake, "ingest", kind, &s3_url(kind)]);
        c
    };
    ok(ingest("mswea").output().unwrap());

    // A writer on another machine died holding the lock: after one lease
    // without a renewal the next writer takes it over.
    let lock = server.bucket_dir().join("lake/_turnlake/lock");
    let elsewhere = serde_json::json!({"pid": 1, "host": "elsewhere", "command": "credit", "since": "2026-01-01T00:00:00.000Z"});
    std::fs::write(&lock, elsewhere.to_string()).unwrap();
    let started = Instant::now();
    ok(ingest("albedo").output().unwrap());
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(!lock.exists());

    // A live writer renews its lock: a second writer waits for it however
    // long it takes, and both land.
    let reference = tempfile::tempdir().unwrap();
    let rlake = reference.path().join("lake");
    ok(run(
        &rlake,
        &[
            "ingest",
            "albedo",
            corpus.path().join("albedo").to_str().unwrap(),
        ],
    ));
    ok(run(
        &rlake,
        &[
            "ingest",
            "mswea",
            fixtures().join("mswea").to_str().unwrap(),
        ],
    ));
    let fresh = s3_url("fresh");
    let spawn = |kind: &str| {
        let mut c = server.turnlake();
        // The first writer holds its lock for several leases before each
        // commit, however fast the machine; only its renewals keep it.
        c.env("TURNLAKE_LOCK_LEASE", "0.5")
            .env("TURNLAKE_PAUSE", "before-lake-commit:1.6")
            .args(["--lake", &fresh, "ingest", kind, &s3_url(kind)])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let first = spawn("albedo");
    let fresh_lock = server.bucket_dir().join("fresh/_turnlake/lock");
    let waited = Instant::now();
    while !fresh_lock.exists() {
        assert!(waited.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(5));
    }
    let second = spawn("mswea");
    for child in [first, second] {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // The holder outlived several leases: only its renewals kept the lock,
    // so the lake log holds each writer's commits together, never A B A.
    assert!(
        waited.elapsed() > Duration::from_millis(1500),
        "{:?}",
        waited.elapsed()
    );
    let commands: Vec<String> = files_under(&server.bucket_dir().join("fresh/_turnlake/log"))
        .iter()
        .map(|f| {
            let c: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
            c["command"].as_str().unwrap().to_string()
        })
        .collect();
    let mut runs = commands.clone();
    runs.dedup();
    let mut distinct = runs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        runs.len(),
        distinct.len(),
        "interleaved writers: {commands:?}"
    );
    let digest = "SELECT count(*), md5(string_agg(turn_sha, ',' ORDER BY turn_sha)) FROM turns";
    let o = ok(server
        .turnlake()
        .args(["--lake", &fresh, "sql", digest, "--format", "csv"])
        .output()
        .unwrap());
    let r = run(&rlake, &["sql", digest, "--format", "csv"]);
    assert_eq!(stdout(&o), stdout(&r));
}

/// `harvest --out s3://`: each run is staged locally and published whole
/// into the bucket, a rerun finds every run already there, and ingest reads
/// the runs from the bucket.
#[test]
fn a_harvest_into_s3_publishes_whole_runs_that_ingest_reads() {
    let server = S3Server::start();
    let http = crate::loopback_http::Server::start();
    let tmp = tempfile::tempdir().unwrap();
    let c = crate::harvest::serve_corpus(&http, tmp.path());
    let harvest = || {
        server
            .turnlake()
            .arg("harvest")
            .arg(&c.dashboard)
            .args(["--out", &s3_url("albedo")])
            .output()
            .unwrap()
    };
    let o = ok(harvest());
    assert!(stdout(&o).contains("5 runs: 5 complete"), "{}", stdout(&o));
    for run in &c.runs {
        for (_, name) in crate::harvest::NAMES {
            assert_eq!(
                std::fs::read(server.bucket_dir().join("albedo").join(run).join(name)).unwrap(),
                std::fs::read(c.corpus.join("albedo").join(run).join(name)).unwrap(),
                "{run}/{name}"
            );
        }
    }
    let sent = http.served().len();
    let o = ok(harvest());
    assert!(
        stdout(&o).contains("5 runs: 0 complete, 5 already there"),
        "{}",
        stdout(&o)
    );
    assert_eq!(http.served().len(), sent, "nothing fetched again");
    let lake = tmp.path().join("lake");
    let o = ok(server
        .turnlake()
        .args([
            "--lake",
            lake.to_str().unwrap(),
            "ingest",
            "albedo",
            &s3_url("albedo"),
        ])
        .output()
        .unwrap());
    assert_eq!(counts(&o).3, 0, "{}", stdout(&o));
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM evals WHERE hashes_verified"),
        "5"
    );
}
