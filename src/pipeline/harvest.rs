//! `turnlake harvest`: fetch the judge artifacts of the dashboard's eval runs
//! into `<out>/<eval_run_id>/` under their plain names, with the run's
//! dashboard entry beside them, so `ingest albedo <out>` reads them whole.
//!
//! Files are staged locally (`<out>/.harvest/` for a local `out`) and a run
//! is published only when every file of it is complete and matches the
//! sha256 its verdict records: a killed harvest leaves partial files that
//! the rerun resumes with range requests, and nothing half-fetched is ever
//! ingested. A file whose hash does not match is kept aside under
//! `.harvest/mismatched/` and its run reported failed.

use futures::StreamExt;
use reqwest::{header, StatusCode};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

use crate::source::albedo;
use crate::source::dashboard::{DashboardRun, ENTRY_FILE};
use crate::storage::{Location, StorageError};

/// Artifacts fetched only on request: (name on the command line, dashboard
/// kind, plain file name).
pub const EXTRAS: [(&str, &str, &str); 4] = [
    ("progress", "REMOTE_PROGRESS", "progress.jsonl"),
    ("logs", "REMOTE_LOGS", "remote-logs.txt"),
    ("transcript", "EVAL_TRANSCRIPT", "duel-transcript.jsonl"),
    ("judge", "JUDGE_RESULTS", "judge-results.jsonl"),
];

/// Bytes buffered before a write to the partial file: what an interrupted
/// download may fetch twice.
pub const WRITE_BUFFER: usize = 256 * 1024;

#[derive(Debug, Clone)]
pub struct HarvestOptions {
    /// The names of [`EXTRAS`] to fetch beside the three artifacts ingest reads.
    pub extras: BTreeSet<String>,
    /// Downloads at a time.
    pub jobs: usize,
    /// How long a connection may stay silent (connecting, or between two
    /// reads of a body) before the attempt fails.
    pub timeout: Duration,
    /// Further attempts after a transient failure (a 5xx, a cut or silent
    /// connection), with doubling waits.
    pub retries: u32,
    /// The wait before the first retry.
    pub backoff: Duration,
}

/// How one eval run went.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// Fetched now (some of its files may have been there already).
    Complete {
        files: usize,
        bytes: u64,
    },
    /// Every file was already there, complete.
    AlreadyThere,
    Failed {
        url: String,
        reason: String,
    },
}

#[derive(Debug, Clone)]
pub struct RunReport {
    pub eval_run_id: String,
    pub outcome: RunOutcome,
}

/// A failed attempt: the URL, why, and whether another attempt may help.
#[derive(Debug)]
struct Failure {
    url: String,
    reason: String,
    transient: bool,
}

impl Failure {
    fn new(url: &str, reason: impl Into<String>, transient: bool) -> Self {
        Failure {
            url: url.to_string(),
            reason: reason.into(),
            transient,
        }
    }
}

fn storage(url: &str) -> impl Fn(StorageError) -> Failure + '_ {
    move |e| Failure::new(url, e.to_string(), false)
}

fn io(url: &str) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::new(url, e.to_string(), false)
}

/// The HTTP client harvest fetches with: its own connect timeout, and
/// redirects followed only within the host first asked.
pub fn client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    let same_host = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().and_then(|u| u.host_str());
        if attempt.previous().len() > 5 || attempt.url().host_str() != first {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .redirect(same_host)
        .build()
}

/// Where files are staged for `out`: beside them for a local folder, else a
/// folder of the machine's temporary space named after `out`, so that a
/// rerun finds what an interrupted one fetched.
pub fn staging_for(out: &Location) -> PathBuf {
    match out.as_local() {
        Some(p) => p.join(".harvest"),
        None => {
            let key = crate::digest::sha256_hex(out.to_string().as_bytes());
            std::env::temp_dir().join(format!("turnlake-harvest-{}", &key[..16]))
        }
    }
}

/// Fetch `runs` into `out`, `opts.jobs` downloads at a time; one report per
/// run, in the order given.
pub async fn harvest(
    client: &reqwest::Client,
    runs: &[DashboardRun],
    out: &Location,
    opts: &HarvestOptions,
    bar: &indicatif::ProgressBar,
) -> Vec<RunReport> {
    let staging = staging_for(out);
    let files = Files {
        total: runs
            .iter()
            .map(|r| wanted_kinds(r, &opts.extras).len())
            .sum(),
        done: Default::default(),
        bar,
    };
    files.show();
    let mut reports: Vec<(usize, RunReport)> = futures::stream::iter(runs.iter().enumerate())
        .map(|(i, run)| {
            let (staging, files) = (&staging, &files);
            async move {
                let outcome = match harvest_run(client, run, out, staging, opts, files).await {
                    Ok(o) => o,
                    Err(f) => RunOutcome::Failed {
                        url: f.url,
                        reason: f.reason,
                    },
                };
                (
                    i,
                    RunReport {
                        eval_run_id: run.eval_run_id.clone(),
                        outcome,
                    },
                )
            }
        })
        .buffer_unordered(opts.jobs.max(1))
        .collect()
        .await;
    reports.sort_by_key(|(i, _)| *i);
    reports.into_iter().map(|(_, r)| r).collect()
}

/// The files of a harvest, for its progress bar.
struct Files<'a> {
    total: usize,
    done: std::sync::atomic::AtomicUsize,
    bar: &'a indicatif::ProgressBar,
}

impl Files<'_> {
    fn show(&self) {
        let done = self.done.load(std::sync::atomic::Ordering::Relaxed);
        self.bar.set_message(format!("{done}/{} files", self.total));
    }

    fn one_done(&self) {
        self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.show();
    }
}

/// The artifacts harvest fetches of `run` with `extras`: (dashboard kind,
/// plain name), the verdict first.
pub fn wanted_kinds(
    run: &DashboardRun,
    extras: &BTreeSet<String>,
) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<_> = albedo::ARTIFACTS
        .iter()
        .map(|(name, kind)| (*kind, *name))
        .collect();
    for (flag, kind, name) in EXTRAS {
        if extras.contains(flag) && run.artifacts.contains_key(kind) {
            out.push((kind, name));
        }
    }
    out
}

/// One file of a run: its URL and what the verdict records of it.
struct Wanted {
    url: String,
    sha256: Option<String>,
    size: Option<u64>,
}

async fn harvest_run(
    client: &reqwest::Client,
    run: &DashboardRun,
    out: &Location,
    staging: &Path,
    opts: &HarvestOptions,
    files: &Files<'_>,
) -> Result<RunOutcome, Failure> {
    let bar = files.bar;
    let id = &run.eval_run_id;
    let run_out = out.join(id);
    let stage = staging.join(id);
    let url_of = |kind: &str| {
        run.artifacts.get(kind).cloned().ok_or_else(|| {
            Failure::new(
                &format!("{ENTRY_FILE} of {id}"),
                format!("the dashboard lists no {kind} URL"),
                false,
            )
        })
    };
    let there = present(&run_out).await.map_err(storage(id))?;

    // The verdict first: it records the hash of every other file.
    let kinds = wanted_kinds(run, &opts.extras);
    let (verdict_kind, verdict_name) = kinds[0];
    let verdict_url = url_of(verdict_kind)?;
    let mut fetched = Vec::new();
    let verdict_bytes = match there.get(verdict_name) {
        Some(_) => run_out
            .join(verdict_name)
            .read()
            .await
            .map_err(storage(&verdict_url))?,
        None => {
            let staged = stage.join(verdict_name);
            if !staged.exists() {
                fetch_to(client, &verdict_url, &staged, None, opts, bar).await?;
            }
            fetched.push(verdict_name);
            tokio::fs::read(&staged).await.map_err(io(&verdict_url))?
        }
    };
    let verdict: Value = match serde_json::from_slice(&verdict_bytes) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return Err(Failure::new(
                &verdict_url,
                "verdict.json is not a JSON object",
                false,
            ))
        }
    };
    files.one_done();

    let mut bytes = 0u64;
    for (kind, name) in &kinds[1..] {
        let (sha256, size) = recorded(&verdict, name);
        let file = Wanted {
            url: url_of(kind)?,
            sha256,
            size,
        };
        let complete = match there.get(*name) {
            Some(entry) => already_complete(&run_out.join(name), entry.size, &file).await,
            None => false,
        };
        if !complete {
            let staged = stage.join(name);
            if !staged.exists() {
                fetch_to(client, &file.url, &staged, Some(&file), opts, bar).await?;
            }
            bytes += tokio::fs::metadata(&staged).await.map_or(0, |m| m.len());
            fetched.push(name);
        }
        files.one_done();
    }
    let has_entry = there.contains_key(ENTRY_FILE);
    if fetched.is_empty() && has_entry {
        return Ok(RunOutcome::AlreadyThere);
    }
    // Publish: the data files, then the verdict, then the entry.
    fetched.sort_by_key(|n| *n == verdict_name);
    for name in &fetched {
        run_out
            .join(name)
            .publish(&stage.join(name))
            .await
            .map_err(storage(id))?;
    }
    if !has_entry {
        let entry = serde_json::to_vec_pretty(&run.entry).expect("a JSON value serializes");
        run_out
            .join(ENTRY_FILE)
            .write(entry)
            .await
            .map_err(storage(id))?;
    }
    let _ = tokio::fs::remove_dir(&stage).await;
    Ok(RunOutcome::Complete {
        files: fetched.len(),
        bytes,
    })
}

/// The files already in a run's output folder, by name (none if it is missing).
async fn present(
    run_out: &Location,
) -> Result<BTreeMap<String, crate::storage::Entry>, StorageError> {
    match run_out.files().await {
        Ok(files) => Ok(files
            .into_iter()
            .filter_map(|e| e.location.file_name().map(|n| (n.to_string(), e)))
            .collect()),
        Err(StorageError::NotFound { .. }) => Ok(BTreeMap::new()),
        Err(e) => Err(e),
    }
}

/// Whether a published file is the one the verdict records: a local file
/// by its sha256, an object by its size (objects are only ever published
/// after their hash was checked).
async fn already_complete(at: &Location, size: u64, file: &Wanted) -> bool {
    if file.size.is_some_and(|s| s != size) {
        return false;
    }
    match (at.as_local(), &file.sha256) {
        (Some(p), Some(want)) => sha256_of(p)
            .await
            .is_ok_and(|got| got.eq_ignore_ascii_case(want)),
        _ => true,
    }
}

async fn sha256_of(p: &Path) -> std::io::Result<String> {
    let p = p.to_path_buf();
    tokio::task::spawn_blocking(move || crate::digest::hash_file(&p).map(|(_, sha)| sha))
        .await
        .map_err(std::io::Error::other)?
}

/// The sha256 and size verdict.json records for the artifact saved as
/// `name`: under its `artifact_metadata` key, else the entry whose object
/// key or URI ends with the name.
fn recorded(verdict: &Value, name: &str) -> (Option<String>, Option<u64>) {
    let Some(Value::Object(meta)) = verdict.get("artifact_metadata") else {
        return (None, None);
    };
    let key = match name {
        "generated-samples.jsonl" => "generated_samples",
        "scoring-results.jsonl" => "scoring_results",
        "progress.jsonl" => "progress",
        "remote-logs.txt" => "remote_logs",
        _ => "",
    };
    let suffix = format!("/{name}");
    let ends_with_name = |m: &Value| {
        ["object_key", "uri"].iter().any(|f| {
            m.get(f)
                .and_then(Value::as_str)
                .is_some_and(|u| u.ends_with(&suffix))
        })
    };
    let entry = meta
        .get(key)
        .or_else(|| meta.values().find(|m| ends_with_name(m)));
    let sha = entry
        .and_then(|m| m.get("sha256"))
        .and_then(Value::as_str)
        .map(|s| s.trim_start_matches("sha256:").to_string());
    let size = entry
        .and_then(|m| m.get("size_bytes"))
        .and_then(Value::as_u64);
    (sha, size)
}

/// Fetch `url` to `dest` (through `dest.part`, resumed where an earlier
/// attempt or run stopped), retrying transient failures, and check it
/// against what the verdict records before it takes its name.
async fn fetch_to(
    client: &reqwest::Client,
    url: &str,
    dest: &Path,
    want: Option<&Wanted>,
    opts: &HarvestOptions,
    bar: &indicatif::ProgressBar,
) -> Result<(), Failure> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        Ok(u) => {
            return Err(Failure::new(
                url,
                format!("only http(s) URLs are fetched, not {}:", u.scheme()),
                false,
            ))
        }
        Err(e) => return Err(Failure::new(url, format!("not a URL: {e}"), false)),
    }
    if let Some(d) = dest.parent() {
        tokio::fs::create_dir_all(d).await.map_err(io(url))?;
    }
    let part = dest.with_extension(format!(
        "{}.part",
        dest.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let size = want.and_then(|w| w.size);
    let mut attempt = 0;
    loop {
        let have = tokio::fs::metadata(&part).await.map_or(0, |m| m.len());
        if size.is_some_and(|s| s == have && s > 0) {
            break;
        }
        match fetch_once(client, url, &part, have, opts.timeout, bar).await {
            Ok(()) => break,
            Err(f) if f.transient && attempt < opts.retries => {
                tokio::time::sleep(opts.backoff * 2u32.pow(attempt)).await;
                attempt += 1;
            }
            Err(f) => return Err(f),
        }
    }
    if let Some(want_sha) = want.and_then(|w| w.sha256.as_deref()) {
        let got = sha256_of(&part).await.map_err(io(url))?;
        if !got.eq_ignore_ascii_case(want_sha) {
            let aside = mismatched_path(dest);
            if let Some(d) = aside.parent() {
                tokio::fs::create_dir_all(d).await.map_err(io(url))?;
            }
            tokio::fs::rename(&part, &aside).await.map_err(io(url))?;
            return Err(Failure::new(
                url,
                format!(
                    "sha256 mismatch: verdict.json records {want_sha}, the file hashes to {got} (kept aside at {})",
                    aside.display()
                ),
                false,
            ));
        }
    }
    tokio::fs::rename(&part, dest).await.map_err(io(url))
}

/// Where a file that failed its hash is kept: `.harvest/mismatched/<run>/<name>`.
fn mismatched_path(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    let run_stage = dest.parent().unwrap_or(Path::new("."));
    let run = run_stage.file_name().unwrap_or_default();
    let staging = run_stage.parent().unwrap_or(Path::new("."));
    staging.join("mismatched").join(run).join(name)
}

/// One request for the rest of `url` after the `have` bytes `part` holds.
async fn fetch_once(
    client: &reqwest::Client,
    url: &str,
    part: &Path,
    have: u64,
    timeout: Duration,
    bar: &indicatif::ProgressBar,
) -> Result<(), Failure> {
    let mut request = client.get(url);
    if have > 0 {
        request = request.header(header::RANGE, format!("bytes={have}-"));
    }
    let mut response = match tokio::time::timeout(timeout, request.send()).await {
        Err(_) => {
            return Err(Failure::new(
                url,
                format!("no answer within {timeout:?}"),
                true,
            ))
        }
        Ok(Err(e)) => return Err(Failure::new(url, describe(&e), true)),
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    let append = match status {
        StatusCode::PARTIAL_CONTENT => {
            let from = response
                .headers()
                .get(header::CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("bytes "))
                .and_then(|v| v.split('-').next())
                .and_then(|v| v.parse::<u64>().ok());
            if from != Some(have) {
                return Err(Failure::new(
                    url,
                    "the server resumed at another offset",
                    true,
                ));
            }
            true
        }
        StatusCode::OK => false,
        StatusCode::RANGE_NOT_SATISFIABLE if have > 0 => return Ok(()),
        s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
            return Err(Failure::new(url, format!("HTTP {s}"), true))
        }
        s if s.is_redirection() => {
            let to = response
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?");
            return Err(Failure::new(
                url,
                format!("HTTP {s}: a redirect to another host ({to}) is not followed"),
                false,
            ));
        }
        s => return Err(Failure::new(url, format!("HTTP {s}"), false)),
    };
    let expected = response.content_length();
    if let Some(n) = expected {
        bar.inc_length(n);
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(part)
        .await
        .map_err(io(url))?;
    let mut file = tokio::io::BufWriter::with_capacity(WRITE_BUFFER, file);
    let mut got = 0u64;
    let ended = loop {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Err(_) => break Err(format!("the connection stalled for {timeout:?}")),
            Ok(Err(e)) => break Err(describe(&e)),
            Ok(Ok(None)) => break Ok(()),
            Ok(Ok(Some(chunk))) => {
                file.write_all(&chunk).await.map_err(io(url))?;
                got += chunk.len() as u64;
                bar.inc(chunk.len() as u64);
            }
        }
    };
    file.flush().await.map_err(io(url))?;
    if let Err(reason) = ended {
        return Err(Failure::new(
            url,
            format!("{reason} after {got} bytes"),
            true,
        ));
    }
    if let Some(n) = expected.filter(|n| got < *n) {
        return Err(Failure::new(
            url,
            format!("the connection closed after {got} of {n} bytes"),
            true,
        ));
    }
    Ok(())
}

/// A reqwest error with its causes, which its own text leaves out.
fn describe(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(&format!(": {s}"));
        source = s.source();
    }
    out
}
