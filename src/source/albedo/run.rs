//! Reading one eval-run folder, in the order its rules need: hash the three
//! artifacts (the run's `run_sha` says whether the lake holds it already),
//! read the verdict and who played, check the hashes the verdict records,
//! then the scoring results (sides need their scores), the generated samples
//! and last the judgments. Every record read is emitted as rows or as a
//! reject naming its file, line and field.

use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

use super::sample::{judged, sides};
use super::{RunFolder, GENERATED, SAMPLE_CHUNK, SCORING, SOURCE, VERDICT};
use crate::source::dashboard::{self, DashboardRun, ENTRY_FILE};
use crate::source::json::{
    opt_bool, opt_f64, opt_i64, opt_str, parse_record, req_str, FieldError, FieldResult,
};
use crate::source::rows::EvalRow;
use crate::source::{derive_checked, for_each_line, reject, Record, Unit};
use crate::storage::{Entry, Location};

use super::AlbedoOptions;

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

/// The artifacts of a run folder after the first pass.
struct RunFiles {
    verdict_bytes: Option<Vec<u8>>,
    verdict: Option<Artifact>,
    generated: Option<Artifact>,
    scoring: Option<Artifact>,
    /// The run's dashboard entry, as harvest saved it.
    entry: Option<(Vec<u8>, Entry)>,
}

impl RunFiles {
    fn read(run: &RunFolder) -> std::io::Result<RunFiles> {
        let verdict_bytes = match run.artifacts.get(VERDICT) {
            Some(e) => Some(e.read_blocking()?),
            None => None,
        };
        let verdict = verdict_bytes
            .as_ref()
            .zip(run.artifacts.get(VERDICT))
            .map(|(bytes, e)| Artifact {
                entry: e.clone(),
                sha: crate::digest::sha256_hex(bytes),
                records: 1,
            });
        let entry = match run.artifacts.get(ENTRY_FILE) {
            Some(e) => Some((e.read_blocking()?, e.clone())),
            None => None,
        };
        Ok(RunFiles {
            verdict_bytes,
            verdict,
            generated: scan(run.artifacts.get(GENERATED))?,
            scoring: scan(run.artifacts.get(SCORING))?,
            entry,
        })
    }

    fn artifacts(&self) -> [&Option<Artifact>; 3] {
        [&self.verdict, &self.generated, &self.scoring]
    }

    /// Records the three artifacts hold.
    fn records(&self) -> u64 {
        self.artifacts()
            .iter()
            .map(|a| a.as_ref().map_or(0, |a| a.records))
            .sum()
    }

    /// The run's content key: its artifacts' hashes, and who played (a run
    /// ingested before who played was known is read again).
    fn run_sha(&self, players: Option<&DashboardRun>) -> String {
        let mut h = Sha256::new();
        for a in self.artifacts() {
            h.update(a.as_ref().map(|a| a.sha.as_str()).unwrap_or("-"));
        }
        if let Some(p) = players {
            h.update(p.entry.to_string());
        }
        hex::encode(h.finalize())
    }
}

/// verdict.json as a JSON object (`None`: the run has none), or why it is not one.
fn parse_verdict(bytes: Option<&[u8]>) -> Result<Option<Value>, String> {
    match bytes {
        None => Ok(None),
        Some(bytes) => match parse_record(bytes) {
            Ok(val) if val.is_object() => Ok(Some(val)),
            Ok(_) => Err("verdict.json is not a JSON object".to_string()),
            Err(e) => Err(e.reason),
        },
    }
}

/// Who played: the run's own dashboard entry, else the dashboard given to
/// ingest. An entry that cannot be read is a note, and who played is left out.
fn players(
    files: &RunFiles,
    opts: &AlbedoOptions,
    eval_run_id: &str,
    emit: &mut dyn FnMut(Record),
) -> Option<DashboardRun> {
    let Some((bytes, e)) = &files.entry else {
        return opts.players.get(eval_run_id).cloned();
    };
    match parse_record(bytes).and_then(|v| dashboard::run_entry(&v, "")) {
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
    }
}

/// What verdict.json records of one artifact: its sha256 (without the
/// `sha256:` prefix Albedo writes), its size, and where Albedo keeps it
/// (provenance, never fetched).
#[derive(Debug, Default, PartialEq)]
struct Recorded {
    sha: Option<String>,
    size: Option<i64>,
    uri: Option<String>,
}

impl Recorded {
    fn of(verdict: Option<&Value>, key: &str) -> Recorded {
        let meta = verdict
            .and_then(|v| v.get("artifact_metadata"))
            .and_then(|m| m.get(key));
        Recorded {
            sha: meta
                .and_then(|m| opt_str(m, "sha256"))
                .map(|s| s.trim_start_matches("sha256:").to_string()),
            size: meta.and_then(|m| opt_i64(m, "size_bytes")),
            uri: meta.and_then(|m| opt_str(m, "uri")),
        }
    }
}

/// Each artifact whose hash differs from the one verdict.json records,
/// described with both hashes (hex compared without regard to case).
fn hash_mismatches(pairs: [(Option<&Artifact>, &Recorded); 2]) -> Vec<String> {
    pairs
        .into_iter()
        .filter_map(|(art, recorded)| {
            let (a, want) = (art?, recorded.sha.as_ref()?);
            (!a.sha.eq_ignore_ascii_case(want)).then(|| {
                format!(
                    "{}: sha256 mismatch: verdict.json records {want}, the file hashes to {}",
                    a.entry.location, a.sha
                )
            })
        })
        .collect()
}

/// A hash mismatch rejects every record of the run, each with the reason.
fn reject_run(
    files: &RunFiles,
    verdict_read: bool,
    mismatches: &[String],
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<()> {
    let reason = format!(
        "{} (use --no-verify to ingest anyway)",
        mismatches.join("; ")
    );
    emit(Record::Note(reason.clone()));
    for a in [&files.generated, &files.scoring].into_iter().flatten() {
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
    if let (Some(v), true) = (&files.verdict, verdict_read) {
        emit(reject(
            SOURCE,
            &v.entry.location,
            None,
            Some("sha256"),
            reason,
            files.verdict_bytes.as_deref().unwrap_or_default(),
        ));
    }
    Ok(())
}

/// The run's evals row: the verdict's fields (all null without one), the
/// recorded artifacts, whether their hashes were checked, and who played.
fn eval_row(
    eval_run_id: &str,
    verdict: Option<&Value>,
    [generated, scoring]: [&Recorded; 2],
    hashes_verified: bool,
    run_sha: &str,
    dir: &Location,
    players: Option<&DashboardRun>,
) -> EvalRow {
    let v = verdict.unwrap_or(&Value::Null);
    EvalRow {
        eval_run_id: eval_run_id.to_string(),
        challenger_won: opt_bool(v, "challenger_won"),
        score_challenger: opt_f64(v, "score_challenger"),
        score_king: opt_f64(v, "score_king"),
        required_win_margin: opt_f64(v, "required_win_margin"),
        scored_sample_count: opt_i64(v, "scored_sample_count"),
        judge_count: opt_i64(v, "judge_count"),
        scoring_mode: opt_str(v, "scoring_mode"),
        state: opt_str(v, "state"),
        generated_samples_sha256: generated.sha.clone(),
        generated_samples_size: generated.size,
        scoring_results_sha256: scoring.sha.clone(),
        scoring_results_size: scoring.size,
        hashes_verified,
        run_sha: run_sha.to_string(),
        generated_samples_uri: generated.uri.clone(),
        scoring_results_uri: scoring.uri.clone(),
        input_path: dir.to_string(),
        challenger: players.map(|p| p.challenger.clone()).unwrap_or_default(),
        king: players.map(|p| p.king.clone()).unwrap_or_default(),
        king_version: players.and_then(|p| p.king_version),
    }
}

/// The scoring results by sample_id, each with its line, its parsed value
/// and the head of its bytes (for a reject), in file order.
#[derive(Default)]
struct Scores {
    by_id: BTreeMap<String, (i64, Value, Vec<u8>)>,
    order: Vec<String>,
}

/// Read scoring-results.jsonl: a line that is not JSON, has no sample_id or
/// repeats one is rejected, naming the first line of the id it repeats.
fn read_scores(a: &Artifact, emit: &mut dyn FnMut(Record)) -> std::io::Result<Scores> {
    let mut scores = Scores::default();
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
            Ok((id, _)) if scores.by_id.contains_key(&id) => {
                let first = scores.by_id[&id].0;
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
                scores.order.push(id.clone());
                let head = bytes[..bytes.len().min(crate::source::REJECT_RAW_CAP)].to_vec();
                scores.by_id.insert(id, (line, v, head));
            }
        }
    })?;
    Ok(scores)
}

/// Read generated-samples.jsonl into each sample's two sides, a chunk of
/// samples at a time on every core; duplicates are found and records
/// emitted in file order. Returns the line of each sample_id read.
fn read_samples(
    a: &Artifact,
    eval_run_id: &str,
    scores: &Scores,
    players: Option<&DashboardRun>,
    emit: &mut dyn FnMut(Record),
) -> std::io::Result<HashMap<String, i64>> {
    let mut seen: HashMap<String, i64> = HashMap::new();
    let derive_sample = |bytes: &[u8], line: i64| {
        let (sample_id, v) = parse_record(bytes).and_then(|v| {
            let id = req_str(&v, "sample_id", "")?;
            Ok((id, v))
        })?;
        let sides = sides(
            &v,
            eval_run_id,
            &sample_id,
            scores.by_id.get(&sample_id).map(|(_, s, _)| s),
            players,
            &a.entry.location,
            line,
        )
        .and_then(|sides| {
            sides
                .into_iter()
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
            if let Some(first) = seen.get(&sample_id) {
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
            seen.insert(sample_id, line);
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
    Ok(seen)
}

/// Each scoring result's questions and judgments, in file order; a note
/// counts those whose sample has no generated line (they are kept).
fn read_judgments(
    a: &Artifact,
    scores: &Scores,
    seen: &HashMap<String, i64>,
    eval_run_id: &str,
    dir: &Location,
    emit: &mut dyn FnMut(Record),
) {
    let mut missing = 0;
    for id in &scores.order {
        let (line, v, raw) = &scores.by_id[id];
        if !seen.contains_key(id) {
            missing += 1;
        }
        match judged(v, eval_run_id, id) {
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
    let files = RunFiles::read(run)?;
    // verdict.json: one record; the run id falls back to the folder name.
    let verdict = parse_verdict(files.verdict_bytes.as_deref());
    let eval_run_id = verdict
        .as_ref()
        .ok()
        .and_then(|v| v.as_ref())
        .and_then(|v| opt_str(v, "eval_run_id"))
        .unwrap_or(dir.file_name().unwrap_or_default());
    let players = players(&files, opts, &eval_run_id, emit);
    let run_sha = files.run_sha(players.as_ref());
    if known.get(&eval_run_id) == Some(&run_sha) {
        emit(Record::Unchanged(files.records()));
        return Ok(());
    }
    let verdict = match verdict {
        Ok(v) => v,
        Err(reason) => {
            let v = files
                .verdict
                .as_ref()
                .expect("a parse error implies a file");
            let bytes = files.verdict_bytes.as_deref().unwrap_or_default();
            emit(reject(SOURCE, &v.entry.location, None, None, reason, bytes));
            None
        }
    };
    if files.verdict.is_none() {
        emit(Record::Note(format!(
            "{dir}: no {VERDICT}; hashes cannot be verified"
        )));
    }

    let recorded = [
        Recorded::of(verdict.as_ref(), "generated_samples"),
        Recorded::of(verdict.as_ref(), "scoring_results"),
    ];
    let mismatches = hash_mismatches([
        (files.generated.as_ref(), &recorded[0]),
        (files.scoring.as_ref(), &recorded[1]),
    ]);
    if opts.verify && !mismatches.is_empty() {
        return reject_run(&files, verdict.is_some(), &mismatches, emit);
    }
    if known.contains_key(&eval_run_id) {
        emit(Record::ReplaceRun(eval_run_id.clone()));
    }
    // Every run gets its evals row (with the run_sha that makes re-ingest
    // idempotent), even when verdict.json is missing or was rejected.
    let eval = eval_row(
        &eval_run_id,
        verdict.as_ref(),
        [&recorded[0], &recorded[1]],
        opts.verify && recorded.iter().all(|r| r.sha.is_some()) && mismatches.is_empty(),
        &run_sha,
        dir,
        players.as_ref(),
    );
    let pending_eval = if verdict.is_some() {
        emit(Record::Unit(Unit {
            evals: vec![eval],
            ..Default::default()
        }));
        None
    } else {
        // No verdict record was accepted: the evals row comes with the
        // run's end, not counted as a record read.
        Some(eval)
    };

    // scoring-results.jsonl first: sides need their scores and loop verdicts.
    let scores = match &files.scoring {
        Some(a) => read_scores(a, emit)?,
        None => Scores::default(),
    };
    let seen = match &files.generated {
        Some(a) => read_samples(a, &eval_run_id, &scores, players.as_ref(), emit)?,
        None => HashMap::new(),
    };
    if let Some(a) = &files.scoring {
        read_judgments(a, &scores, &seen, &eval_run_id, dir, emit);
    }
    let unscored = seen
        .keys()
        .filter(|id| !scores.by_id.contains_key(*id))
        .count();
    if unscored > 0 {
        emit(Record::Note(format!(
            "{dir}: {unscored} sample(s) in {GENERATED} have no scoring result; kept with judged = false"
        )));
    }
    emit(Record::RunDone(eval_run_id, pending_eval.map(Box::new)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local artifact of `text`, hashed and counted as the first pass does.
    fn artifact(dir: &std::path::Path, name: &str, text: &str) -> Artifact {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let entry = Entry {
            location: Location::Local(path),
            size: text.len() as u64,
            etag: None,
        };
        scan(Some(&entry)).unwrap().unwrap()
    }

    fn rejects(records: &[Record]) -> Vec<(Option<i64>, Option<String>, String)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Reject(r) => Some((r.line, r.field.clone(), r.reason.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_verdict_records_each_artifact_with_albedos_sha256_prefix() {
        // As the real verdict.json writes them.
        let verdict: Value = serde_json::from_str(
            r#"{"artifact_metadata": {"generated_samples": {
                "sha256": "sha256:026B6208f87845869bac966885146e8eaf268c0c779d00759632b2ac02ce272e",
                "size_bytes": 17931405, "uri": "s3://albedo/eval/x/generated-samples.jsonl"}}}"#,
        )
        .unwrap();
        let r = Recorded::of(Some(&verdict), "generated_samples");
        assert_eq!(
            r.sha.as_deref(),
            Some("026B6208f87845869bac966885146e8eaf268c0c779d00759632b2ac02ce272e")
        );
        assert_eq!(r.size, Some(17931405));
        assert_eq!(
            r.uri.as_deref(),
            Some("s3://albedo/eval/x/generated-samples.jsonl")
        );
        assert_eq!(
            Recorded::of(Some(&verdict), "scoring_results"),
            Recorded::default()
        );
        assert_eq!(Recorded::of(None, "generated_samples"), Recorded::default());
    }

    #[test]
    fn a_verdict_must_be_one_json_object() {
        assert_eq!(parse_verdict(None), Ok(None));
        assert!(parse_verdict(Some(br#"{"eval_run_id": "x"}"#))
            .unwrap()
            .is_some());
        assert_eq!(
            parse_verdict(Some(b"[1, 2]")),
            Err("verdict.json is not a JSON object".into())
        );
        assert!(parse_verdict(Some(b"{\"eval_run_id\": ")).is_err());
    }

    #[test]
    fn a_hash_mismatch_names_the_file_and_both_hashes_and_case_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let a = artifact(
            dir.path(),
            "generated-samples.jsonl",
            "{\"sample_id\": \"s1\"}\n",
        );
        let same = Recorded {
            sha: Some(a.sha.to_uppercase()),
            ..Default::default()
        };
        let other = Recorded {
            sha: Some("00".repeat(32)),
            ..Default::default()
        };
        assert!(hash_mismatches([(Some(&a), &same), (None, &other)]).is_empty());
        let m = hash_mismatches([(Some(&a), &other), (Some(&a), &Recorded::default())]);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].contains("generated-samples.jsonl")
                && m[0].contains(&a.sha)
                && m[0].contains(&"00".repeat(32)),
            "{}",
            m[0]
        );
    }

    #[test]
    fn scoring_lines_without_an_id_or_repeating_one_are_rejected_by_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        // The real file's answers are strings ("1"); ids repeat across eval runs, never within one.
        let a = artifact(
            dir.path(),
            "scoring-results.jsonl",
            concat!(
                "{\"sample_id\": \"s1\", \"judge_results\": [{\"answers\": {\"q_01\": \"1\"}}]}\n",
                "not json\n",
                "{\"judge_results\": []}\n",
                "{\"sample_id\": \"s1\"}\n",
                "{\"sample_id\": \"s2\"}\n",
            ),
        );
        let mut out = Vec::new();
        let scores = read_scores(&a, &mut |r| out.push(r)).unwrap();
        assert_eq!(scores.order, ["s1", "s2"]);
        assert_eq!(scores.by_id["s2"].0, 5);
        let r = rejects(&out);
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!((r[0].0, r[0].1.as_deref()), (Some(2), None));
        assert_eq!((r[1].0, r[1].1.as_deref()), (Some(3), Some("sample_id")));
        assert_eq!((r[2].0, r[2].1.as_deref()), (Some(4), Some("sample_id")));
        assert!(r[2].2.contains("first at line 1"), "{}", r[2].2);
    }

    #[test]
    fn without_a_verdict_the_evals_row_is_all_null_but_who_played_and_where() {
        let dir = Location::Local("/runs/r1".into());
        let e = eval_row(
            "r1",
            None,
            [&Recorded::default(), &Recorded::default()],
            false,
            "abc",
            &dir,
            None,
        );
        assert_eq!((e.eval_run_id.as_str(), e.run_sha.as_str()), ("r1", "abc"));
        assert_eq!(e.challenger_won, None);
        assert!(!e.hashes_verified);
        assert_eq!(e.input_path, "/runs/r1");
    }
}
