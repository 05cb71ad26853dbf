//! Streaming steps hold a bounded amount of memory: `export sft` and
//! `validate` stream the mix in row_id order, so their peak RSS at 4× the
//! mix is within 20% of the peak at 1×, with a stream budget
//! (`TURNLAKE_STREAM_MEMORY`) below the 4× mix. Untimed: it measures memory.

use crate::common::*;
use std::path::Path;
use std::process::Stdio;

/// Run `turnlake --lake LAKE ARGS` to completion and return its peak RSS in
/// KiB, from the kernel's accounting of that one child (`wait4`).
// The child is reaped by `wait4` below, which std's `wait` cannot stand in for.
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(lake: &Path, args: &[&str]) -> i64 {
    let log = tempfile::NamedTempFile::new().unwrap();
    // A small stream budget, so that 4x the mix is far beyond it.
    let child = bin()
        .env("TURNLAKE_STREAM_MEMORY", "16")
        .arg("--lake")
        .arg(lake)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(log.reopen().unwrap()))
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which std has not reaped (we never call wait on it).
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "turnlake {} failed:\n{}",
        args.join(" "),
        std::fs::read_to_string(log.path()).unwrap_or_default()
    );
    usage.ru_maxrss
}

/// mini-coder runs with long observations (about 85 KB a run), verified and
/// submitting at turn 24, so each becomes one finish_mini row of the mix.
fn write_long_runs(path: &Path, runs: usize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for r in 0..runs {
        let mut messages = vec![
            serde_json::json!({"role": "system", "content": "You are a careful engineer."}),
            serde_json::json!({"role": "user", "content": format!("Fix issue {r} in the parser.")}),
        ];
        for t in 1..=24 {
            let command = if t == 24 {
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
                    .to_string()
            } else {
                format!("cat -n src/module_{t}.py")
            };
            messages.push(serde_json::json!({"role": "assistant",
                "content": format!("THOUGHT: step {t} of run {r}.\n\n```bash\n{command}\n```")}));
            let listing: String = (0..60)
                .map(|i| format!("{i:>5}  value_{r}_{t}_{i} = compute(\"é漢 {i}\", depth={t})\n"))
                .collect();
            messages.push(serde_json::json!({"role": "user",
                "content": format!("<returncode>0</returncode>\n<output>\n{listing}</output>")}));
        }
        let record = serde_json::json!({"instance_id": format!("org__repo.{r:06}.func_pm_x__{r}"),
            "messages": messages, "patch": "diff", "model": "m", "verified": true});
        writeln!(out, "{record}").unwrap();
    }
    out.flush().unwrap();
}

/// A lake whose mix holds `runs` long runs; returns it and its mix's content bytes.
fn mixed_lake(dir: &Path, runs: usize) -> (std::path::PathBuf, i64) {
    std::fs::create_dir_all(dir.join("mini")).unwrap();
    write_long_runs(&dir.join("mini/shard.jsonl"), runs);
    let lake = dir.join("lake");
    let albedo = fixtures().join("select/albedo");
    ok(run(&lake, &["ingest", "albedo", albedo.to_str().unwrap()]));
    ok(run(
        &lake,
        &["ingest", "mini-coder", dir.join("mini").to_str().unwrap()],
    ));
    for step in ["credit", "select", "mix"] {
        ok(run(&lake, &[step]));
    }
    let bytes = scalar(
        &lake,
        "SELECT sum(octet_length(m.content)) FROM sft_mix r JOIN messages m \
         ON m.traj_id = r.traj_id AND (r.upto_msg IS NULL OR m.idx <= r.upto_msg)",
    );
    (lake, bytes.parse().unwrap())
}

#[test]
fn export_and_validate_memory_does_not_grow_with_the_mix() {
    let (small_dir, large_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (small, small_bytes) = mixed_lake(small_dir.path(), 200);
    let (large, large_bytes) = mixed_lake(large_dir.path(), 800);
    assert!(
        large_bytes > 3 * small_bytes,
        "{small_bytes} vs {large_bytes}"
    );
    for args in [
        vec!["export", "sft", "--out", "OUT"],
        vec!["export", "sft", "--format", "parquet", "--out", "OUT"],
        vec!["validate"],
    ] {
        let rss = |lake: &Path, dir: &Path| {
            let out = dir.join("mix.jsonl");
            let args: Vec<&str> = args
                .iter()
                .map(|a| {
                    if *a == "OUT" {
                        out.to_str().unwrap()
                    } else {
                        a
                    }
                })
                .collect();
            peak_rss_kib(lake, &args)
        };
        let (one, four) = (rss(&small, small_dir.path()), rss(&large, large_dir.path()));
        eprintln!(
            "{}: peak RSS {} MiB at 1x ({} MiB of mix content), {} MiB at 4x ({} MiB)",
            args.join(" "),
            one / 1024,
            small_bytes >> 20,
            four / 1024,
            large_bytes >> 20
        );
        assert!(
            (four as f64) < 1.2 * one as f64,
            "{}: peak RSS grew from {one} KiB to {four} KiB with a 4x mix",
            args.join(" ")
        );
    }
}
