//! Albedo (SN97) eval-run folders: `verdict.json`, `generated-samples.jsonl`,
//! `scoring-results.jsonl`. One eval run is the unit of re-ingest: its
//! `run_sha` (over the three files) says whether the lake already holds it.

use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

use crate::storage::{Entry, Location, StorageError, StorageResult};

use super::dashboard::{self, DashboardRun, ENTRY_FILE};
use super::json::{
    opt_bool, opt_f64, opt_i64, opt_str, parse_record, req_array, req_str, FieldError, FieldResult,
};
use super::rows::{EvalRow, JudgmentRow, QuestionRow};
use super::{derive_checked, for_each_line, reject, RawMessage, RawTrajectory, Record, Unit};
use crate::turn::parse_citations;

pub const SOURCE: &str = "albedo";
pub const SIDES: [(&str, &str, &str); 2] = [
    ("previous_king", "previous_king_turns", "king_score"),
    ("challenger", "challenger_turns", "challenger_score"),
];
const GENERATED: &str = "generated-samples.jsonl";
const SCORING: &str = "scoring-results.jsonl";
const VERDICT: &str = "verdict.json";
/// Generated samples derived together on every core (a line can be 300 KB).
const SAMPLE_CHUNK: usize = 64;
/// The files of an eval-run folder, with the dashboard's artifact kind of each.
pub const ARTIFACTS: [(&str, &str); 3] = [
    (VERDICT, "EVAL_VERDICT"),
    (GENERATED, "GENERATED_SAMPLES"),
    (SCORING, "SCORING_RESULTS"),
];

/// The artifact a file holds, by its plain name or the name the dashboard
/// saves it under (`artifact_<KIND>_<plain name>`), and whether the name
/// was the plain one.
pub fn artifact_named(name: &str) -> Option<(&'static str, bool)> {
    ARTIFACTS.iter().find_map(|(plain, kind)| {
        if name == *plain {
            Some((*plain, true))
        } else {
            let saved = name.strip_prefix("artifact_")?.strip_prefix(kind)?;
            (saved.strip_prefix('_')? == *plain).then_some((*plain, false))
        }
    })
}

/// What `run_folders` looks for, in words.
pub const LOOKED_FOR: &str = "eval-run folders holding verdict.json, generated-samples.jsonl and \
scoring-results.jsonl (or the dashboard's saved names, artifact_EVAL_VERDICT_verdict.json, ...), \
at the path or one folder below it";

pub struct AlbedoOptions {
    /// Check each artifact's sha256 against verdict.json.
    pub verify: bool,
    /// Who played each run, from a dashboard file (a run's own
    /// `dashboard-entry.json` comes first).
    pub players: Players,
}

/// Dashboard entries by eval run id.
pub type Players = std::sync::Arc<HashMap<String, DashboardRun>>;

/// The traj_id of one duel side.
pub fn traj_id(eval_run_id: &str, sample_id: &str, side: &str) -> String {
    format!("{TRAJ_PREFIX}{eval_run_id}/{sample_id}/{side}")
}

/// How every Albedo `traj_id` starts.
pub const TRAJ_PREFIX: &str = "albedo/";

/// How every `traj_id` of eval run `eval_run_id` starts.
pub fn run_traj_prefix(eval_run_id: &str) -> String {
    format!("{TRAJ_PREFIX}{eval_run_id}/")
}

/// One eval-run folder and the artifacts found in it (its dashboard entry
/// among them, under [`ENTRY_FILE`], where harvest wrote one).
#[derive(Debug, Clone)]
pub struct RunFolder {
    pub dir: Location,
    pub artifacts: BTreeMap<&'static str, Entry>,
}

impl RunFolder {
    /// Total bytes the folder's artifacts hold (for progress).
    pub fn bytes(&self) -> u64 {
        self.artifacts.values().map(|e| e.size).sum()
    }
}

/// Eval-run folders under `paths`: a folder holding the artifacts, or a
/// folder of such folders (local or a prefix in an object store).
pub async fn run_folders(paths: &[Location]) -> StorageResult<Vec<RunFolder>> {
    let mut out = Vec::new();
    for p in paths {
        let files = p.files().await?;
        if files.len() == 1 && files[0].location.same(p) {
            return Err(StorageError::Invalid {
                location: p.to_string(),
                reason: "not an eval-run folder".into(),
            });
        }
        let mut runs: BTreeMap<Vec<String>, RunFolder> = BTreeMap::new();
        let mut direct = false;
        for f in files {
            let Some(name) = f.location.file_name() else {
                continue;
            };
            let Some((artifact, plain)) = artifact_named(&name)
                .or_else(|| (name == ENTRY_FILE).then_some((ENTRY_FILE, true)))
            else {
                continue;
            };
            let Some(dir) = f.location.parent() else {
                continue;
            };
            let is_self = dir.same(p);
            let is_child = dir.parent().is_some_and(|d| d.same(p));
            if !(is_self || is_child) {
                continue;
            }
            direct |= is_self && artifact != ENTRY_FILE;
            let artifacts = &mut runs
                .entry(dir.sort_key())
                .or_insert_with(|| RunFolder {
                    dir: if is_self { p.clone() } else { dir },
                    artifacts: BTreeMap::new(),
                })
                .artifacts;
            // A file under its plain name wins over a saved copy beside it.
            if plain || !artifacts.contains_key(artifact) {
                artifacts.insert(artifact, f);
            }
        }
        // A dashboard entry alone is not a run.
        let runs = runs
            .into_values()
            .filter(|r| r.artifacts.keys().any(|a| *a != ENTRY_FILE));
        if direct {
            // The folder is a run itself: its subfolders are not read.
            out.extend(runs.filter(|r| r.dir.same(p)));
        } else {
            out.extend(runs);
        }
    }
    Ok(out)
}

/// An artifact as a first streaming pass found it.
struct Artifact {
    /// The listed object: the second pass reads the version the first hashed.
    entry: Entry,
    sha: String,
    records: u64,
}

/// Hash and count the records of one artifact, a buffer at a time.
fn scan(entry: Option<&Entry>) -> std::io::Result<Option<Artifact>> {
    let Some(entry) = entry else { return Ok(None) };
    let mut h = Sha256::new();
    let mut records = 0u64;
    let mut reader = Tee {
        inner: entry.open_blocking()?,
        hasher: &mut h,
    };
    for_each_line(&mut reader, |_, _| records += 1)?;
    Ok(Some(Artifact {
        entry: entry.clone(),
        sha: hex::encode(h.finalize()),
        records,
    }))
}

/// A reader that hashes what passes through it.
struct Tee<'a, R> {
    inner: R,
    hasher: &'a mut Sha256,
}

impl<R: std::io::BufRead> std::io::Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for Tee<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            self.hasher.update(&buf[..n]);
        }
        self.inner.consume(n)
    }
}

/// Each record of an artifact, streamed.
fn records(a: &Artifact, f: impl FnMut(i64, &[u8])) -> std::io::Result<()> {
    for_each_line(a.entry.open_blocking()?, f)
}

/// Read one eval-run folder. `known` maps eval_run_id to the run_sha the lake
/// holds (an empty sha for a run with rows but no `evals` row: an
/// interrupted ingest, replaced whole).
pub fn read_run(
    run: &RunFolder,
    opts: &AlbedoOptions,
    known: &HashMap<String, String>,
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<()> {
    let dir = &run.dir;
    let verdict_bytes = match run.artifacts.get(VERDICT) {
        Some(e) => Some(e.read_blocking()?),
        None => None,
    };
    let verdict_file = verdict_bytes
        .as_ref()
        .zip(run.artifacts.get(VERDICT))
        .map(|(bytes, e)| Artifact {
            entry: e.clone(),
            sha: crate::digest::sha256_hex(bytes),
            records: 1,
        });
    let generated = scan(run.artifacts.get(GENERATED))?;
    let scoring = scan(run.artifacts.get(SCORING))?;
    let folder_id = dir.file_name().unwrap_or_default();

    let own_entry = match run.artifacts.get(ENTRY_FILE) {
        Some(e) => Some((e.read_blocking()?, e)),
        None => None,
    };
    let mut h = Sha256::new();
    for a in [&verdict_file, &generated, &scoring] {
        h.update(a.as_ref().map(|a| a.sha.as_str()).unwrap_or("-"));
    }
    let n_records = [&verdict_file, &generated, &scoring]
        .iter()
        .map(|a| a.as_ref().map_or(0, |a| a.records))
        .sum();

    // verdict.json: one record; the run id falls back to the folder name.
    let verdict: Result<Option<Value>, String> = match &verdict_bytes {
        None => Ok(None),
        Some(bytes) => match parse_record(bytes) {
            Ok(val) if val.is_object() => Ok(Some(val)),
            Ok(_) => Err("verdict.json is not a JSON object".to_string()),
            Err(e) => Err(e.reason),
        },
    };
    let eval_run_id = verdict
        .as_ref()
        .ok()
        .and_then(|v| v.as_ref())
        .and_then(|v| opt_str(v, "eval_run_id"))
        .unwrap_or(folder_id);
    // Who played: the run's own entry, else the dashboard given to ingest.
    let players = match own_entry {
        Some((bytes, e)) => match parse_record(&bytes).and_then(|v| dashboard::run_entry(&v, "")) {
            Ok(p) => Some(p),
            Err(err) => {
                emit(Record::Note(format!(
                    "{}: {}{}{} (who played is left out)",
                    e.location,
                    err.field,
                    if err.field.is_empty() { "" } else { ": " },
                    err.reason
                )));
                None
            }
        },
        None => opts.players.get(&eval_run_id).cloned(),
    };
    // A run ingested before who played was known is read again.
    if let Some(p) = &players {
        h.update(p.entry.to_string());
    }
    let run_sha = hex::encode(h.finalize());
    if known.get(&eval_run_id) == Some(&run_sha) {
        emit(Record::Unchanged(n_records));
        return Ok(());
    }
    let verdict = match verdict {
        Ok(v) => v,
        Err(reason) => {
            let v = verdict_file.as_ref().expect("a parse error implies a file");
            let bytes = verdict_bytes.as_deref().unwrap_or_default();
            emit(reject(SOURCE, &v.entry.location, None, None, reason, bytes));
            None
        }
    };
    if verdict_file.is_none() {
        emit(Record::Note(format!(
            "{dir}: no {VERDICT}; hashes cannot be verified"
        )));
    }

    // Hash verification: a mismatch rejects every record of the run.
    let recorded = |key: &str| -> (Option<String>, Option<i64>) {
        let meta = verdict
            .as_ref()
            .and_then(|v| v.get("artifact_metadata"))
            .and_then(|m| m.get(key));
        let sha = meta
            .and_then(|m| opt_str(m, "sha256"))
            .map(|s| s.trim_start_matches("sha256:").to_string());
        (sha, meta.and_then(|m| opt_i64(m, "size_bytes")))
    };
    // Where Albedo keeps the artifact: recorded as provenance, never fetched.
    let uri = |key: &str| {
        verdict
            .as_ref()
            .and_then(|v| v.get("artifact_metadata"))
            .and_then(|m| m.get(key))
            .and_then(|m| opt_str(m, "uri"))
    };
    let (gen_sha, gen_size) = recorded("generated_samples");
    let (sco_sha, sco_size) = recorded("scoring_results");
    let mut mismatches = Vec::new();
    for (art, want) in [(&generated, &gen_sha), (&scoring, &sco_sha)] {
        if let (Some(a), Some(w)) = (art, want) {
            if !a.sha.eq_ignore_ascii_case(w) {
                mismatches.push(format!(
                    "{}: sha256 mismatch: verdict.json records {w}, the file hashes to {}",
                    a.entry.location, a.sha
                ));
            }
        }
    }
    if opts.verify && !mismatches.is_empty() {
        let reason = format!(
            "{} (use --no-verify to ingest anyway)",
            mismatches.join("; ")
        );
        emit(Record::Note(reason.clone()));
        for a in [&generated, &scoring].into_iter().flatten() {
            records(a, |line, bytes| {
                emit(reject(
                    SOURCE,
                    &a.entry.location,
                    Some(line),
                    Some("sha256"),
                    reason.clone(),
                    bytes,
                ))
            })?;
        }
        if let (Some(v), Some(_)) = (&verdict_file, &verdict) {
            emit(reject(
                SOURCE,
                &v.entry.location,
                None,
                Some("sha256"),
                reason,
                verdict_bytes.as_deref().unwrap_or_default(),
            ));
        }
        return Ok(());
    }
    if known.contains_key(&eval_run_id) {
        emit(Record::ReplaceRun(eval_run_id.clone()));
    }
    // Every run gets its evals row (with the run_sha that makes re-ingest
    // idempotent), even when verdict.json is missing or was rejected.
    let mut pending_eval: Option<EvalRow> = None;
    {
        let v = verdict.clone().unwrap_or(Value::Null);
        let eval = EvalRow {
            eval_run_id: eval_run_id.clone(),
            challenger_won: opt_bool(&v, "challenger_won"),
            score_challenger: opt_f64(&v, "score_challenger"),
            score_king: opt_f64(&v, "score_king"),
            required_win_margin: opt_f64(&v, "required_win_margin"),
            scored_sample_count: opt_i64(&v, "scored_sample_count"),
            judge_count: opt_i64(&v, "judge_count"),
            scoring_mode: opt_str(&v, "scoring_mode"),
            state: opt_str(&v, "state"),
            generated_samples_sha256: gen_sha.clone(),
            generated_samples_size: gen_size,
            scoring_results_sha256: sco_sha.clone(),
            scoring_results_size: sco_size,
            hashes_verified: opts.verify
                && gen_sha.is_some()
                && sco_sha.is_some()
                && mismatches.is_empty(),
            run_sha: run_sha.clone(),
            generated_samples_uri: uri("generated_samples"),
            scoring_results_uri: uri("scoring_results"),
            input_path: dir.to_string(),
            challenger: players
                .as_ref()
                .map(|p| p.challenger.clone())
                .unwrap_or_default(),
            king: players.as_ref().map(|p| p.king.clone()).unwrap_or_default(),
            king_version: players.as_ref().and_then(|p| p.king_version),
        };
        if verdict.is_some() {
            emit(Record::Unit(Unit {
                evals: vec![eval],
                ..Default::default()
            }));
        } else {
            // No verdict record was accepted: the evals row comes with the
            // run's end, not counted as a record read.
            pending_eval = Some(eval);
        }
    }

    // scoring-results.jsonl first: sides need their scores and loop verdicts.
    // A record keeps its parsed value and the head of its bytes (for a reject).
    let mut scores: BTreeMap<String, (i64, Value, Vec<u8>)> = BTreeMap::new();
    let mut scoring_order = Vec::new();
    if let Some(a) = &scoring {
        records(a, |line, bytes| {
            let parsed =
                parse_record(bytes).and_then(|v| req_str(&v, "sample_id", "").map(|id| (id, v)));
            match parsed {
                Err(e) => emit(reject(
                    SOURCE,
                    &a.entry.location,
                    Some(line),
                    Some(&e.field).filter(|f| !f.is_empty()).map(|s| s.as_str()),
                    e.reason,
                    bytes,
                )),
                Ok((id, _)) if scores.contains_key(&id) => {
                    let first = scores[&id].0;
                    emit(reject(
                        SOURCE,
                        &a.entry.location,
                        Some(line),
                        Some("sample_id"),
                        format!("duplicate sample_id {id:?} (first at line {first})"),
                        bytes,
                    ));
                }
                Ok((id, v)) => {
                    scoring_order.push(id.clone());
                    let head = bytes[..bytes.len().min(super::REJECT_RAW_CAP)].to_vec();
                    scores.insert(id, (line, v, head));
                }
            }
        })?;
    }

    let mut seen_samples: HashMap<String, i64> = HashMap::new();
    if let Some(a) = &generated {
        // Samples are parsed and derived a chunk at a time on every core;
        // duplicates are found and records emitted in file order.
        let derive_sample = |bytes: &[u8], line: i64| {
            let (sample_id, v) = parse_record(bytes).and_then(|v| {
                let id = req_str(&v, "sample_id", "")?;
                Ok((id, v))
            })?;
            let sides = sides(
                &v,
                &eval_run_id,
                &sample_id,
                scores.get(&sample_id).map(|(_, s, _)| s),
                players.as_ref(),
                &a.entry.location,
                line,
            )
            .and_then(|sides| {
                sides
                    .iter()
                    .map(derive_checked)
                    .collect::<FieldResult<Vec<_>>>()
            });
            Ok::<_, FieldError>((sample_id, sides))
        };
        let mut chunk: Vec<(i64, Vec<u8>)> = Vec::with_capacity(SAMPLE_CHUNK);
        let mut flush = |chunk: &mut Vec<(i64, Vec<u8>)>| {
            let done: Vec<_> = chunk
                .par_iter()
                .map(|(line, bytes)| derive_sample(bytes, *line))
                .collect();
            for ((line, bytes), sample) in chunk.drain(..).zip(done) {
                let (sample_id, sides) = match sample {
                    Ok(x) => x,
                    Err(e) => {
                        let field = Some(e.field.as_str()).filter(|f| !f.is_empty());
                        emit(reject(
                            SOURCE,
                            &a.entry.location,
                            Some(line),
                            field,
                            e.reason,
                            &bytes,
                        ));
                        continue;
                    }
                };
                if let Some(first) = seen_samples.get(&sample_id) {
                    emit(reject(
                        SOURCE,
                        &a.entry.location,
                        Some(line),
                        Some("sample_id"),
                        format!("duplicate sample_id {sample_id:?} (first at line {first})"),
                        &bytes,
                    ));
                    continue;
                }
                seen_samples.insert(sample_id, line);
                match sides {
                    Ok(trajectories) => emit(Record::Unit(Unit {
                        trajectories,
                        ..Default::default()
                    })),
                    Err(e) => emit(reject(
                        SOURCE,
                        &a.entry.location,
                        Some(line),
                        Some(&e.field),
                        e.reason,
                        &bytes,
                    )),
                }
            }
        };
        records(a, |line, bytes| {
            chunk.push((line, bytes.to_vec()));
            if chunk.len() >= SAMPLE_CHUNK {
                flush(&mut chunk);
            }
        })?;
        flush(&mut chunk);
    }

    if let Some(a) = &scoring {
        let mut missing = 0;
        for id in &scoring_order {
            let (line, v, raw) = &scores[id];
            if !seen_samples.contains_key(id) {
                missing += 1;
            }
            match judged(v, &eval_run_id, id) {
                Ok((questions, judgments)) => emit(Record::Unit(Unit {
                    questions,
                    judgments,
                    ..Default::default()
                })),
                Err(e) => emit(reject(
                    SOURCE,
                    &a.entry.location,
                    Some(*line),
                    Some(&e.field),
                    e.reason,
                    raw,
                )),
            }
        }
        if missing > 0 {
            emit(Record::Note(format!(
                "{dir}: {missing} sample(s) in {SCORING} have no line in {GENERATED}; their questions and judgments are kept"
            )));
        }
    }
    let unscored = seen_samples
        .keys()
        .filter(|id| !scores.contains_key(*id))
        .count();
    if unscored > 0 {
        emit(Record::Note(format!(
            "{dir}: {unscored} sample(s) in {GENERATED} have no scoring result; kept with judged = false"
        )));
    }
    emit(Record::RunDone(eval_run_id, pending_eval.map(Box::new)));
    Ok(())
}

/// The two duel sides of one generated sample.
fn sides(
    v: &Value,
    eval_run_id: &str,
    sample_id: &str,
    scoring: Option<&Value>,
    players: Option<&DashboardRun>,
    file: &Location,
    line: i64,
) -> FieldResult<Vec<RawTrajectory>> {
    let mut out = Vec::new();
    for (side, turns_key, score_key) in SIDES {
        let turns = req_array(v, turns_key, "")?;
        let messages = turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let path = format!("{turns_key}[{i}].");
                Ok(RawMessage {
                    role: req_str(t, "role", &path)?,
                    content: req_str(t, "content", &path)?,
                    score_target: opt_bool(t, "score_target").unwrap_or(false),
                    environment_observation: opt_bool(t, "environment_observation")
                        .unwrap_or(false),
                    ..Default::default()
                })
            })
            .collect::<FieldResult<Vec<_>>>()?;
        let judge = scoring
            .and_then(|s| s.get("judge_results"))
            .and_then(Value::as_array)
            .and_then(|js| {
                js.iter()
                    .find(|j| j.get("side").and_then(Value::as_str) == Some(side))
            });
        let error_key = if side == "challenger" {
            "chal_error"
        } else {
            "king_error"
        };
        out.push(RawTrajectory {
            traj_id: traj_id(eval_run_id, sample_id, side),
            source: SOURCE,
            eval_run_id: Some(eval_run_id.to_string()),
            sample_id: Some(sample_id.to_string()),
            side: Some(side.to_string()),
            // The model key is the dashboard's `model_uri`, kings included.
            model: players.and_then(|p| match side {
                "challenger" => p.challenger.model_uri.clone(),
                _ => p.king.model_uri.clone(),
            }),
            score: scoring
                .and_then(|s| opt_f64(s, score_key))
                .or_else(|| judge.and_then(|j| opt_f64(j, "yes_rate"))),
            judged: judge.is_some(),
            judge_looped: judge.is_some_and(judge_looped),
            error: opt_str(v, error_key),
            submit_marker: opt_str(v, "submit_marker"),
            prompt_text: match v.get("prompt") {
                Some(Value::String(p)) => Some(p.clone()),
                _ => None,
            },
            input_file: file.to_string(),
            input_row: Some(line),
            messages,
            ..Default::default()
        });
    }
    Ok(out)
}

/// The judge called this side looped.
fn judge_looped(j: &Value) -> bool {
    opt_bool(j, "looped").unwrap_or(false)
        || j.get("explanations")
            .and_then(Value::as_object)
            .is_some_and(|e| {
                e.values().any(|x| {
                    x.as_str()
                        .is_some_and(|s| s.starts_with("Trajectory is looped"))
                })
            })
}

fn answer(v: &Value) -> Option<i32> {
    match v {
        Value::String(s) => s.trim().parse::<i32>().ok().filter(|n| *n == 0 || *n == 1),
        Value::Number(n) => n.as_i64().filter(|n| *n == 0 || *n == 1).map(|n| n as i32),
        Value::Bool(b) => Some(*b as i32),
        _ => None,
    }
}

/// The checklist and every side's answers for one scored sample.
fn judged(
    v: &Value,
    eval_run_id: &str,
    sample_id: &str,
) -> FieldResult<(Vec<QuestionRow>, Vec<JudgmentRow>)> {
    let phase = v
        .get("question_source")
        .and_then(|q| opt_str(q, "sample_phase"));
    let questions = req_array(v, "questions", "")?
        .iter()
        .enumerate()
        .map(|(i, q)| {
            Ok(QuestionRow {
                eval_run_id: eval_run_id.to_string(),
                sample_id: sample_id.to_string(),
                question_id: req_str(q, "id", &format!("questions[{i}]."))?,
                text: opt_str(q, "text"),
                tag: opt_str(q, "tag"),
                category: opt_str(q, "category"),
                requires: opt_str(q, "requires"),
                example_bad: opt_str(q, "example_bad"),
                sample_phase: phase.clone(),
            })
        })
        .collect::<FieldResult<Vec<_>>>()?;
    let mut judgments = Vec::new();
    let results = match v.get("judge_results") {
        None | Some(Value::Null) => return Ok((questions, judgments)),
        Some(_) => req_array(v, "judge_results", "")?,
    };
    for (i, j) in results.iter().enumerate() {
        let path = format!("judge_results[{i}].");
        let side = req_str(j, "side", &path)?;
        if !SIDES.iter().any(|(s, _, _)| *s == side) {
            return Err(FieldError::new(
                format!("{path}side"),
                format!("unknown side {side:?}"),
            ));
        }
        let answers = j.get("answers").and_then(Value::as_object);
        let explanations = j.get("explanations").and_then(Value::as_object);
        let mut ids: Vec<String> = questions.iter().map(|q| q.question_id.clone()).collect();
        let mut extra: Vec<String> = answers
            .into_iter()
            .flat_map(|a| a.keys())
            .chain(explanations.into_iter().flat_map(|e| e.keys()))
            .filter(|k| !ids.contains(k))
            .cloned()
            .collect();
        extra.sort();
        extra.dedup();
        ids.extend(extra);
        let looped = judge_looped(j);
        for qid in ids {
            let explanation = explanations
                .and_then(|e| e.get(&qid))
                .and_then(Value::as_str)
                .map(str::to_string);
            let ans = answers.and_then(|a| a.get(&qid));
            if ans.is_none() && explanation.is_none() {
                continue;
            }
            judgments.push(JudgmentRow {
                eval_run_id: eval_run_id.to_string(),
                sample_id: sample_id.to_string(),
                traj_id: traj_id(eval_run_id, sample_id, &side),
                side: side.clone(),
                question_id: qid,
                answer: ans.and_then(answer),
                cited_outputs: explanation
                    .as_deref()
                    .map(parse_citations)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| n as i32)
                    .collect(),
                explanation,
                judge_model: opt_str(j, "judge_model"),
                looped,
            });
        }
    }
    Ok((questions, judgments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_known_by_its_plain_or_its_saved_name_only() {
        assert_eq!(artifact_named("verdict.json"), Some((VERDICT, true)));
        assert_eq!(
            artifact_named("artifact_SCORING_RESULTS_scoring-results.jsonl"),
            Some((SCORING, false))
        );
        for other in [
            "artifact_EVAL_VERDICT_generated-samples.jsonl",
            "artifact_REMOTE_LOGS_remote-logs.txt",
            "artifact_EVAL_VERDICTverdict.json",
            "my-verdict.json",
        ] {
            assert_eq!(artifact_named(other), None, "{other}");
        }
    }
}
