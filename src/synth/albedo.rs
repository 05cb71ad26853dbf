//! Synthetic Albedo eval runs: `generated-samples.jsonl`,
//! `scoring-results.jsonl` and a `verdict.json` whose artifact hashes and
//! sizes match the files written.

use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

use super::checklist::{self, Answer, PlantedAnswers};
use super::params::{KindTable, Params, KINDS};
use super::plan::{plan_sample, PlannedTurn, Tally};
use super::rng::Rng;
use super::text::{assistant, command, observation, Dialect, Repo};
use super::Counts;
use crate::turn::checklist::OutputMeasures;
use crate::turn::ObsFormat;

/// How often a citation is written in one of the judge's other forms.
const OTHER_CITATION_FORM_RATE: f64 = 0.015;
const SYSTEM: &str = "You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve tasks.\n\n<ROLE>\nYour primary role is to assist users by executing commands, modifying code, and solving technical problems effectively.\n</ROLE>";
const YES_CITED: &[&str] = &[
    "{c} reads the relevant code with an explicit line range before acting.",
    "The search in {c} narrows to the symbol the issue names.",
    "{c} displays the faulty region before the candidate concludes.",
    "{c} runs the check that confirms the change, using the line numbers a previous observation showed.",
];
const YES_PLAIN: &[&str] = &[
    "The candidate keeps its reads narrow and never re-dumps a file it already saw.",
    "The candidate converges on a single target rather than listing several files.",
];
const NO_PLAIN: &[&str] = &[
    "The candidate never runs a git command before editing; no git status appears in the scored outputs.",
    "No modifying command is issued in the scored outputs, so this cannot be verified.",
];
const NO_CITED: &[&str] = &[
    "{c} repeats an earlier read without narrowing it.",
    "{c} re-runs the same command after its output was already shown.",
];

/// The citation text for a set of output numbers, in one of the judge's forms.
/// A citation as real judges sometimes write it: another case, or the bare
/// upper-case `OUTPUT N` shorthand.
fn restyle(rng: &mut Rng, citation: String) -> String {
    if !rng.chance(OTHER_CITATION_FORM_RATE) {
        return citation;
    }
    let form = [
        "Candidate output",
        "Candidate Output",
        "candidate output",
        "OUTPUT",
    ];
    let word = *rng.pick(&form);
    match citation.strip_prefix("CANDIDATE OUTPUTS") {
        Some(rest) if word == "OUTPUT" => format!("OUTPUTS{rest}"),
        Some(rest) => format!("{word}s{rest}"),
        None => citation.replacen("CANDIDATE OUTPUT", word, 1),
    }
}

pub fn cite(ns: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &n in ns {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == n => *hi = n,
            _ => runs.push((n, n)),
        }
    }
    match (ns.len(), runs.len()) {
        (1, _) => format!("CANDIDATE OUTPUT {}", ns[0]),
        (_, 1) => format!("CANDIDATE OUTPUTS {}-{}", runs[0].0, runs[0].1),
        (2, _) => format!("CANDIDATE OUTPUTS {} and {}", ns[0], ns[1]),
        _ if runs.iter().all(|(a, b)| a == b) => {
            format!(
                "CANDIDATE OUTPUTS {}",
                ns.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            )
        }
        _ => format!(
            "CANDIDATE OUTPUTS {}",
            runs.iter()
                .map(|(a, b)| if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Groups of output numbers, one per yes-answer, so that output N is cited by exactly its credit.
fn citation_groups(rng: &mut Rng, own: &[PlannedTurn]) -> Vec<Vec<u32>> {
    let mut groups = Vec::new();
    let max = own.iter().map(|t| t.credit).max().unwrap_or(0);
    for round in 0..max {
        let set: Vec<u32> = own
            .iter()
            .enumerate()
            .filter(|(_, t)| t.credit > round)
            .map(|(i, _)| i as u32 + 1)
            .collect();
        let mut i = 0;
        while i < set.len() {
            let size = (rng.range(1, 3) as usize).min(set.len() - i);
            groups.push(set[i..i + size].to_vec());
            i += size;
        }
    }
    groups
}

fn turn_json(role: &str, content: &str, score_target: bool, observation: bool) -> Value {
    let mut m = Map::new();
    m.insert("content".into(), json!(content));
    if observation {
        m.insert("environment_observation".into(), json!(true));
    }
    m.insert("role".into(), json!(role));
    if score_target {
        m.insert("score_target".into(), json!(true));
    }
    Value::Object(m)
}

fn render_for_judge(turns: &[Value], n_scored: u32) -> String {
    let mut out = format!(
        "FULL CANDIDATE TRAJECTORY\nScore ONLY CANDIDATE OUTPUT 1 through CANDIDATE OUTPUT {n_scored}. The ENVIRONMENT OBSERVATION is context only.\n"
    );
    let mut n = 0;
    for t in turns {
        let role = t["role"].as_str().unwrap_or("");
        let content = t["content"].as_str().unwrap_or("");
        let head = if t.get("score_target").is_some() {
            n += 1;
            format!("CANDIDATE OUTPUT {n}:")
        } else if t.get("environment_observation").is_some() {
            "ENVIRONMENT OBSERVATION:".to_string()
        } else {
            format!("CONTEXT {} (do not score):", role.to_uppercase())
        };
        out.push_str(&format!("\n{head}\n------\n{content}\n"));
    }
    out
}

fn chatml(turns: &[Value]) -> String {
    let mut s = String::new();
    for t in turns {
        s.push_str(&format!(
            "<|im_start|>{}\n{}<|im_end|>\n",
            t["role"].as_str().unwrap_or(""),
            t["content"].as_str().unwrap_or("")
        ));
    }
    s.push_str("<|im_start|>assistant\n<think>\n");
    s
}

/// The share of sides the planted mixture effect makes fluent.
const FLUENT: f64 = 0.3;

/// What a run adds to the corpus's truth.
pub struct Tallies<'a> {
    pub counts: &'a mut Counts,
    pub tally: &'a mut Tally,
    pub planted: &'a mut PlantedAnswers,
}

/// Write one eval run into `dir`; returns its id.
pub fn write_run(
    dir: &Path,
    rng: &mut Rng,
    p: &Params,
    k: &KindTable,
    samples: u32,
    out: &mut Tallies,
) -> std::io::Result<String> {
    let Tallies {
        counts,
        tally,
        planted,
    } = out;
    let m = &p.model;
    let eval_run_id = rng.uuid();
    let run_dir = dir.join(&eval_run_id);
    std::fs::create_dir_all(&run_dir)?;
    let mut generated = Vec::new();
    let mut scoring = Vec::new();
    let (mut sum_chal, mut sum_king) = (0.0, 0.0);
    let format = if rng.chance(0.7) {
        ObsFormat::OpenHands
    } else {
        ObsFormat::Returncode
    };
    let fence = "bash";
    let marker = format!("SUBMIT_TASK_{}", rng.hex(8));
    for s in 0..samples {
        let plan = plan_sample(rng, k, m);
        let context = &plan.context;
        let repo = Repo::new(rng);
        let sample_id = format!(
            "synth-traces/data/train-{:05}.parquet:{}:{}",
            rng.range(0, 59),
            s,
            context.len()
        );
        let mut ctx_turns = vec![
            turn_json("system", SYSTEM, false, false),
            turn_json("user", &format!("<uploaded_files>\n{}\n</uploaded_files>\nFix the failing behaviour described in issue #{}.", repo.root, rng.range(1, 9999)), false, false),
        ];
        let mut last_cmd = String::new();
        for t in context {
            let cmd = if t.repeat {
                last_cmd.clone()
            } else {
                command(rng, &repo, t.kind, &marker)
            };
            ctx_turns.push(turn_json(
                "assistant",
                &assistant(rng, t, &cmd, fence, None),
                false,
                false,
            ));
            ctx_turns.push(turn_json(
                "user",
                &observation(rng, t, &cmd, format),
                false,
                false,
            ));
            last_cmd = cmd;
        }
        let mut sides = Vec::new();
        for (i, side) in ["previous_king", "challenger"].into_iter().enumerate() {
            let (looped, own) = plan.sides[i].clone();
            let mut turns = ctx_turns.clone();
            let mut cmd_prev = last_cmd.clone();
            let mut loop_cmd = String::new();
            let mut outputs = Vec::with_capacity(own.len());
            let fluent = p.plant.mixture && rng.chance(FLUENT);
            for t in &own {
                let cmd = if t.repeat {
                    cmd_prev.clone()
                } else {
                    command(rng, &repo, t.kind, &marker)
                };
                if loop_cmd.is_empty() {
                    loop_cmd = cmd.clone();
                }
                // The planted mixture effect: a fluent side thinks in either
                // dialect, one chosen per turn.
                let dialect = fluent.then(|| match rng.chance(0.5) {
                    true => Dialect::Ledger,
                    false => Dialect::Probe,
                });
                let text = assistant(rng, t, &cmd, fence, dialect);
                turns.push(turn_json("assistant", &text, true, false));
                outputs.push(text);
                if t.has_obs {
                    turns.push(turn_json(
                        "user",
                        &observation(rng, t, &cmd, format),
                        false,
                        true,
                    ));
                }
                cmd_prev = cmd;
            }
            let full = plan.full(i);
            tally.add(&full, true, looped);
            counts.escape_duel_rows += super::plan::escape_duel_rows(&full);
            counts.sides += 1;
            counts.albedo_turns += full.len() as u64;
            counts.albedo_messages += turns.len() as u64;
            let measured = OutputMeasures::of(outputs.iter().map(String::as_str));
            sides.push((side, looped, own, turns, loop_cmd, measured, fluent));
        }
        // The checklist, then each side's answers with citations.
        let groups: Vec<Vec<Vec<u32>>> = sides
            .iter()
            .map(|(_, _, own, _, _, _, _)| citation_groups(rng, own))
            .collect();
        let n_behaviour = (m.questions_min as usize)
            .max(groups.iter().map(Vec::len).max().unwrap_or(0))
            + rng.range(0, 2) as usize;
        let n_economy = rng.range(
            m.economy_questions_min as u64,
            m.economy_questions_max as u64,
        ) as usize;
        let measures = [sides[0].5, sides[1].5];
        let checklist = checklist::checklist(
            rng,
            &repo,
            &KINDS,
            &k.mix,
            n_behaviour,
            n_economy,
            &measures,
        );
        let n_q = checklist.len();
        let questions: Vec<Value> = checklist
            .iter()
            .enumerate()
            .map(|(i, q)| {
                json!({"category": q.category, "example_bad": "Candidate dumps a whole file without a range.",
                       "id": format!("q_{:02}", i + 1), "requires": q.requires, "tag": q.tag,
                       "text": q.text})
            })
            .collect();
        counts.questions += n_q as u64;
        let mut judge_results = Vec::new();
        let mut scores = Vec::new();
        for ((side, looped, own, _, loop_cmd, measured, fluent), groups) in
            sides.iter().zip(&groups)
        {
            let mut answers = Map::new();
            let mut explanations = Map::new();
            let mut text = vec![String::new(); n_q];
            let mut yes = vec![false; n_q];
            let mut diligence =
                checklist::diligence(rng, own, m.yes_uncited_min, m.yes_uncited_max);
            if p.plant.mixture {
                // The planted effect's judge finds fluent sides diligent and
                // the others not.
                diligence = match fluent {
                    true => m.yes_uncited_max,
                    false => m.yes_uncited_min,
                };
            }
            if *looped {
                for t in text.iter_mut() {
                    *t = "Trajectory is looped: the same command repeats across the scored outputs, so every check fails.".into();
                }
                for _ in 0..n_q {
                    planted.add(0.0, false);
                }
            } else {
                let drawn = checklist::answer(
                    rng,
                    &checklist,
                    own,
                    measured,
                    groups,
                    diligence,
                    m.economy_flip,
                );
                for (q, a) in drawn.answers.iter().enumerate() {
                    yes[q] = *a != Answer::No;
                    planted.add(drawn.p_yes[q], yes[q]);
                    text[q] =
                        match (a, checklist[q].economy) {
                            (Answer::Cited(g), _) => {
                                let c = restyle(rng, cite(g));
                                rng.pick(YES_CITED).replace("{c}", &c)
                            }
                            (_, Some((measure, limit))) => {
                                let v = measure.of(measured);
                                format!(
                                "The {} of the CANDIDATE OUTPUT measures {v:.0}, {} {limit:.0}.",
                                measure.as_str().replace('_', " "),
                                if yes[q] { "which is within" } else { "which exceeds" }
                            )
                            }
                            (Answer::Yes, None) => rng.pick(YES_PLAIN).to_string(),
                            (Answer::No, None) if rng.chance(m.blame_rate) => {
                                let n = rng.range(1, own.len() as u64) as u32;
                                let c = restyle(rng, cite(&[n]));
                                rng.pick(NO_CITED).replace("{c}", &c)
                            }
                            (Answer::No, None) => rng.pick(NO_PLAIN).to_string(),
                        };
                }
            }
            for q in 0..n_q {
                let id = format!("q_{:02}", q + 1);
                answers.insert(id.clone(), json!(if yes[q] { "1" } else { "0" }));
                explanations.insert(id, json!(text[q]));
            }
            counts.judgments += n_q as u64;
            let score =
                (yes.iter().filter(|y| **y).count() as f64 / n_q as f64 * 1e6).round() / 1e6;
            scores.push(score);
            let mut jr = Map::new();
            jr.insert("answers".into(), Value::Object(answers));
            jr.insert("error".into(), Value::Null);
            jr.insert("explanations".into(), Value::Object(explanations));
            jr.insert("judge_model".into(), json!("synth/judge-1"));
            if *looped {
                jr.insert("loop_commands".into(), json!([loop_cmd]));
                jr.insert("loop_reasons".into(), json!(["max_cmd_run>=6"]));
                jr.insert("looped".into(), json!(true));
            }
            jr.insert("parse_ok".into(), json!(true));
            jr.insert("provider".into(), Value::Null);
            jr.insert("side".into(), json!(side));
            jr.insert("yes_rate".into(), json!(score));
            judge_results.push(Value::Object(jr));
        }
        sum_king += scores[0];
        sum_chal += scores[1];
        let turns_of = |i: usize| Value::Array(sides[i].3.clone());
        let sample = json!({
            "chal_error": null,
            "challenger_output": render_for_judge(&sides[1].3, m.scored_per_side),
            "challenger_turns": turns_of(1),
            "eval_run_id": eval_run_id,
            "king_error": null,
            "previous_king_output": render_for_judge(&sides[0].3, m.scored_per_side),
            "previous_king_turns": turns_of(0),
            "prompt": chatml(&ctx_turns),
            "sample_id": sample_id,
            "submit_marker": marker,
        });
        writeln!(generated, "{sample}")?;
        let result = json!({
            "challenger_score": scores[1],
            "judge_results": judge_results,
            "king_score": scores[0],
            "question_source": {"n_questions": n_q, "question_mode": "sota_anchored", "sample_phase": rng.pick(&["cold", "pre_edit", "at_edit"])},
            "questions": questions,
            "sample_id": sample_id,
            "scored": true,
            "scoring_mode": "binary",
        });
        writeln!(scoring, "{result}")?;
        counts.samples += 1;
    }
    let meta = |name: &str, bytes: &[u8]| {
        json!({"bucket": "albedo", "content_type": "application/x-ndjson",
               "sha256": format!("sha256:{}", crate::digest::sha256_hex(bytes)),
               "size_bytes": bytes.len(), "uri": format!("s3://albedo/eval/{eval_run_id}/{name}")})
    };
    let n = samples.max(1) as f64;
    let (sc, sk) = (
        (sum_chal / n * 1e6).round() / 1e6,
        (sum_king / n * 1e6).round() / 1e6,
    );
    let verdict = json!({
        "artifact_metadata": {"generated_samples": meta("generated-samples.jsonl", &generated),
                              "scoring_results": meta("scoring-results.jsonl", &scoring)},
        "challenger_won": sc > sk + 0.03,
        "eval_run_id": eval_run_id,
        "judge_count": 1,
        "required_win_margin": 0.03,
        "score_challenger": sc,
        "score_king": sk,
        "scored_sample_count": samples,
        "scoring_mode": "binary",
        "state": "succeeded",
        "type": "verdict",
    });
    std::fs::write(run_dir.join("generated-samples.jsonl"), &generated)?;
    std::fs::write(run_dir.join("scoring-results.jsonl"), &scoring)?;
    std::fs::write(
        run_dir.join("verdict.json"),
        serde_json::to_vec_pretty(&verdict)?,
    )?;
    counts.bytes += (generated.len() + scoring.len()) as u64;
    Ok(eval_run_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::parse_citations;

    #[test]
    fn every_citation_form_parses_back() {
        let cases: &[&[u32]] = &[
            &[3],
            &[1, 2],
            &[3, 5],
            &[1, 2, 3, 4, 5, 7, 8],
            &[3, 4, 5, 6, 7, 8],
            &[1, 3, 6],
            &[2, 5, 6],
        ];
        for ns in cases {
            assert_eq!(&parse_citations(&cite(ns)), ns, "{}", cite(ns));
        }
    }
}
