//! The pipeline's SQL on a loopback Ballista cluster: a scheduler and two
//! executors (`turnlake cluster ...`) started here on free ports and stopped
//! afterwards. A build with `--cluster` gives the same tables and the same
//! export bytes as a local build; a query with the turn-rule UDFs gives the
//! local result; an executor killed mid-step either leaves the step's result
//! or a clear error with nothing committed.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A scheduler and its executors; all killed when dropped.
struct Cluster {
    url: String,
    /// The processes' stderr.
    logs: tempfile::TempDir,
    scheduler: Child,
    executors: Vec<Child>,
}

/// Spawn `turnlake ARGS` (its stderr to `log`) and wait for the stdout line
/// starting with `wanted`.
fn spawn_until(args: &[&str], wanted: &str, log: &Path) -> (Child, String) {
    let mut child = bin()
        // The scheduler logs each job it accepts (the kill below waits for one).
        .env("RUST_LOG", "ballista_scheduler=info")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("spawn turnlake cluster");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let wanted_owned = wanted.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with(&wanted_owned) {
                let _ = tx.send(line);
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => (child, line),
        Err(_) => {
            let _ = child.kill();
            panic!(
                "`turnlake {}` never printed {wanted:?}:\n{}",
                args.join(" "),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
}

impl Cluster {
    fn start(executors: usize) -> Cluster {
        let logs = tempfile::tempdir().unwrap();
        // A short executor timeout so a killed executor is noticed in seconds.
        let (scheduler, line) = spawn_until(
            &[
                "cluster",
                "scheduler",
                "--bind",
                "127.0.0.1:0",
                "--executor-timeout",
                "3",
            ],
            "turnlake scheduler listening on ",
            &logs.path().join("scheduler.log"),
        );
        let url = line.rsplit(' ').next().unwrap().to_string();
        let executors = (0..executors)
            .map(|i| {
                spawn_until(
                    &[
                        "cluster",
                        "executor",
                        "--scheduler",
                        &url,
                        "--concurrency",
                        "2",
                        "--heartbeat",
                        "1",
                    ],
                    "turnlake executor ready",
                    &logs.path().join(format!("executor-{i}.log")),
                )
                .0
            })
            .collect();
        Cluster {
            url,
            logs,
            scheduler,
            executors,
        }
    }

    /// What the scheduler wrote to stderr so far.
    fn scheduler_log(&self) -> String {
        std::fs::read_to_string(self.logs.path().join("scheduler.log")).unwrap_or_default()
    }

    /// Jobs the scheduler has accepted so far.
    fn jobs_submitted(&self) -> usize {
        self.scheduler_log().matches("Job submitted").count()
    }

    fn run(&self, lake: &Path, args: &[&str]) -> std::process::Output {
        bin()
            .arg("--lake")
            .arg(lake)
            .args(["--cluster", &self.url])
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self.executors.iter_mut().chain([&mut self.scheduler]) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Table `t` holds the same rows through `a` as through `b`; on a
/// difference, name the table and the first rows that differ.
/// The child's output once it exits, or once it is killed at `deadline`
/// (then `true`).
fn wait_with_deadline(mut child: Child, deadline: Duration) -> (std::process::Output, bool) {
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stalled = child.try_wait().unwrap().is_none();
    if stalled {
        child.kill().unwrap();
    }
    (child.wait_with_output().unwrap(), stalled)
}

fn same_rows(
    t: &str,
    a: &dyn Fn(&[&str]) -> std::process::Output,
    b: &dyn Fn(&[&str]) -> std::process::Output,
) {
    let tables = [t.to_string()];
    let (x, y) = (table_contents(a, &tables), table_contents(b, &tables));
    if x != y {
        let only = |p: &[String], q: &[String]| -> Vec<String> {
            p.iter()
                .filter(|r| !q.contains(r))
                .take(3)
                .cloned()
                .collect()
        };
        panic!(
            "{t} differs: {} vs {} lines\nonly in the first: {:#?}\nonly in the second: {:#?}",
            x.len(),
            y.len(),
            only(&x, &y),
            only(&y, &x)
        );
    }
}

/// Lake commits recorded so far.
fn lake_commits(lake: &Path) -> usize {
    std::fs::read_dir(lake.join("_turnlake/log"))
        .map(|d| d.flatten().count())
        .unwrap_or(0)
}

#[test]
fn the_pipeline_on_a_loopback_cluster_matches_the_local_run() {
    let mut cluster = Cluster::start(2);
    let dir = tempfile::tempdir().unwrap();
    synth_corpus(&dir.path().join("corpus"), 5, (3, 6, 60, 4), None);
    for name in ["local", "cluster"] {
        let job = dir.path().join(name);
        copy_dir(&dir.path().join("corpus"), &job.join("corpus"));
        std::fs::write(job.join("pipeline.toml"), PIPELINE).unwrap();
    }
    let (local, remote) = (dir.path().join("local"), dir.path().join("cluster"));
    let pipeline = |job: &Path| job.join("pipeline.toml").to_str().unwrap().to_string();
    ok(run(&local.join("lake"), &["build", &pipeline(&local)]));
    let built = ok(cluster.run(&remote.join("lake"), &["build", &pipeline(&remote)]));
    assert!(stdout(&built).contains("export sft"), "{}", stdout(&built));

    // Every table, and the export byte for byte.
    let tables = lake_tables(&local.join("lake"));
    assert!(tables.len() >= 10, "{tables:?}");
    assert_eq!(tables, lake_tables(&remote.join("lake")));
    let read_local = |args: &[&str]| run(&local.join("lake"), args);
    let read_remote = |args: &[&str]| run(&remote.join("lake"), args);
    for t in &tables {
        same_rows(t, &read_remote, &read_local);
    }
    assert_eq!(
        std::fs::read(remote.join("out/mix.jsonl")).unwrap(),
        std::fs::read(local.join("out/mix.jsonl")).unwrap()
    );

    // A Parquet export of each lake, byte for byte.
    let parquet = |job: &Path| {
        let out = job.join("out/mix.parquet");
        let args = [
            "export",
            "sft",
            "--format",
            "parquet",
            "--out",
            out.to_str().unwrap(),
        ];
        (args.map(str::to_string), out)
    };
    let (args, local_parquet) = parquet(&local);
    ok(run(
        &local.join("lake"),
        &args.each_ref().map(String::as_str),
    ));
    let (args, remote_parquet) = parquet(&remote);
    ok(cluster.run(&remote.join("lake"), &args.each_ref().map(String::as_str)));
    assert_eq!(
        std::fs::read(remote_parquet).unwrap(),
        std::fs::read(local_parquet).unwrap()
    );

    // The report and a query over the UDFs, distributed vs local.
    let stats = ["stats", "--format", "json"];
    assert_eq!(
        stdout(&ok(cluster.run(&local.join("lake"), &stats))),
        stdout(&ok(run(&local.join("lake"), &stats)))
    );
    let udfs = "SELECT m.role, cmd_kind(bash_command(m.content)) AS kind, count(*) AS n, \
                count(*) FILTER (WHERE obs_failed(m.content)) AS failed, \
                (SELECT sum(cardinality(cited_outputs(explanation))) FROM judgments) AS cites \
                FROM messages m GROUP BY 1, 2 ORDER BY 1, 2";
    let q = ["sql", udfs, "--format", "csv"];
    let distributed = stdout(&ok(cluster.run(&local.join("lake"), &q)));
    assert_eq!(distributed, stdout(&ok(run(&local.join("lake"), &q))));
    assert!(distributed.lines().count() > 3, "{distributed}");

    // An executor killed during a step: the step completes on the other one
    // with the local result, or fails clearly with nothing committed.
    let lake = remote.join("lake");
    ok(run(&lake, &["credit"]));
    let before = (lake_commits(&lake), table_contents(&read_remote, &tables));
    let jobs = cluster.jobs_submitted();
    let step = bin()
        .arg("--lake")
        .arg(&lake)
        .args(["--cluster", &cluster.url, "select"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill an executor once the step's first distributed job is running.
    let waited = std::time::Instant::now();
    while cluster.jobs_submitted() == jobs {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "no job reached the scheduler"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.executors[0].kill().unwrap();
    // Ballista 55 can stall a job that lost an executor mid-stage (the
    // scheduler rolls the stage back and then ignores the rerun's task
    // updates), and the client then waits forever: give the step a deadline,
    // after which it is stopped and must have committed nothing either.
    let (out, stalled) = wait_with_deadline(step, Duration::from_secs(120));
    if out.status.success() {
        for t in &tables {
            same_rows(t, &read_remote, &read_local);
        }
    } else {
        let err = format!("{}\nscheduler:\n{}", stderr(&out), cluster.scheduler_log());
        if !stalled {
            assert!(err.starts_with("turnlake: "), "{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(lake_commits(&lake), before.0, "{err}");
        assert_eq!(table_contents(&read_remote, &tables), before.1, "{err}");
    }
    eprintln!(
        "select with an executor killed: {}",
        if out.status.success() {
            "completed".into()
        } else if stalled {
            "stalled (Ballista), stopped with nothing committed".into()
        } else {
            stderr(&out)
        }
    );
}
