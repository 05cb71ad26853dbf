//! Albedo (SN97) eval-run folders: `verdict.json`, `generated-samples.jsonl`,
//! `scoring-results.jsonl`. One eval run is the unit of re-ingest: its
//! `run_sha` (over the three files) says whether the lake already holds it.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::json::{
    opt_bool, opt_f64, opt_i64, opt_str, parse_record, req_array, req_str, FieldError, FieldResult,
};
use super::rows::{EvalRow, JudgmentRow, QuestionRow};
use super::{derive_checked, lines, reject, RawMessage, RawTrajectory, Record, Unit};
use crate::turn::parse_citations;

pub const SOURCE: &str = "albedo";
pub const SIDES: [(&str, &str, &str); 2] = [
    ("previous_king", "previous_king_turns", "king_score"),
    ("challenger", "challenger_turns", "challenger_score"),
];
const GENERATED: &str = "generated-samples.jsonl";
const SCORING: &str = "scoring-results.jsonl";
const VERDICT: &str = "verdict.json";
/// The files of an eval-run folder.
pub const ARTIFACTS: [&str; 3] = [VERDICT, GENERATED, SCORING];

pub struct AlbedoOptions {
    /// Check each artifact's sha256 against verdict.json.
    pub verify: bool,
}

/// The traj_id of one duel side.
pub fn traj_id(eval_run_id: &str, sample_id: &str, side: &str) -> String {
    format!("albedo/{eval_run_id}/{sample_id}/{side}")
}

/// Eval-run folders under `paths`: a folder holding the artifacts, or a folder of such folders.
pub fn run_folders(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: not an eval-run folder", p.display()),
            ));
        }
        if is_run(p) {
            out.push(p.clone());
        } else {
            let mut runs: Vec<PathBuf> = std::fs::read_dir(p)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|d| d.is_dir() && is_run(d))
                .collect();
            runs.sort();
            out.extend(runs);
        }
    }
    Ok(out)
}

fn is_run(dir: &Path) -> bool {
    [VERDICT, GENERATED, SCORING]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// Total bytes a run folder holds (for progress).
pub fn run_bytes(dir: &Path) -> u64 {
    [VERDICT, GENERATED, SCORING]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

struct Artifact {
    path: PathBuf,
    bytes: Vec<u8>,
    sha: String,
}

fn load(dir: &Path, name: &str) -> std::io::Result<Option<Artifact>> {
    let path = dir.join(name);
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path)?;
    let sha = hex::encode(Sha256::digest(&bytes));
    Ok(Some(Artifact { path, bytes, sha }))
}

/// Read one eval-run folder. `known` maps eval_run_id to the run_sha the lake holds.
pub fn read_run(
    dir: &Path,
    opts: &AlbedoOptions,
    known: &HashMap<String, String>,
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<()> {
    let verdict_file = load(dir, VERDICT)?;
    let generated = load(dir, GENERATED)?;
    let scoring = load(dir, SCORING)?;
    let folder_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();

    let mut h = Sha256::new();
    for a in [&verdict_file, &generated, &scoring] {
        h.update(a.as_ref().map(|a| a.sha.as_str()).unwrap_or("-"));
    }
    let run_sha = hex::encode(h.finalize());
    let record_count = |a: &Option<Artifact>| {
        a.as_ref()
            .map(|a| lines(&a.bytes).count() as u64)
            .unwrap_or(0)
    };
    let n_records =
        verdict_file.is_some() as u64 + record_count(&generated) + record_count(&scoring);

    // verdict.json: one record; the run id falls back to the folder name.
    let verdict: Result<Option<Value>, String> = match &verdict_file {
        None => Ok(None),
        Some(v) => match parse_record(&v.bytes) {
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
    if known.get(&eval_run_id) == Some(&run_sha) {
        emit(Record::Unchanged(n_records));
        return Ok(());
    }
    let verdict = match verdict {
        Ok(v) => v,
        Err(reason) => {
            let v = verdict_file.as_ref().expect("a parse error implies a file");
            emit(reject(SOURCE, &v.path, None, None, reason, &v.bytes));
            None
        }
    };
    if verdict_file.is_none() {
        emit(Record::Note(format!(
            "{}: no {VERDICT}; hashes cannot be verified",
            dir.display()
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
    let (gen_sha, gen_size) = recorded("generated_samples");
    let (sco_sha, sco_size) = recorded("scoring_results");
    let mut mismatches = Vec::new();
    for (art, want) in [(&generated, &gen_sha), (&scoring, &sco_sha)] {
        if let (Some(a), Some(w)) = (art, want) {
            if !a.sha.eq_ignore_ascii_case(w) {
                mismatches.push(format!(
                    "{}: sha256 mismatch: verdict.json records {w}, the file hashes to {}",
                    a.path.display(),
                    a.sha
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
            for (line, bytes) in lines(&a.bytes) {
                emit(reject(
                    SOURCE,
                    &a.path,
                    Some(line),
                    Some("sha256"),
                    reason.clone(),
                    bytes,
                ));
            }
        }
        if let (Some(v), Some(_)) = (&verdict_file, &verdict) {
            emit(reject(
                SOURCE,
                &v.path,
                None,
                Some("sha256"),
                reason,
                &v.bytes,
            ));
        }
        return Ok(());
    }
    if known.contains_key(&eval_run_id) {
        emit(Record::ReplaceRun(eval_run_id.clone()));
    }
    let mut pending_eval: Option<EvalRow> = None;
    if verdict.is_some() || verdict_file.is_none() {
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
            input_path: dir.display().to_string(),
        };
        if verdict_file.is_some() {
            emit(Record::Unit(Unit {
                evals: vec![eval],
                ..Default::default()
            }));
        } else {
            // No verdict record was read: the evals row rides with the first sample.
            pending_eval = Some(eval);
        }
    }

    // scoring-results.jsonl first: sides need their scores and loop verdicts.
    let mut scores: BTreeMap<String, (i64, Value, &[u8])> = BTreeMap::new();
    let mut scoring_order = Vec::new();
    if let Some(a) = &scoring {
        for (line, bytes) in lines(&a.bytes) {
            let parsed =
                parse_record(bytes).and_then(|v| req_str(&v, "sample_id", "").map(|id| (id, v)));
            match parsed {
                Err(e) => emit(reject(
                    SOURCE,
                    &a.path,
                    Some(line),
                    Some(&e.field).filter(|f| !f.is_empty()).map(|s| s.as_str()),
                    e.reason,
                    bytes,
                )),
                Ok((id, _)) if scores.contains_key(&id) => {
                    let first = scores[&id].0;
                    emit(reject(
                        SOURCE,
                        &a.path,
                        Some(line),
                        Some("sample_id"),
                        format!("duplicate sample_id {id:?} (first at line {first})"),
                        bytes,
                    ));
                }
                Ok((id, v)) => {
                    scoring_order.push(id.clone());
                    scores.insert(id, (line, v, bytes));
                }
            }
        }
    }

    let mut seen_samples: HashMap<String, i64> = HashMap::new();
    if let Some(a) = &generated {
        for (line, bytes) in lines(&a.bytes) {
            let sample = parse_record(bytes).and_then(|v| {
                let id = req_str(&v, "sample_id", "")?;
                Ok((id, v))
            });
            let (sample_id, v) = match sample {
                Ok(x) => x,
                Err(e) => {
                    let field = Some(e.field.as_str()).filter(|f| !f.is_empty());
                    emit(reject(SOURCE, &a.path, Some(line), field, e.reason, bytes));
                    continue;
                }
            };
            if let Some(first) = seen_samples.get(&sample_id) {
                emit(reject(
                    SOURCE,
                    &a.path,
                    Some(line),
                    Some("sample_id"),
                    format!("duplicate sample_id {sample_id:?} (first at line {first})"),
                    bytes,
                ));
                continue;
            }
            seen_samples.insert(sample_id.clone(), line);
            match sides(
                &v,
                &eval_run_id,
                &sample_id,
                scores.get(&sample_id).map(|(_, s, _)| s),
                &a.path,
                line,
            )
            .and_then(|sides| {
                sides
                    .iter()
                    .map(derive_checked)
                    .collect::<FieldResult<Vec<_>>>()
            }) {
                Ok(trajectories) => {
                    let mut unit = Unit {
                        trajectories,
                        ..Default::default()
                    };
                    if let Some(e) = pending_eval.take() {
                        unit.evals.push(e);
                    }
                    emit(Record::Unit(unit));
                }
                Err(e) => emit(reject(
                    SOURCE,
                    &a.path,
                    Some(line),
                    Some(&e.field),
                    e.reason,
                    bytes,
                )),
            }
        }
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
                    &a.path,
                    Some(*line),
                    Some(&e.field),
                    e.reason,
                    raw,
                )),
            }
        }
        if missing > 0 {
            emit(Record::Note(format!(
                "{}: {missing} sample(s) in {SCORING} have no line in {GENERATED}; their questions and judgments are kept",
                dir.display()
            )));
        }
    }
    let unscored = seen_samples
        .keys()
        .filter(|id| !scores.contains_key(*id))
        .count();
    if unscored > 0 {
        emit(Record::Note(format!(
            "{}: {unscored} sample(s) in {GENERATED} have no scoring result; kept with judged = false",
            dir.display()
        )));
    }
    if let Some(e) = pending_eval.take() {
        emit(Record::Unit(Unit {
            evals: vec![e],
            ..Default::default()
        }));
    }
    Ok(())
}

/// The two duel sides of one generated sample.
fn sides(
    v: &Value,
    eval_run_id: &str,
    sample_id: &str,
    scoring: Option<&Value>,
    file: &Path,
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
            score: scoring
                .and_then(|s| opt_f64(s, score_key))
                .or_else(|| judge.and_then(|j| opt_f64(j, "yes_rate"))),
            judged: judge.is_some(),
            judge_looped: judge.is_some_and(judge_looped),
            error: opt_str(v, error_key),
            submit_marker: opt_str(v, "submit_marker"),
            input_file: file.display().to_string(),
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
