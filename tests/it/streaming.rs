//! Streaming steps hold a bounded amount of memory: `export sft` and
//! `validate` stream the mix in row_id order, so their peak RSS at 4× the
//! corpus is within 20% of the peak at 1×. Untimed: it measures memory only.

use crate::common::*;
use std::path::Path;
use std::process::Stdio;

/// Run `turnlake --lake LAKE ARGS` to completion and return its peak RSS in
/// KiB, from the kernel's accounting of that one child (`wait4`).
fn peak_rss_kib(lake: &Path, args: &[&str]) -> i64 {
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = bin()
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

/// A lake with a built mix from a synthetic corpus `scale` times the base size;
/// returns the lake and the bytes of message content in its mix.
fn mixed_lake(dir: &Path, scale: u32) -> (std::path::PathBuf, i64) {
    synth_corpus(&dir.join("corpus"), 3, (4 * scale, 8, 150 * scale, 0), None);
    let lake = dir.join("lake");
    for (kind, sub) in [("albedo", "albedo"), ("mini-coder", "mini-coder")] {
        ok(run(&lake, &["ingest", kind, dir.join("corpus").join(sub).to_str().unwrap()]));
    }
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
    let (small, small_bytes) = mixed_lake(small_dir.path(), 1);
    let (large, large_bytes) = mixed_lake(large_dir.path(), 4);
    assert!(large_bytes > 3 * small_bytes, "{small_bytes} vs {large_bytes}");
    for args in [
        vec!["export", "sft", "--out", "OUT"],
        vec!["validate"],
    ] {
        let rss = |lake: &Path, dir: &Path| {
            let out = dir.join("mix.jsonl");
            let args: Vec<&str> = args
                .iter()
                .map(|a| if *a == "OUT" { out.to_str().unwrap() } else { a })
                .collect();
            peak_rss_kib(lake, &args)
        };
        let (one, four) = (rss(&small, small_dir.path()), rss(&large, large_dir.path()));
        eprintln!(
            "{}: peak RSS {} MiB at 1x ({} MiB of mix content), {} MiB at 4x ({} MiB)",
            args[0],
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
