//! Scoring a user's own mini-swe-agent runs on known Albedo samples: each
//! run is matched to a sample (by its id, or by the task text), its turns
//! after the sample's cut are its scored outputs, and the checklist scorer
//! answers that sample's questions for it. The overall score comes with the
//! interval the held-out calibration implies, and a warning when that is
//! too wide to resolve the duel margin.

use arrow::array::{Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::report::{ChecklistReport, CATASTROPHIC};
use super::store::{self, ModelMeta};
use super::{features, metrics, training, ScorerError, ScorerResult};
use crate::columns;
use crate::engine::{self, EngineError};
use crate::lake::Lake;
use crate::pipeline::sqlstep::run_script;
use crate::source::rows::{messages_batch, turns_batch};
use crate::source::{mswea, Record, TrajectoryRows};
use crate::storage::Location;

/// The margin assumed when the samples' eval runs record none (the reference's).
pub const DEFAULT_WIN_MARGIN: f64 = 0.025;

/// One scored run.
#[derive(Debug, Clone, Serialize)]
pub struct ScoredRun {
    pub file: String,
    pub traj_id: String,
    pub sample_id: String,
    pub eval_run_id: String,
    /// How the sample was found: `sample id`, `task text`.
    pub matched_by: String,
    pub cut: i64,
    pub scored_outputs: usize,
    pub questions: usize,
    pub predicted_score: f64,
    pub loop_verdict: bool,
    pub catastrophic: bool,
    /// The judge's score of the sample's king side, to compare with.
    pub king_score: Option<f64>,
    /// (question id, P(yes), predicted answer).
    #[serde(skip)]
    pub answers: Vec<(String, f64, bool)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScoreSummary {
    pub model_id: String,
    pub runs: Vec<ScoredRun>,
    pub overall_score: Option<f64>,
    /// Mean (predicted - king) over runs whose sample has a judged king.
    pub margin_vs_king: Option<f64>,
    /// 95% half-width of the mean margin, from the calibration's per-sample error.
    pub interval: Option<f64>,
    pub required_win_margin: f64,
    /// Paired samples needed to resolve the margin at 80% power.
    pub samples_needed: Option<u64>,
    /// The held-out precision of the catastrophic flag (calibration report).
    pub catastrophic_precision: Option<f64>,
    pub notes: Vec<String>,
    /// The runs' feature rows, as `scorer_features` holds a judged side's.
    #[serde(skip)]
    pub features: Vec<RecordBatch>,
}

/// A known sample: where its sides' scored outputs start and how many there are.
#[derive(Debug, Clone)]
struct Sample {
    eval_run_id: String,
    sample_id: String,
    first_t: i64,
    n_scored: i64,
    king_score: Option<f64>,
    task: Option<String>,
    required_win_margin: Option<f64>,
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `sql/scorer_known_samples.sql`: the samples a user's runs are matched against.
const KNOWN_SAMPLES_SQL: (&str, &str) = (
    "sql/scorer_known_samples.sql",
    include_str!("../../sql/scorer_known_samples.sql"),
);

async fn known_samples(ctx: &SessionContext) -> ScorerResult<Vec<Sample>> {
    features::register_lake_sides(ctx).await?;
    run_script(ctx, KNOWN_SAMPLES_SQL.0, KNOWN_SAMPLES_SQL.1).await?;
    let rows = engine::run_sql(
        ctx,
        "SELECT * FROM scorer_known_samples ORDER BY sample_id, eval_run_id",
        "known Albedo samples",
    )
    .await?;
    let runs = columns::strings(&rows, "eval_run_id");
    let ids = columns::strings(&rows, "sample_id");
    let first = columns::i64s(&rows, "first_t");
    let n = columns::i64s(&rows, "n_scored");
    let king = columns::f64s(&rows, "king_score");
    let task = columns::strings(&rows, "task");
    let margin = columns::f64s(&rows, "required_win_margin");
    Ok((0..runs.len())
        .map(|i| Sample {
            eval_run_id: runs[i].clone().unwrap_or_default(),
            sample_id: ids[i].clone().unwrap_or_default(),
            first_t: first[i].unwrap_or(1),
            n_scored: n[i].unwrap_or(0),
            king_score: king[i],
            task: task[i].as_deref().map(normalize),
            required_win_margin: margin[i],
        })
        .collect())
}

/// The sample a run is on: the given id, the run's own id, or its task text.
fn match_sample<'a>(
    samples: &'a [Sample],
    run: &TrajectoryRows,
    given: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<(&'a Sample, &'static str), String> {
    let file = &run.trajectory.input_file;
    // The first eval run (by id) holding a sample id stands for it.
    let by_id = |id: &str| samples.iter().find(|s| s.sample_id == id);
    let own = run
        .trajectory
        .instance_id
        .as_deref()
        .filter(|id| by_id(id).is_some());
    let task = run
        .messages
        .iter()
        .find(|m| m.role == "user")
        .map(|m| normalize(&m.content))
        .unwrap_or_default();
    let by_task: BTreeSet<&str> = samples
        .iter()
        .filter(|s| {
            s.task.as_deref().is_some_and(|t| {
                !t.is_empty()
                    && !task.is_empty()
                    && (t == task || task.contains(t) || t.contains(&task))
            })
        })
        .map(|s| s.sample_id.as_str())
        .collect();
    if by_task.len() > 1 {
        notes.push(format!(
            "{file}: its task text matches {} samples (different cut turns): {}",
            by_task.len(),
            by_task.iter().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(id) = given {
        return by_id(id)
            .map(|s| (s, "sample id"))
            .ok_or_else(|| format!("sample {id} is not in the lake's judged Albedo samples"));
    }
    if let Some(id) = own {
        return Ok((by_id(id).expect("checked"), "sample id"));
    }
    match by_task.len() {
        1 => Ok((
            by_id(by_task.first().unwrap()).expect("listed"),
            "task text",
        )),
        0 => Err(
            "no judged Albedo sample has this run's task text; give its sample id with --sample"
                .into(),
        ),
        _ => Err(
            "several samples share this run's task text; give the sample id with --sample".into(),
        ),
    }
}

/// Read every run file at `inputs` (files or folders of `*.traj.json`);
/// and how many entries the folder walks skipped.
async fn read_runs(inputs: &[String]) -> ScorerResult<(Vec<TrajectoryRows>, u64)> {
    let mut entries = Vec::new();
    let mut skipped = 0;
    for input in inputs {
        let listing = Location::parse(input)?.list().await?;
        skipped += listing.skipped;
        entries.extend(
            listing
                .entries
                .into_iter()
                .filter(|e| e.location.file_name().is_some_and(|n| mswea::wants(&n))),
        );
    }
    if entries.is_empty() {
        return Err(ScorerError::Data(format!(
            "no *.traj.json files in {}",
            inputs.join(", ")
        )));
    }
    tokio::task::spawn_blocking(move || {
        let mut runs = Vec::new();
        for entry in &entries {
            let mut failure = None;
            mswea::read_file(entry, &mut |record| match record {
                Record::Unit(unit) => runs.extend(unit.trajectories),
                Record::Reject(r) => {
                    failure = Some(format!(
                        "{}{}",
                        r.field.map(|f| format!("field {f}: ")).unwrap_or_default(),
                        r.reason
                    ))
                }
                _ => {}
            })
            .map_err(|e| ScorerError::Input {
                file: entry.location.to_string(),
                reason: e.to_string(),
            })?;
            if let Some(reason) = failure {
                return Err(ScorerError::Input {
                    file: entry.location.to_string(),
                    reason,
                });
            }
        }
        Ok((runs, skipped))
    })
    .await
    .map_err(|e| ScorerError::Data(e.to_string()))?
}

fn register(ctx: &SessionContext, name: &str, batch: RecordBatch) -> ScorerResult<()> {
    let _ = ctx.deregister_table(name);
    ctx.register_batch(name, batch).map(|_| ()).map_err(|e| {
        ScorerError::Engine(EngineError::Query {
            context: format!("registering {name}"),
            source: Box::new(e),
        })
    })
}

/// Score the runs at `inputs` with the lake's checklist scorer.
pub async fn score(
    lake: &Lake,
    inputs: &[String],
    sample: Option<&str>,
) -> ScorerResult<ScoreSummary> {
    let (meta, model) =
        store::load(lake, store::CHECKLIST, "run turnlake scorer fit first").await?;
    let report: Option<ChecklistReport> = store::load_report(lake, store::CHECKLIST, "").await.ok();
    let (runs, skipped) = read_runs(inputs).await?;
    let ctx = engine::session(lake).await?;
    let samples = known_samples(&ctx).await?;
    let mut notes = Vec::new();
    if skipped > 0 {
        notes.push(format!(
            "skipped {skipped} entries of the run folders that are not readable regular files (warned about above)"
        ));
    }
    let mut matched = Vec::new();
    for run in &runs {
        let (s, how) = match_sample(&samples, run, sample, &mut notes).map_err(|reason| {
            ScorerError::Input {
                file: run.trajectory.input_file.clone(),
                reason,
            }
        })?;
        if (run.turns.len() as i64) < s.first_t {
            notes.push(format!(
                "{}: {} turns end before the sample's cut (turn {}): nothing to score",
                run.trajectory.input_file,
                run.turns.len(),
                s.first_t - 1
            ));
        }
        matched.push((run, s, how));
    }

    // The runs as the features SQL reads sides, turns and messages (they
    // replace the lake's views of the same names in this session).
    let text = |v: Vec<&str>| Arc::new(StringArray::from(v));
    let sides = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("traj_id", DataType::Utf8, false),
            Field::new("eval_run_id", DataType::Utf8, false),
            Field::new("sample_id", DataType::Utf8, false),
            Field::new("side", DataType::Utf8, false),
            Field::new("model", DataType::Utf8, true),
            Field::new("first_t", DataType::Int64, false),
            Field::new("last_t", DataType::Int64, false),
        ])),
        vec![
            text(
                matched
                    .iter()
                    .map(|(r, _, _)| r.trajectory.traj_id.as_str())
                    .collect(),
            ),
            text(
                matched
                    .iter()
                    .map(|(_, s, _)| s.eval_run_id.as_str())
                    .collect(),
            ),
            text(
                matched
                    .iter()
                    .map(|(_, s, _)| s.sample_id.as_str())
                    .collect(),
            ),
            text(vec!["user"; matched.len()]),
            Arc::new(StringArray::from(
                matched
                    .iter()
                    .map(|(r, _, _)| r.trajectory.model.as_deref())
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                matched
                    .iter()
                    .map(|(_, s, _)| s.first_t)
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                matched
                    .iter()
                    .map(|(_, s, _)| s.first_t + s.n_scored - 1)
                    .collect::<Vec<_>>(),
            )),
        ],
    )
    .map_err(|e| ScorerError::Data(e.to_string()))?;
    let turns: Vec<_> = runs.iter().flat_map(|r| r.turns.iter().cloned()).collect();
    let messages: Vec<_> = runs
        .iter()
        .flat_map(|r| r.messages.iter().cloned())
        .collect();
    register(&ctx, "scorer_sides", sides)?;
    register(&ctx, "scorer_turns_src", turns_batch(&turns)?)?;
    register(&ctx, "scorer_messages_src", messages_batch(&messages)?)?;
    features::define(&ctx).await?;
    let rows = engine::run_sql(
        &ctx,
        &features::select_sql(),
        "features of the runs to score",
    )
    .await?;
    summarize(&meta, &model, &rows, matched, report, notes)
}

fn summarize(
    meta: &ModelMeta,
    model: &super::model::Model,
    rows: &[RecordBatch],
    matched: Vec<(&TrajectoryRows, &Sample, &str)>,
    report: Option<ChecklistReport>,
    mut notes: Vec<String>,
) -> ScorerResult<ScoreSummary> {
    let n = rows.iter().map(RecordBatch::num_rows).sum();
    let all: Vec<usize> = (0..n).collect();
    let p = training::predict(meta, model, rows, &all)?;
    let traj = columns::strings(rows, "traj_id");
    let qid = columns::strings(rows, "question_id");
    let looped = columns::bools(rows, "loop_verdict");
    let outputs = columns::f64s(rows, "n_outputs");
    let mut by_traj: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in traj.iter().enumerate() {
        by_traj
            .entry(t.as_deref().unwrap_or(""))
            .or_default()
            .push(i);
    }
    let mut scored = Vec::new();
    for (run, sample, how) in &matched {
        let idx = by_traj
            .get(run.trajectory.traj_id.as_str())
            .cloned()
            .unwrap_or_default();
        let loop_verdict = idx.iter().any(|&i| looped[i].unwrap_or(false));
        let answers: Vec<(String, f64, bool)> = idx
            .iter()
            .map(|&i| {
                let p = p[i] as f64;
                (
                    qid[i].clone().unwrap_or_default(),
                    p,
                    p >= meta.threshold && !loop_verdict,
                )
            })
            .collect();
        // A looped side is answered 0 everywhere, as the judge does.
        let predicted_score = metrics::mean(
            &answers
                .iter()
                .map(|(_, _, yes)| *yes as u8 as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        scored.push(ScoredRun {
            file: run.trajectory.input_file.clone(),
            traj_id: run.trajectory.traj_id.clone(),
            sample_id: sample.sample_id.clone(),
            eval_run_id: sample.eval_run_id.clone(),
            matched_by: how.to_string(),
            cut: sample.first_t - 1,
            scored_outputs: idx.first().and_then(|&i| outputs[i]).unwrap_or(0.0) as usize,
            questions: answers.len(),
            predicted_score,
            loop_verdict,
            catastrophic: predicted_score < CATASTROPHIC,
            king_score: sample.king_score,
            answers,
        });
    }
    let scores: Vec<f64> = scored.iter().map(|r| r.predicted_score).collect();
    let margins: Vec<f64> = scored
        .iter()
        .filter_map(|r| r.king_score.map(|k| r.predicted_score - k))
        .collect();
    // The duel margin of the samples' eval runs (the widest, when they differ).
    let margin = matched
        .iter()
        .filter_map(|(_, s, _)| s.required_win_margin)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
        .unwrap_or(DEFAULT_WIN_MARGIN);
    let sd = report.as_ref().and_then(|r| r.paired_error_sd);
    if sd.is_none() {
        notes.push("no calibration report (turnlake scorer eval): no interval".into());
    }
    let interval = sd.map(|sd| metrics::interval95(sd, margins.len().max(1)));
    let samples_needed = sd.map(|sd| metrics::samples_to_resolve(sd, margin));
    if let (Some(half), Some(needed)) = (interval, samples_needed) {
        if half >= margin {
            notes.push(format!(
                "too few samples to resolve the duel margin: {} paired sample(s) give +/- {half:.3}, \
                 wider than the {margin} margin; about {needed} are needed",
                margins.len()
            ));
        }
    }
    Ok(ScoreSummary {
        model_id: meta.model_id.clone(),
        overall_score: metrics::mean(&scores),
        margin_vs_king: metrics::mean(&margins),
        interval,
        required_win_margin: margin,
        samples_needed,
        catastrophic_precision: report.as_ref().and_then(|r| r.catastrophic_precision),
        runs: scored,
        notes,
        features: rows.to_vec(),
    })
}

/// Write one judged side of the first sample (by id) of `eval_run_id` as a
/// mini-swe-agent trajectory file under `dir`, as a user's own run on that
/// sample would look: the demo's and the tests' "own run".
pub async fn write_side_as_run(
    lake: &Lake,
    eval_run_id: &str,
    side: &str,
    dir: &std::path::Path,
) -> ScorerResult<std::path::PathBuf> {
    use datafusion::prelude::{col, lit};
    let ctx = engine::session(lake).await?;
    let query = |e: datafusion::error::DataFusionError| {
        ScorerError::Engine(EngineError::Query {
            context: format!("reading side {side} of eval run {eval_run_id}"),
            source: Box::new(e),
        })
    };
    let sides = ctx
        .table("trajectories")
        .await
        .and_then(|t| {
            t.filter(
                col("eval_run_id")
                    .eq(lit(eval_run_id))
                    .and(col("side").eq(lit(side))),
            )?
            .sort(vec![col("sample_id").sort(true, false)])?
            .limit(0, Some(1))
        })
        .map_err(query)?
        .collect()
        .await
        .map_err(query)?;
    let traj_id = columns::strings(&sides, "traj_id")
        .into_iter()
        .flatten()
        .next()
        .ok_or_else(|| ScorerError::Data(format!("eval run {eval_run_id} has no {side} side")))?;
    let messages = ctx
        .table("messages")
        .await
        .and_then(|t| {
            t.filter(col("traj_id").eq(lit(traj_id.as_str())))?
                .sort(vec![col("idx").sort(true, false)])
        })
        .map_err(query)?
        .collect()
        .await
        .map_err(query)?;
    let list: Vec<serde_json::Value> = columns::strings(&messages, "role")
        .into_iter()
        .zip(columns::strings(&messages, "content"))
        .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
        .collect();
    let run = serde_json::json!({
        "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "my-model"}}},
        "messages": list,
        "trajectory_format": "mini-swe-agent-1",
    });
    std::fs::create_dir_all(dir).map_err(|e| ScorerError::Input {
        file: dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let path = dir.join(format!("{side}-of-{eval_run_id}.traj.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&run).expect("json")).map_err(|e| {
        ScorerError::Input {
            file: path.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    Ok(path)
}
