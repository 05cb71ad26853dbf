//! The synthetic judge's checklist and answers. Answers depend on what a
//! side did, with noise, so a judge-free scorer has something real to learn:
//!
//! - behaviour questions are about command kinds (their text names them the
//!   way real questions do: "line ranges", "search", "git command"). The
//!   side's credit plan decides which outputs yes-answers cite; each citing
//!   yes goes to a question about the cited output's kind when one is free.
//!   Other behaviour questions are answered yes, citing nothing, with a
//!   per-question probability that is high when the side ran a command of
//!   the question's kinds and low when it did not (times the side's
//!   diligence, which its reads, searches and failures set);
//! - economy questions compare a measure of the side's outputs with a limit,
//!   as Albedo's do, and the judge miscounts at `economy_flip`.
//!
//! Every answer records the probability it was drawn with, so the truth file
//! can say what a scorer that knew the generative model would reach.

use serde::Serialize;

use super::plan::{PlannedTurn, Shape};
use super::rng::Rng;
use super::text::{symbol, Repo};
use crate::turn::checklist::{Measure, OutputMeasures};
use crate::turn::CmdKind;

/// One checklist question as the scoring file writes it, with what the
/// synthetic judge answers it from.
pub struct Question {
    pub text: String,
    pub tag: &'static str,
    pub requires: &'static str,
    pub category: &'static str,
    pub about: Vec<CmdKind>,
    pub economy: Option<(Measure, f64)>,
    /// P(yes, uncited) when the side ran a command of `about`, and when not.
    p_match: f64,
    p_miss: f64,
}

/// A behaviour question about `kind`: text, tag, requires, category.
fn behaviour(
    rng: &mut Rng,
    repo: &Repo,
    kind: CmdKind,
) -> (String, &'static str, &'static str, &'static str) {
    let rel = repo.rel(rng);
    match kind {
        CmdKind::CatN => (format!("Does the candidate read {rel} with cat -n to see line numbers before acting?"), "verification", "read", "grounding"),
        CmdKind::SedN => (format!("Does the candidate read {rel} with explicit line ranges instead of a whole-file dump?"), "verification", "read", "other"),
        CmdKind::Cat => (format!("Does the candidate avoid whole-file dumps of {rel} when a targeted range would suffice?"), "continuity", "read", "other"),
        CmdKind::Edit => (format!("Does the candidate edit {rel} to fix the behaviour the issue describes?"), "action", "action", "work_correctness"),
        CmdKind::GrepR => (format!("Does a search use identifiers like {} taken from the issue text?", symbol(rng)), "explore", "action", "other"),
        CmdKind::Grep => (format!("Does the candidate grep {rel} for {} before reading it?", symbol(rng)), "explore", "read", "grounding"),
        CmdKind::Python => ("Does the candidate run the tests or a reproduction script to confirm the change?".to_string(), "verification", "action", "verification"),
        CmdKind::FindLs => (format!("Does the candidate list the {} directory layout before reading files?", repo.package), "explore", "neutral", "progress"),
        _ => ("Does the candidate check repository state with a git command before concluding?".to_string(), "claims", "neutral", "work_correctness"),
    }
}

/// How readily a side earns uncited yes-answers, in [lo, hi]: higher for a
/// side that reads and searches, lower for one whose commands fail or are
/// malformed, with some noise. It is what makes one side better than the
/// other, and a scorer sees it only through what the side did.
pub fn diligence(rng: &mut Rng, own: &[PlannedTurn], lo: f64, hi: f64) -> f64 {
    let n = own.len().max(1) as f64;
    let share = |f: &dyn Fn(&PlannedTurn) -> bool| own.iter().filter(|t| f(t)).count() as f64 / n;
    let careful = share(&|t| {
        t.shape == Shape::Normal
            && matches!(
                t.kind,
                CmdKind::CatN | CmdKind::SedN | CmdKind::GrepR | CmdKind::Grep
            )
    });
    let sloppy = share(&|t| t.failed || t.shape != Shape::Normal || t.think_unclosed);
    let q = (0.35 + 0.9 * careful - 0.9 * sloppy + 0.5 * (rng.f64() - 0.5)).clamp(0.0, 1.0);
    lo + (hi - lo) * q
}

/// The checklist of one sample: `n_behaviour` questions about kinds drawn
/// from the kind mix, then `n_economy` limits set around both sides' outputs.
pub fn checklist(
    rng: &mut Rng,
    repo: &Repo,
    kinds: &[CmdKind],
    mix: &[f64],
    n_behaviour: usize,
    n_economy: usize,
    sides: &[OutputMeasures; 2],
) -> Vec<Question> {
    let mut out = Vec::with_capacity(n_behaviour + n_economy);
    for _ in 0..n_behaviour {
        let kind = kinds[rng.weighted(mix)];
        let (text, tag, requires, category) = behaviour(rng, repo, kind);
        out.push(Question {
            text,
            tag,
            requires,
            category,
            about: vec![kind],
            economy: None,
            p_match: 0.55 + 0.4 * rng.f64(),
            p_miss: 0.25 * rng.f64(),
        });
    }
    for _ in 0..n_economy {
        let measure = *rng.pick(&Measure::ALL);
        let typical = (measure.of(&sides[0]) + measure.of(&sides[1])) / 2.0;
        let step = if matches!(
            measure,
            Measure::TotalChars | Measure::MaxChars | Measure::AvgChars
        ) {
            10.0
        } else {
            1.0
        };
        let limit = ((typical * (0.7 + 1.2 * rng.f64()) / step).round() * step).max(step);
        out.push(Question {
            text: measure.question(limit as u64),
            tag: "economy",
            requires: "neutral",
            category: "size",
            about: Vec::new(),
            economy: Some((measure, limit)),
            p_match: 0.0,
            p_miss: 0.0,
        });
    }
    out
}

/// How a side answered one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Yes, citing these outputs (1-based).
    Cited(Vec<u32>),
    Yes,
    No,
}

/// A side's answers to the checklist, with the probability each yes was
/// drawn with.
pub struct Answers {
    pub answers: Vec<Answer>,
    pub p_yes: Vec<f64>,
}

/// Answers of a side that did not loop. `groups` are the citing yes-answers
/// its credit plan asks for; `order` is the order free questions are taken in.
pub fn answer(
    rng: &mut Rng,
    questions: &[Question],
    own: &[PlannedTurn],
    measures: &OutputMeasures,
    groups: &[Vec<u32>],
    diligence: f64,
    economy_flip: f64,
) -> Answers {
    let n = questions.len();
    let mut answers = vec![Answer::No; n];
    let mut p_yes = vec![0.0; n];
    let mut free: Vec<usize> = (0..n).filter(|&q| questions[q].economy.is_none()).collect();
    rng.shuffle(&mut free);
    for g in groups {
        let lead = own[g[0] as usize - 1].label();
        let at = free
            .iter()
            .position(|&q| questions[q].about.contains(&lead))
            .unwrap_or(0);
        let q = free.remove(at);
        answers[q] = Answer::Cited(g.clone());
        p_yes[q] = 1.0;
    }
    let ran = |kinds: &[CmdKind]| {
        own.iter()
            .any(|t| t.shape == Shape::Normal && kinds.contains(&t.label()))
    };
    for &q in &free {
        let question = &questions[q];
        // A diligent side answers yes to nearly everything; a careless one
        // mostly where it ran a command the question is about.
        let g = diligence;
        let p = if ran(&question.about) {
            (question.p_match * (0.3 + 0.7 * g) + 0.3 * g * g).min(1.0)
        } else {
            question.p_miss + (0.9 - question.p_miss) * g.powi(4)
        };
        p_yes[q] = p;
        if rng.chance(p) {
            answers[q] = Answer::Yes;
        }
    }
    for (q, question) in questions.iter().enumerate() {
        if let Some((measure, limit)) = question.economy {
            let within = measure.of(measures) <= limit;
            p_yes[q] = if within {
                1.0 - economy_flip
            } else {
                economy_flip
            };
            if within != rng.chance(economy_flip) {
                answers[q] = Answer::Yes;
            }
        }
    }
    Answers { answers, p_yes }
}

/// The answers a scorer that knew the generative model would give, against
/// the answers drawn: its accuracy and AUC bound what a learned scorer reaches.
#[derive(Debug, Default, Clone, Serialize)]
pub struct PlantedAnswers {
    #[serde(skip)]
    pairs: Vec<(f64, bool)>,
    pub judgments: u64,
    pub yes_rate: f64,
    /// Accuracy of answering yes when the planted P(yes) >= 0.5.
    pub planted_accuracy: f64,
    pub planted_auc: f64,
}

impl PlantedAnswers {
    pub fn add(&mut self, p_yes: f64, yes: bool) {
        self.pairs.push((p_yes, yes));
    }

    pub fn finish(&mut self) {
        let n = self.pairs.len();
        self.judgments = n as u64;
        let yes = self.pairs.iter().filter(|(_, y)| *y).count();
        self.yes_rate = yes as f64 / n.max(1) as f64;
        self.planted_accuracy =
            self.pairs.iter().filter(|(p, y)| (*p >= 0.5) == *y).count() as f64 / n.max(1) as f64;
        let scores: Vec<f64> = self.pairs.iter().map(|(p, _)| *p).collect();
        let labels: Vec<bool> = self.pairs.iter().map(|(_, y)| *y).collect();
        self.planted_auc = crate::scorer::metrics::auc(&scores, &labels).unwrap_or(f64::NAN);
    }
}
