//! One record of an eval run: a generated sample's two duel sides, and a
//! scoring result's checklist questions and each side's judgments.

use serde_json::Value;

use super::{traj_id, SIDES, SOURCE};
use crate::source::dashboard::DashboardRun;
use crate::source::json::{
    opt_bool, opt_f64, opt_str, req_array, req_str, FieldError, FieldResult,
};
use crate::source::rows::{JudgmentRow, QuestionRow};
use crate::source::{RawMessage, RawTrajectory};
use crate::storage::Location;
use crate::turn::parse_citations;

/// The two duel sides of one generated sample.
pub(super) fn sides(
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
pub(super) fn judged(
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
