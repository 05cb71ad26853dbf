//! `turnlake scorer`: build the features table, fit the checklist scorer and
//! the turn-credit model, evaluate them held out, label unjudged turns, and
//! score a user's own runs.

use clap::{Args, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::scorer::model::FitParams;
use crate::scorer::report::ChecklistReport;
use crate::scorer::score::ScoreSummary;
use crate::scorer::training::Shares;
use crate::scorer::turns::TurnReport;
use crate::scorer::{features, jobs, score, turns};

#[derive(Debug, Subcommand)]
pub enum ScorerCommand {
    /// Build the scorer_features table: one row per (judged side, checklist question).
    Features,
    /// Fit the checklist scorer and the turn-credit model (split by eval run) and save them under the lake.
    Fit(FitArgs),
    /// Evaluate both models on the eval runs they were not fit on; print and save the calibration reports.
    Eval(EvalArgs),
    /// Label the turns of runs no judge saw (mini-coder, mswea) with the turn-credit model: turn_labels.
    Label,
    /// Score your own mini-swe-agent runs on known Albedo samples with the checklist scorer.
    Score(ScoreArgs),
    /// Before you submit: a batch of your runs on known samples (`export samples`) against the judged king: margin, samples needed, loops, catastrophes.
    Report(ScoreArgs),
}

impl ScorerCommand {
    fn name(&self) -> &'static str {
        match self {
            ScorerCommand::Features => "features",
            ScorerCommand::Fit(_) => "fit",
            ScorerCommand::Eval(_) => "eval",
            ScorerCommand::Label => "label",
            ScorerCommand::Score(_) => "score",
            ScorerCommand::Report(_) => "report",
        }
    }
}

#[derive(Debug, Args)]
pub struct FitArgs {
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Share of eval runs held out for evaluation.
    #[arg(long, default_value_t = 0.25)]
    pub test_share: f64,
    /// Share of eval runs held out for early stopping.
    #[arg(long, default_value_t = 0.15)]
    pub validation_share: f64,
    #[arg(long, default_value_t = 400)]
    pub max_rounds: u32,
    #[arg(long, default_value_t = 6)]
    pub max_depth: u32,
    #[arg(long, default_value_t = 0.1)]
    pub eta: f64,
    /// XGBoost threads (the same count gives the same model bytes).
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Print the reports as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// mini-swe-agent *.traj.json files or folders of them (local or s3://).
    #[arg(required = true)]
    pub trajectories: Vec<String>,
    /// The Albedo sample the runs are on (default: each run's own id, else its task text).
    #[arg(long)]
    pub sample: Option<String>,
    /// Also print every predicted answer.
    #[arg(long)]
    pub answers: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the runs' feature rows here (CSV).
    #[arg(long)]
    pub features_out: Option<std::path::PathBuf>,
}

pub async fn run(lake: &LakeArg, what: ScorerCommand) -> anyhow::Result<ExitCode> {
    if !matches!(what, ScorerCommand::Features) {
        crate::sinks::Sink::Scorer.require(&format!("turnlake scorer {}", what.name()))?;
    }
    let lake = lake.open().await?;
    match what {
        ScorerCommand::Features => {
            let s = features::build(&lake).await?;
            println!(
                "scorer_features: {} rows ({} labelled) over {} sides",
                s.rows, s.labelled, s.sides
            );
        }
        ScorerCommand::Fit(args) => {
            let params = FitParams {
                seed: args.seed,
                eta: args.eta,
                max_depth: args.max_depth,
                max_rounds: args.max_rounds,
                threads: args.threads,
                ..FitParams::default()
            };
            let shares = Shares {
                test: args.test_share,
                validation: args.validation_share,
            };
            anyhow::ensure!(
                shares.test > 0.0
                    && shares.validation > 0.0
                    && shares.test + shares.validation < 1.0,
                "--test-share and --validation-share must be positive and leave runs to train on"
            );
            let fitted = jobs::fit(&lake, &params, shares).await?;
            for (meta, at) in [&fitted.checklist, &fitted.turn_credit] {
                println!(
                    "{}: model {} with {} rounds (validation log loss {:.4}) on {} rows of {} train runs; \
                     {} validation and {} test runs held out; saved to {at}",
                    meta.name,
                    meta.model_id,
                    meta.rounds,
                    meta.best_validation_log_loss,
                    meta.train_rows,
                    meta.split.train.len(),
                    meta.split.validation.len(),
                    meta.split.test.len(),
                );
            }
        }
        ScorerCommand::Eval(args) => {
            let (checklist, turn) = jobs::evaluate(&lake).await?;
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"checklist": checklist, "turn_credit": turn})
                    )?
                );
            } else {
                print_checklist(&checklist);
                print_turns(&turn);
            }
        }
        ScorerCommand::Label => {
            let s = turns::label(&lake).await?;
            println!(
                "turn_labels: {} turns labelled by model {}, {} predicted to earn credit",
                s.turns, s.model_id, s.earning
            );
        }
        ScorerCommand::Score(args) => {
            let summary = score::score(&lake, &args.trajectories, args.sample.as_deref()).await?;
            if let Some(path) = &args.features_out {
                let file = std::fs::File::create(path)
                    .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
                crate::output::write_batches(file, &summary.features, crate::output::Format::Csv)?;
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                print_score(&summary, args.answers);
            }
        }
        ScorerCommand::Report(args) => {
            let summary = score::score(&lake, &args.trajectories, args.sample.as_deref()).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                print_report(&summary);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The reference's held-out precision of the catastrophic flag.
const REFERENCE_CATASTROPHIC_PRECISION: &str = "0.820";

/// What a miner reads before submitting: the batch against the judged king
/// on the same samples, whether the margin is resolved, the runs that loop
/// (what gets a hotkey banned) and the samples the model falls apart on.
fn print_report(s: &ScoreSummary) {
    let kings: Vec<f64> = s.runs.iter().filter_map(|r| r.king_score).collect();
    let resolved = match (s.margin_vs_king, s.interval) {
        (Some(m), Some(i)) if m - i > s.required_win_margin => {
            "yes: clears the duel margin".to_string()
        }
        (Some(m), Some(i)) if m + i < s.required_win_margin => {
            "no: falls short of the duel margin".to_string()
        }
        (Some(_), Some(_)) => format!(
            "not resolved: about {} paired samples resolve it",
            s.samples_needed.map_or("?".into(), |n| n.to_string())
        ),
        _ => "no interval (run turnlake scorer eval)".to_string(),
    };
    let mut t = table(&["measure", "value"]);
    for (m, v) in [
        ("runs scored".to_string(), s.runs.len().to_string()),
        (
            "distinct samples".to_string(),
            s.runs
                .iter()
                .map(|r| r.sample_id.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                .to_string(),
        ),
        ("predicted score (mean)".to_string(), fmt(s.overall_score)),
        (
            "the king's judged score on them (mean)".to_string(),
            fmt(crate::scorer::metrics::mean(&kings)),
        ),
        (
            "margin vs the king".to_string(),
            format!(
                "{}{}",
                fmt(s.margin_vs_king),
                s.interval
                    .map_or(String::new(), |i| format!(" +/- {i:.3} (95%)"))
            ),
        ),
        (
            "duel margin to clear".to_string(),
            format!("{}", s.required_win_margin),
        ),
        (
            "paired samples to resolve it (80% power)".to_string(),
            s.samples_needed.map_or("n/a".into(), |n| n.to_string()),
        ),
        ("would it win?".to_string(), resolved),
    ] {
        t.add_row(vec![m, v]);
    }
    println!("{t}");
    let looped: Vec<&crate::scorer::score::ScoredRun> =
        s.runs.iter().filter(|r| r.loop_verdict).collect();
    println!(
        "loops (the validator's verdict; a looping model gets its hotkey banned): {} of {} runs",
        looped.len(),
        s.runs.len()
    );
    for r in looped {
        println!("  {} on {}", r.file, r.sample_id);
    }
    let mut fallen: Vec<&crate::scorer::score::ScoredRun> =
        s.runs.iter().filter(|r| r.catastrophic).collect();
    fallen.sort_by(|a, b| a.predicted_score.total_cmp(&b.predicted_score));
    println!(
        "falls apart (predicted < {}) on {} of {} runs; the flag's held-out precision {} (reference {REFERENCE_CATASTROPHIC_PRECISION})",
        crate::scorer::report::CATASTROPHIC,
        fallen.len(),
        s.runs.len(),
        fmt(s.catastrophic_precision)
    );
    if !fallen.is_empty() {
        let mut t = table(&["sample", "run", "predicted", "king judged"]);
        for r in fallen {
            t.add_row(vec![
                r.sample_id.clone(),
                r.file.clone(),
                format!("{:.3}", r.predicted_score),
                fmt(r.king_score),
            ]);
        }
        println!("{t}");
    }
    for n in &s.notes {
        println!("note: {n}");
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    t
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{:.1}%", 100.0 * v))
}

/// The reference's per-sample error of the duel margin, and the margin it
/// resolves with "500+ paired samples" (mission.md).
const REFERENCE_PAIRED_SD: f64 = 0.207;
const REFERENCE_MARGIN: f64 = 0.025;

/// The calibration report as a person reads it, beside the reference figures.
pub fn print_checklist(r: &ChecklistReport) {
    println!(
        "checklist scorer {} (lake commit {}), held out: {} eval runs, {} samples, {} sides, {} answers (yes {:.1}%)",
        r.model_id,
        r.lake_commit.map_or("-".into(), |v| v.to_string()),
        r.held_out_runs,
        r.held_out_samples,
        r.held_out_sides,
        r.held_out_rows,
        100.0 * r.yes_rate
    );
    let mut t = table(&["measure", "held out", "reference"]);
    let rows: Vec<(&str, String, &str)> = vec![
        ("accuracy (pooled answers)", fmt(r.accuracy), "0.771"),
        (
            "  tag base-rate baseline",
            fmt(r.tag_base_rate_accuracy),
            "",
        ),
        ("AUC", fmt(r.auc), "0.849"),
        ("Cohen's kappa vs judge", fmt(r.kappa), ""),
        ("side score Pearson", fmt(r.side_pearson), "0.727"),
        ("side score MAE", fmt(r.side_mae), "0.140"),
        (
            "picks the better side",
            format!("{} of {}", pct(r.pair_pick_rate), r.pairs),
            "70.0%",
        ),
        (
            "duel margin sign",
            format!("{} of {} runs", pct(r.margin_sign_agreement), r.duel_runs),
            "73.3%",
        ),
        (
            "per-model Spearman",
            format!("{} ({} models)", fmt(r.model_spearman), r.models),
            "0.561 (57 models)",
        ),
        (
            "catastrophic (<0.35) precision",
            fmt(r.catastrophic_precision),
            "0.820",
        ),
        (
            "catastrophic (<0.35) recall",
            fmt(r.catastrophic_recall),
            "0.384",
        ),
        (
            "per-sample margin error (sd)",
            fmt(r.paired_error_sd),
            "0.207",
        ),
    ];
    for (m, v, reference) in rows {
        t.add_row(vec![m.to_string(), v, reference.to_string()]);
    }
    for i in &r.intervals {
        let reference = if i.paired_samples == 100 {
            "+/- 0.041"
        } else {
            ""
        };
        t.add_row(vec![
            format!("95% interval, {} paired samples", i.paired_samples),
            format!("+/- {:.3}", i.half_width),
            reference.into(),
        ]);
    }
    t.add_row(vec![
        format!("paired samples to resolve {REFERENCE_MARGIN} (80% power)"),
        r.paired_error_sd.map_or("-".into(), |sd| {
            crate::scorer::metrics::samples_to_resolve(sd, REFERENCE_MARGIN).to_string()
        }),
        format!(
            "{} (\"500+\")",
            crate::scorer::metrics::samples_to_resolve(REFERENCE_PAIRED_SD, REFERENCE_MARGIN)
        ),
    ]);
    println!("{t}");
    let mut t = table(&["tag", "answers", "yes rate", "accuracy", "AUC"]);
    for row in &r.by_tag {
        t.add_row(vec![
            row.tag.clone(),
            row.rows.to_string(),
            format!("{:.3}", row.yes_rate),
            fmt(row.accuracy),
            fmt(row.auc),
        ]);
    }
    println!("{t}");
    if let Some(e) = &r.end_to_end {
        println!(
            "end to end, eval run {} ({} paired samples): judge king {:.3} vs challenger {:.3}; scorer {:.3} vs {:.3}; \
             margin {}: challenger wins by the judge: {}, by the scorer: {}",
            e.eval_run_id,
            e.paired_samples,
            e.judge_king,
            e.judge_challenger,
            e.predicted_king,
            e.predicted_challenger,
            fmt(e.required_win_margin),
            e.judge_challenger_wins,
            e.predicted_challenger_wins
        );
    }
    let l = &r.loops;
    println!(
        "loop verdict vs the judge over {} judged sides: judge looped {}, verdict looped {}, {} disagreement(s)",
        l.judged_sides,
        l.judge_looped,
        l.verdict_looped,
        l.disagreements.len()
    );
    for d in &l.disagreements {
        println!(
            "  {} {} ({}): judge {}, verdict {}",
            d.sample_id, d.side, d.traj_id, d.judge_looped, d.loop_verdict
        );
    }
}

pub fn print_turns(r: &TurnReport) {
    println!(
        "turn-credit model {} held out: {} eval runs, {} turns ({:.1}% earn credit)",
        r.model_id,
        r.held_out_runs,
        r.held_out_turns,
        100.0 * r.earning_rate
    );
    let mut t = table(&["measure", "held out"]);
    for (m, v) in [
        ("kappa vs judge-earned credit", fmt(r.kappa)),
        ("accuracy", fmt(r.accuracy)),
        ("  majority-class baseline", fmt(r.majority_accuracy)),
        ("AUC", fmt(r.auc)),
    ] {
        t.add_row(vec![m.to_string(), v]);
    }
    println!("{t}");
}

fn print_score(s: &ScoreSummary, answers: bool) {
    let mut t = table(&[
        "run",
        "sample",
        "matched by",
        "cut",
        "scored outputs",
        "questions",
        "predicted score",
        "king (judge)",
        "looped",
        "catastrophic",
    ]);
    for r in &s.runs {
        t.add_row(vec![
            r.file.clone(),
            r.sample_id.clone(),
            r.matched_by.clone(),
            r.cut.to_string(),
            r.scored_outputs.to_string(),
            r.questions.to_string(),
            format!("{:.3}", r.predicted_score),
            fmt(r.king_score),
            r.loop_verdict.to_string(),
            r.catastrophic.to_string(),
        ]);
    }
    println!("{t}");
    if answers {
        for r in &s.runs {
            let mut t = table(&["question", "P(yes)", "answer"]);
            for (q, p, yes) in &r.answers {
                t.add_row(vec![
                    q.clone(),
                    format!("{p:.3}"),
                    if *yes { "yes" } else { "no" }.into(),
                ]);
            }
            println!("{}\n{t}", r.file);
        }
    }
    println!(
        "overall: predicted score {} over {} run(s); margin vs the judged king {}{} (duel margin {}{})",
        fmt(s.overall_score),
        s.runs.len(),
        fmt(s.margin_vs_king),
        s.interval.map_or(String::new(), |i| format!(" +/- {i:.3}")),
        s.required_win_margin,
        s.samples_needed.map_or(String::new(), |n| format!(
            "; {n} paired samples resolve it at 80% power"
        ))
    );
    for n in &s.notes {
        println!("note: {n}");
    }
}
