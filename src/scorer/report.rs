//! The checklist scorer's held-out calibration report: how its answers
//! agree with the judge's on eval runs it was not fit on, per question, per
//! side, per pair and per duel, and whether its loop verdict matches the
//! judge's. Definitions follow the issue: accuracy and AUC pooled over
//! held-out (side, question) pairs; a side's predicted score is the mean of
//! its thresholded answers, the judge's its yes-rate; looped sides are left
//! out and reported separately.

use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::loop_check::{loop_check, LoopCheck};
use super::metrics::{self, interval95};
use super::model::Model;
use super::split::Part;
use super::store::ModelMeta;
use super::training::{self, Table};
use super::ScorerResult;
use crate::columns;

/// Sides scoring below this are catastrophic.
pub const CATASTROPHIC: f64 = 0.35;
/// Paired-sample counts the interval is given for.
pub const PAIRED_SAMPLES: [usize; 3] = [100, 500, 1000];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TagRow {
    pub tag: String,
    pub rows: usize,
    pub yes_rate: f64,
    pub accuracy: Option<f64>,
    pub auc: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    pub paired_samples: usize,
    /// Half-width of the 95% interval of the mean margin error.
    pub half_width: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndToEnd {
    pub eval_run_id: String,
    pub paired_samples: usize,
    pub judge_king: f64,
    pub judge_challenger: f64,
    pub predicted_king: f64,
    pub predicted_challenger: f64,
    pub required_win_margin: Option<f64>,
    /// Whether the challenger clears the margin, by the judge and by the scorer.
    pub judge_challenger_wins: bool,
    pub predicted_challenger_wins: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChecklistReport {
    pub model_id: String,
    pub lake_commit: Option<u64>,
    pub held_out_runs: usize,
    pub held_out_samples: usize,
    pub held_out_sides: usize,
    pub held_out_rows: usize,
    pub yes_rate: f64,
    pub accuracy: Option<f64>,
    pub auc: Option<f64>,
    pub kappa: Option<f64>,
    /// Accuracy of answering each tag's majority answer in training.
    pub tag_base_rate_accuracy: Option<f64>,
    pub by_tag: Vec<TagRow>,
    pub side_pearson: Option<f64>,
    pub side_mae: Option<f64>,
    pub pairs: usize,
    pub pair_pick_rate: Option<f64>,
    pub duel_runs: usize,
    pub margin_sign_agreement: Option<f64>,
    pub models: usize,
    pub model_spearman: Option<f64>,
    pub catastrophic_threshold: f64,
    pub catastrophic_precision: Option<f64>,
    pub catastrophic_recall: Option<f64>,
    /// Standard deviation of (predicted - judge) challenger-minus-king margin per paired sample.
    pub paired_error_sd: Option<f64>,
    pub intervals: Vec<Interval>,
    pub end_to_end: Option<EndToEnd>,
    pub loops: LoopCheck,
}

/// One side's held-out answers.
#[derive(Debug, Default, Clone)]
struct Side {
    eval_run_id: String,
    sample_id: String,
    side: String,
    model: String,
    predicted: Vec<bool>,
    judge: Vec<bool>,
}

impl Side {
    fn predicted_score(&self) -> f64 {
        metrics::mean(
            &self
                .predicted
                .iter()
                .map(|&b| b as u8 as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0)
    }
    fn judge_score(&self) -> f64 {
        metrics::mean(
            &self
                .judge
                .iter()
                .map(|&b| b as u8 as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0)
    }
}

#[derive(Default)]
struct TagAnswers {
    predicted: Vec<bool>,
    judge: Vec<bool>,
    scores: Vec<f64>,
}

/// The two sides of one held-out sample.
#[derive(Default)]
struct Pair<'a> {
    king: Option<&'a Side>,
    challenger: Option<&'a Side>,
}

/// Side scores of one held-out eval run's paired samples.
#[derive(Default)]
struct Duel {
    judge_king: Vec<f64>,
    judge_challenger: Vec<f64>,
    predicted_king: Vec<f64>,
    predicted_challenger: Vec<f64>,
}

/// Sign agreement of two differences; a predicted tie counts half.
fn sign_agreement(predicted: f64, judge: f64) -> f64 {
    if predicted == 0.0 {
        0.5
    } else {
        ((predicted > 0.0) == (judge > 0.0)) as u8 as f64
    }
}

/// The checklist table: rows usable for fitting and evaluation are labelled
/// and not looped by the judge.
pub fn checklist_table(batches: &[RecordBatch]) -> Table<'_> {
    let labels = columns::i64s(batches, "label");
    let looped = columns::bools(batches, "judge_looped");
    Table {
        name: super::store::CHECKLIST,
        batches,
        usable: labels
            .iter()
            .zip(&looped)
            .map(|(l, j)| l.is_some() && !j.unwrap_or(false))
            .collect(),
        not_features: super::features::NOT_FEATURES,
        categorical: super::features::CATEGORICAL,
        threshold: training::Threshold::Half,
    }
}

/// Evaluate `model` on the eval runs its split held out. `margins` maps an
/// eval run to its `required_win_margin`.
pub fn evaluate(
    meta: &ModelMeta,
    model: &Model,
    batches: &[RecordBatch],
    margins: &BTreeMap<String, f64>,
) -> ScorerResult<ChecklistReport> {
    let table = checklist_table(batches);
    let test = training::rows_in(&table, &meta.split, Part::Test);
    let p = training::predict(meta, model, batches, &test)?;
    Ok(from_predictions(meta, batches, &p, margins))
}

/// Each tag's majority answer in training: the baseline a model must beat.
fn tag_baseline(
    train: &[usize],
    test: &[usize],
    tags: &[Option<String>],
    label: impl Fn(usize) -> bool,
) -> Vec<bool> {
    let mut tag_counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for &i in train {
        let e = tag_counts
            .entry(tags[i].clone().unwrap_or_default())
            .or_default();
        e.0 += label(i) as usize;
        e.1 += 1;
    }
    test.iter()
        .map(|&i| {
            tag_counts
                .get(tags[i].as_deref().unwrap_or(""))
                .is_some_and(|(yes, n)| 2 * yes >= *n)
        })
        .collect()
}

/// Accuracy and AUC per checklist tag over the held-out rows.
fn by_tag(
    test: &[usize],
    tags: &[Option<String>],
    predicted: &[bool],
    judge: &[bool],
    scores: &[f64],
) -> Vec<TagRow> {
    let mut by_tag: BTreeMap<String, TagAnswers> = BTreeMap::new();
    for (k, &i) in test.iter().enumerate() {
        let e = by_tag
            .entry(tags[i].clone().unwrap_or_default())
            .or_default();
        e.predicted.push(predicted[k]);
        e.judge.push(judge[k]);
        e.scores.push(scores[k]);
    }
    by_tag
        .into_iter()
        .map(|(tag, a)| TagRow {
            tag,
            rows: a.judge.len(),
            yes_rate: a.judge.iter().filter(|j| **j).count() as f64 / a.judge.len().max(1) as f64,
            accuracy: metrics::accuracy(&a.predicted, &a.judge),
            auc: metrics::auc(&a.scores, &a.judge),
        })
        .collect()
}

/// The held-out sides, keyed by traj_id, with their answers in row order.
fn held_out_sides(
    batches: &[RecordBatch],
    test: &[usize],
    predicted: &[bool],
    judge: &[bool],
) -> BTreeMap<String, Side> {
    let traj = columns::strings(batches, "traj_id");
    let runs = columns::strings(batches, "eval_run_id");
    let samples = columns::strings(batches, "sample_id");
    let side_names = columns::strings(batches, "side");
    let models = columns::strings(batches, "model");
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let mut sides: BTreeMap<String, Side> = BTreeMap::new();
    for (k, &i) in test.iter().enumerate() {
        let s = sides.entry(text(&traj[i])).or_insert_with(|| Side {
            eval_run_id: text(&runs[i]),
            sample_id: text(&samples[i]),
            side: text(&side_names[i]),
            model: text(&models[i]),
            ..Side::default()
        });
        s.predicted.push(predicted[k]);
        s.judge.push(judge[k]);
    }
    sides
}

/// Precision and recall of the catastrophic flag (a side scoring below
/// [`CATASTROPHIC`]), where either flags any side.
fn catastrophic(pred_scores: &[f64], judge_scores: &[f64]) -> (Option<f64>, Option<f64>) {
    let flagged_judge: Vec<bool> = judge_scores.iter().map(|s| *s < CATASTROPHIC).collect();
    let flagged_pred: Vec<bool> = pred_scores.iter().map(|s| *s < CATASTROPHIC).collect();
    let both = flagged_judge
        .iter()
        .zip(&flagged_pred)
        .filter(|(j, p)| **j && **p)
        .count() as f64;
    let n_pred = flagged_pred.iter().filter(|p| **p).count();
    let n_judge = flagged_judge.iter().filter(|j| **j).count();
    (
        (n_pred > 0).then(|| both / n_pred as f64),
        (n_judge > 0).then(|| both / n_judge as f64),
    )
}

/// The samples whose two sides were both held out, keyed by (run, sample).
fn pairs(sides: &BTreeMap<String, Side>) -> BTreeMap<(String, String), Pair<'_>> {
    let mut by_sample: BTreeMap<(String, String), Pair> = BTreeMap::new();
    for s in sides.values() {
        let e = by_sample
            .entry((s.eval_run_id.clone(), s.sample_id.clone()))
            .or_default();
        if s.side == "challenger" {
            e.challenger = Some(s);
        } else {
            e.king = Some(s);
        }
    }
    by_sample
}

/// What the paired samples say: for each pair the judge does not tie, whether
/// the model picks the judge's winner; each pair's error in the score
/// difference; and each eval run's side scores.
fn paired(
    by_sample: &BTreeMap<(String, String), Pair<'_>>,
) -> (Vec<f64>, Vec<f64>, BTreeMap<String, Duel>) {
    let mut picks = Vec::new();
    let mut errors = Vec::new();
    let mut duels: BTreeMap<String, Duel> = BTreeMap::new();
    for ((run, _), pair) in by_sample {
        let (Some(king), Some(chal)) = (pair.king, pair.challenger) else {
            continue;
        };
        let judge_diff = chal.judge_score() - king.judge_score();
        let pred_diff = chal.predicted_score() - king.predicted_score();
        if judge_diff != 0.0 {
            picks.push(sign_agreement(pred_diff, judge_diff));
        }
        errors.push(pred_diff - judge_diff);
        let d = duels.entry(run.clone()).or_default();
        d.judge_king.push(king.judge_score());
        d.judge_challenger.push(chal.judge_score());
        d.predicted_king.push(king.predicted_score());
        d.predicted_challenger.push(chal.predicted_score());
    }
    (picks, errors, duels)
}

fn mean(v: &[f64]) -> f64 {
    metrics::mean(v).unwrap_or(0.0)
}

/// For each duel the judge does not tie, whether the model's margin has the judge's sign.
fn margins_agree(duels: &BTreeMap<String, Duel>) -> Vec<f64> {
    duels
        .values()
        .filter(|d| mean(&d.judge_challenger) != mean(&d.judge_king))
        .map(|d| {
            sign_agreement(
                mean(&d.predicted_challenger) - mean(&d.predicted_king),
                mean(&d.judge_challenger) - mean(&d.judge_king),
            )
        })
        .collect()
}

/// The duel with the most paired samples (ties: the first run id), decided
/// by the judge's and by the model's scores against its required margin.
fn end_to_end(duels: &BTreeMap<String, Duel>, margins: &BTreeMap<String, f64>) -> Option<EndToEnd> {
    duels
        .iter()
        .max_by(|a, b| {
            a.1.judge_king
                .len()
                .cmp(&b.1.judge_king.len())
                .then(b.0.cmp(a.0))
        })
        .map(|(run, d)| {
            let margin = margins.get(run).copied();
            let wins = |k: f64, c: f64| c > k + margin.unwrap_or(0.0);
            let (jk, jc) = (mean(&d.judge_king), mean(&d.judge_challenger));
            let (pk, pc) = (mean(&d.predicted_king), mean(&d.predicted_challenger));
            EndToEnd {
                eval_run_id: run.clone(),
                paired_samples: d.judge_king.len(),
                judge_king: jk,
                judge_challenger: jc,
                predicted_king: pk,
                predicted_challenger: pc,
                required_win_margin: margin,
                judge_challenger_wins: wins(jk, jc),
                predicted_challenger_wins: wins(pk, pc),
            }
        })
}

/// Per model: the mean judge score and the mean predicted score of its sides.
fn per_model(sides: &BTreeMap<String, Side>) -> (Vec<f64>, Vec<f64>) {
    let mut per_model: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for s in sides.values() {
        let e = per_model.entry(&s.model).or_default();
        e.0.push(s.judge_score());
        e.1.push(s.predicted_score());
    }
    per_model.values().map(|(j, p)| (mean(j), mean(p))).unzip()
}

/// The report from the predicted P(yes) of the held-out rows (in row order).
pub fn from_predictions(
    meta: &ModelMeta,
    batches: &[RecordBatch],
    p: &[f32],
    margins: &BTreeMap<String, f64>,
) -> ChecklistReport {
    let table = checklist_table(batches);
    let test = training::rows_in(&table, &meta.split, Part::Test);
    let train = training::rows_in(&table, &meta.split, Part::Train);
    let labels_all = columns::i64s(batches, "label");
    let tags = columns::strings(batches, "tag");
    let label = |i: usize| labels_all[i] == Some(1);
    let predicted: Vec<bool> = p.iter().map(|&p| p as f64 >= meta.threshold).collect();
    let judge: Vec<bool> = test.iter().map(|&i| label(i)).collect();
    let scores: Vec<f64> = p.iter().map(|&p| p as f64).collect();
    let base = tag_baseline(&train, &test, &tags, label);

    let sides = held_out_sides(batches, &test, &predicted, &judge);
    let pred_scores: Vec<f64> = sides.values().map(Side::predicted_score).collect();
    let judge_scores: Vec<f64> = sides.values().map(Side::judge_score).collect();
    let (catastrophic_precision, catastrophic_recall) = catastrophic(&pred_scores, &judge_scores);
    let by_sample = pairs(&sides);
    let (picks, errors, duels) = paired(&by_sample);
    let margins_agree = margins_agree(&duels);
    let (model_judge, model_pred) = per_model(&sides);
    let paired_error_sd = metrics::std_dev(&errors);

    ChecklistReport {
        model_id: meta.model_id.clone(),
        lake_commit: meta.lake_commit,
        held_out_runs: meta.split.test.len(),
        held_out_samples: by_sample.len(),
        held_out_sides: sides.len(),
        held_out_rows: test.len(),
        yes_rate: judge.iter().filter(|j| **j).count() as f64 / judge.len().max(1) as f64,
        accuracy: metrics::accuracy(&predicted, &judge),
        auc: metrics::auc(&scores, &judge),
        kappa: metrics::kappa(&predicted, &judge),
        tag_base_rate_accuracy: metrics::accuracy(&base, &judge),
        by_tag: by_tag(&test, &tags, &predicted, &judge, &scores),
        side_pearson: metrics::pearson(&pred_scores, &judge_scores),
        side_mae: metrics::mae(&pred_scores, &judge_scores),
        pairs: picks.len(),
        pair_pick_rate: metrics::mean(&picks),
        duel_runs: margins_agree.len(),
        margin_sign_agreement: metrics::mean(&margins_agree),
        models: model_judge.len(),
        model_spearman: (model_judge.len() >= 3)
            .then(|| metrics::spearman(&model_pred, &model_judge))
            .flatten(),
        catastrophic_threshold: CATASTROPHIC,
        catastrophic_precision,
        catastrophic_recall,
        paired_error_sd,
        intervals: paired_error_sd
            .map(|sd| {
                PAIRED_SAMPLES
                    .iter()
                    .map(|&n| Interval {
                        paired_samples: n,
                        half_width: interval95(sd, n),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        end_to_end: end_to_end(&duels, margins),
        loops: loop_check(batches),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::matrix::FeatureSpec;
    use crate::scorer::model::FitParams;
    use crate::scorer::split::Split;
    use arrow::array::{BooleanArray, Int32Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    /// traj_id, run, sample, side, model, question, tag, label.
    type Row = (
        String,
        String,
        String,
        String,
        String,
        String,
        &'static str,
        i32,
    );

    /// (run, sample, side, model, tag, label, P(yes)) of a small corpus:
    /// run A trains, B validates, C and D are held out.
    fn fixture() -> (Vec<RecordBatch>, Vec<f32>, ModelMeta) {
        let mut rows: Vec<Row> = Vec::new();
        let sides = [
            ("A", "s0", "previous_king", "king"),
            ("A", "s0", "challenger", "m0"),
            ("B", "s9", "previous_king", "king"),
            ("C", "s1", "previous_king", "king"),
            ("C", "s1", "challenger", "m1"),
            ("C", "s2", "previous_king", "king"),
            ("C", "s2", "challenger", "m1"),
            ("D", "s3", "previous_king", "king"),
            ("D", "s3", "challenger", "m2"),
        ];
        // Labels and predictions of each side's 4 questions (explore, explore, economy, economy).
        let answers: [([i32; 4], [f32; 4]); 9] = [
            ([1, 0, 1, 1], [0.9, 0.2, 0.8, 0.7]),
            ([0, 0, 1, 0], [0.1, 0.3, 0.6, 0.2]),
            ([1, 1, 0, 0], [0.5, 0.5, 0.5, 0.5]),
            ([1, 1, 0, 1], [0.8, 0.4, 0.3, 0.9]),
            ([0, 1, 0, 0], [0.6, 0.7, 0.1, 0.2]),
            ([1, 1, 1, 1], [0.9, 0.8, 0.7, 0.45]),
            ([0, 0, 0, 1], [0.2, 0.1, 0.35, 0.55]),
            ([1, 0, 1, 0], [0.7, 0.65, 0.6, 0.3]),
            ([0, 0, 0, 0], [0.4, 0.2, 0.15, 0.05]),
        ];
        let tags = ["explore", "explore", "economy", "economy"];
        let mut held_out_p = Vec::new();
        for (i, (run, sample, side, model)) in sides.iter().enumerate() {
            for (q, tag) in tags.iter().enumerate() {
                rows.push((
                    format!("t{i}"),
                    run.to_string(),
                    sample.to_string(),
                    side.to_string(),
                    model.to_string(),
                    format!("q_{q}"),
                    *tag,
                    answers[i].0[q],
                ));
                if matches!(*run, "C" | "D") {
                    held_out_p.push(answers[i].1[q]);
                }
            }
        }
        let col = |f: &dyn Fn(&Row) -> String| {
            Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>()))
                as arrow::array::ArrayRef
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("traj_id", DataType::Utf8, false),
            Field::new("eval_run_id", DataType::Utf8, false),
            Field::new("sample_id", DataType::Utf8, false),
            Field::new("side", DataType::Utf8, false),
            Field::new("model", DataType::Utf8, false),
            Field::new("question_id", DataType::Utf8, false),
            Field::new("tag", DataType::Utf8, false),
            Field::new("label", DataType::Int32, true),
            Field::new("judge_looped", DataType::Boolean, false),
            Field::new("loop_verdict", DataType::Boolean, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                col(&|r| r.0.clone()),
                col(&|r| r.1.clone()),
                col(&|r| r.2.clone()),
                col(&|r| r.3.clone()),
                col(&|r| r.4.clone()),
                col(&|r| r.5.clone()),
                col(&|r| r.6.to_string()),
                Arc::new(Int32Array::from(
                    rows.iter().map(|r| r.7).collect::<Vec<_>>(),
                )),
                Arc::new(BooleanArray::from(vec![false; rows.len()])),
                Arc::new(BooleanArray::from(vec![false; rows.len()])),
            ],
        )
        .unwrap();
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        let meta = ModelMeta {
            name: "checklist".into(),
            model_id: "fixture".into(),
            features: FeatureSpec {
                numeric: vec![],
                categorical: vec![],
            },
            feature_names: vec![],
            params: FitParams::default(),
            rounds: 1,
            best_validation_log_loss: 0.0,
            split: Split {
                seed: 0,
                train: set(&["A"]),
                validation: set(&["B"]),
                test: set(&["C", "D"]),
            },
            threshold: 0.5,
            lake_commit: None,
            tables: Default::default(),
            train_rows: 8,
            validation_rows: 4,
            turnlake: "test".into(),
        };
        (vec![batch], held_out_p, meta)
    }

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("defined");
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    /// Every figure recomputed here by brute force, independently of `metrics`.
    #[test]
    fn report_figures_match_a_recount() {
        let (batches, p, meta) = fixture();
        let r = from_predictions(
            &meta,
            &batches,
            &p,
            &BTreeMap::from([("C".to_string(), 0.03)]),
        );
        let labels: Vec<bool> = columns::i64s(&batches, "label")[12..]
            .iter()
            .map(|l| *l == Some(1))
            .collect();
        assert_eq!(labels.len(), 24);
        assert_eq!(r.held_out_rows, 24);
        let pred: Vec<bool> = p.iter().map(|p| *p >= 0.5).collect();

        // Accuracy and kappa from the confusion table.
        let (mut tp, mut tn, mut fp, mut fne) = (0.0, 0.0, 0.0, 0.0);
        for (p, l) in pred.iter().zip(&labels) {
            match (p, l) {
                (true, true) => tp += 1.0,
                (false, false) => tn += 1.0,
                (true, false) => fp += 1.0,
                (false, true) => fne += 1.0,
            }
        }
        let n: f64 = 24.0;
        close(r.accuracy, (tp + tn) / n);
        let pe = ((tp + fp) / n) * ((tp + fne) / n) + ((tn + fne) / n) * ((tn + fp) / n);
        close(r.kappa, ((tp + tn) / n - pe) / (1.0 - pe));

        // AUC over every (positive, negative) pair.
        let (mut ordered, mut pairs) = (0.0, 0.0);
        for i in 0..24 {
            for j in 0..24 {
                if labels[i] && !labels[j] {
                    pairs += 1.0;
                    ordered += if p[i] > p[j] {
                        1.0
                    } else if p[i] == p[j] {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
        }
        close(r.auc, ordered / pairs);

        // Side scores: 6 held-out sides of 4 answers each.
        let side = |k: usize| {
            let pred = (0..4).filter(|q| pred[4 * k + q]).count() as f64 / 4.0;
            let judge = (0..4).filter(|q| labels[4 * k + q]).count() as f64 / 4.0;
            (pred, judge)
        };
        let sides: Vec<(f64, f64)> = (0..6).map(side).collect();
        let (mx, my) = (
            sides.iter().map(|s| s.0).sum::<f64>() / 6.0,
            sides.iter().map(|s| s.1).sum::<f64>() / 6.0,
        );
        let cov: f64 = sides.iter().map(|s| (s.0 - mx) * (s.1 - my)).sum();
        let vx: f64 = sides.iter().map(|s| (s.0 - mx).powi(2)).sum();
        let vy: f64 = sides.iter().map(|s| (s.1 - my).powi(2)).sum();
        close(r.side_pearson, cov / (vx * vy).sqrt());
        close(
            r.side_mae,
            sides.iter().map(|s| (s.0 - s.1).abs()).sum::<f64>() / 6.0,
        );

        // Models: king (sides 0, 2, 4), m1 (1, 3), m2 (5); Spearman of their means.
        let mean = |ks: &[usize], f: fn(&(f64, f64)) -> f64| {
            ks.iter().map(|&k| f(&sides[k])).sum::<f64>() / ks.len() as f64
        };
        let groups: [&[usize]; 3] = [&[0, 2, 4], &[1, 3], &[5]];
        let judge_means: Vec<f64> = groups.iter().map(|g| mean(g, |s| s.1)).collect();
        let pred_means: Vec<f64> = groups.iter().map(|g| mean(g, |s| s.0)).collect();
        let rank = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .map(|x| {
                    v.iter().filter(|y| *y < x).count() as f64
                        + 1.0
                        + 0.5 * (v.iter().filter(|y| *y == x).count() as f64 - 1.0)
                })
                .collect()
        };
        let (rj, rp) = (rank(&judge_means), rank(&pred_means));
        let d2: f64 = rj.iter().zip(&rp).map(|(a, b)| (a - b).powi(2)).sum();
        // The fixture's model means have no ties, so the rank-difference formula holds.
        assert!(
            rj.iter().chain(&rp).all(|r| r.fract() == 0.0),
            "{rj:?} {rp:?}"
        );
        close(r.model_spearman, 1.0 - 6.0 * d2 / (3.0 * (9.0 - 1.0)));
        assert_eq!(r.models, 3);

        // Pairs: s1, s2, s3 (king side index, challenger side index).
        let mut picks = Vec::new();
        for (k, c) in [(0, 1), (2, 3), (4, 5)] {
            let jd = sides[c].1 - sides[k].1;
            let pd = sides[c].0 - sides[k].0;
            if jd != 0.0 {
                picks.push(if pd == 0.0 {
                    0.5
                } else if (pd > 0.0) == (jd > 0.0) {
                    1.0
                } else {
                    0.0
                });
            }
        }
        assert_eq!(r.pairs, picks.len());
        close(
            r.pair_pick_rate,
            picks.iter().sum::<f64>() / picks.len() as f64,
        );

        // Catastrophic: judge and predicted side scores below 0.35.
        let tp = sides.iter().filter(|s| s.0 < 0.35 && s.1 < 0.35).count() as f64;
        let flagged = sides.iter().filter(|s| s.0 < 0.35).count() as f64;
        let truly = sides.iter().filter(|s| s.1 < 0.35).count() as f64;
        close(r.catastrophic_precision, tp / flagged);
        close(r.catastrophic_recall, tp / truly);

        // The end-to-end run is C (two paired samples) with its margin.
        let e = r.end_to_end.expect("a held-out duel");
        assert_eq!((e.eval_run_id.as_str(), e.paired_samples), ("C", 2));
        assert_eq!(e.required_win_margin, Some(0.03));
        close(Some(e.judge_king), (sides[0].1 + sides[2].1) / 2.0);
        // Training (run A): explore is yes 1 of 4 times, economy 3 of 4: the
        // baseline answers explore no and economy yes.
        let base = (0..24).filter(|&i| labels[i] == (i % 4 >= 2)).count() as f64 / 24.0;
        close(r.tag_base_rate_accuracy, base);
    }
}
