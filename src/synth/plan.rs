//! The structural model: which kind each turn is, whether it is malformed,
//! repeats, fails, and how much judge credit it earns. Text is rendered from
//! a plan elsewhere; the planted truth is aggregated from plans here, with the
//! same rules the pipeline reports use, so the two can be compared.

use serde::Serialize;
use std::collections::BTreeMap;

use super::params::{KindTable, Model, KINDS};
use super::rng::Rng;
use crate::turn::CmdKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Normal,
    NoBlock,
    TwoBlocks,
}

#[derive(Debug, Clone)]
pub struct PlannedTurn {
    /// 1-based index among the trajectory's assistant turns.
    pub t: u32,
    pub kind: CmdKind,
    pub shape: Shape,
    pub think_unclosed: bool,
    /// Re-runs the previous turn's command verbatim.
    pub repeat: bool,
    /// An observation follows this turn.
    pub has_obs: bool,
    pub failed: bool,
    pub long_output: bool,
    /// One of the side's own (scored) outputs.
    pub scored: bool,
    /// How many yes-answers cite it (its credit at weight 1).
    pub credit: u32,
    pub prev_failed: bool,
}

impl PlannedTurn {
    /// The label the classifier gives the rendered turn.
    pub fn label(&self) -> CmdKind {
        if self.shape == Shape::NoBlock {
            CmdKind::Other
        } else {
            self.kind
        }
    }
}

/// What shapes one stretch of a trajectory's plan.
pub struct Stretch {
    pub n_turns: u32,
    /// The side's own turns (scored), not the shared context.
    pub own: bool,
    /// The own turns are judged (Albedo) and can earn credit.
    pub judged: bool,
    pub looped: bool,
    pub last_submit: bool,
    /// The stretch ends the record: its last turn has no observation.
    pub ends: bool,
    /// Whether malformed turns may occur.
    pub malformed: bool,
    /// P(a turn re-runs the previous command).
    pub repeat_rate: f64,
}

/// Plan `s.n_turns` turns following `prefix`.
pub fn plan_turns(
    rng: &mut Rng,
    k: &KindTable,
    m: &Model,
    s: &Stretch,
    prefix: &[PlannedTurn],
) -> Vec<PlannedTurn> {
    let start = prefix.len() as u32;
    let mut out: Vec<PlannedTurn> = Vec::with_capacity(s.n_turns as usize);
    let mut loop_kind = None;
    for i in 1..=s.n_turns {
        let t = start + i;
        let prev = out.last().or(prefix.last());
        let prev_failed = prev.is_some_and(|p| p.has_obs && p.failed);
        let last = i == s.n_turns;
        let (kind, repeat, shape) = if last && s.last_submit {
            (CmdKind::Submit, false, Shape::Normal)
        } else if s.looped {
            let kind = *loop_kind.get_or_insert_with(|| KINDS[rng.weighted(&k.mix)]);
            (kind, i > 1, Shape::Normal)
        } else if s.malformed && rng.chance(m.malformed_rate) {
            let kind = KINDS[rng.weighted(&k.mix)];
            (
                kind,
                false,
                if rng.chance(0.5) {
                    Shape::NoBlock
                } else {
                    Shape::TwoBlocks
                },
            )
        } else if prev.is_some_and(|p| p.shape == Shape::Normal && p.kind != CmdKind::Submit)
            && rng.chance(s.repeat_rate)
        {
            (prev.unwrap().kind, true, Shape::Normal)
        } else {
            (KINDS[rng.weighted(&k.mix)], false, Shape::Normal)
        };
        let has_obs = !(last && s.ends);
        let ki = KINDS.iter().position(|x| *x == kind);
        let failed = has_obs
            && match shape {
                Shape::Normal => ki.is_some_and(|i| rng.chance(k.fail[i])),
                _ => true,
            };
        let long_output = has_obs && !failed && rng.chance(m.long_output_rate);
        let think_unclosed =
            shape == Shape::Normal && kind != CmdKind::Submit && rng.chance(m.think_unclosed_rate);
        let mut credit = 0;
        if s.own && s.judged && !s.looped && shape == Shape::Normal && !think_unclosed {
            if let Some(i) = ki {
                let p = (k.earn[i]
                    * m.turn_decay.powi(t as i32 - 1)
                    * if prev_failed { m.fail_factor } else { 1.0 })
                .min(1.0);
                if rng.chance(p) {
                    credit = 1 + rng.poisson(k.extra[i]);
                }
            }
        }
        out.push(PlannedTurn {
            t,
            kind,
            shape,
            think_unclosed,
            repeat,
            has_obs,
            failed,
            long_output,
            scored: s.own,
            credit,
            prev_failed,
        });
    }
    out
}

/// One Albedo sample: the shared context, then each side's own turns.
pub struct SamplePlan {
    pub context: Vec<PlannedTurn>,
    /// (looped, own turns) for previous_king, then challenger.
    pub sides: [(bool, Vec<PlannedTurn>); 2],
}

impl SamplePlan {
    /// A side's whole trajectory: context then its own turns.
    pub fn full(&self, side: usize) -> Vec<PlannedTurn> {
        self.context
            .iter()
            .chain(self.sides[side].1.iter())
            .cloned()
            .collect()
    }
}

pub fn plan_sample(rng: &mut Rng, k: &KindTable, m: &Model) -> SamplePlan {
    let n_context = rng.range(0, m.cut_max as u64) as u32;
    let context_stretch = Stretch {
        n_turns: n_context,
        own: false,
        judged: false,
        looped: false,
        last_submit: false,
        ends: false,
        malformed: true,
        repeat_rate: m.repeat_rate,
    };
    let context = plan_turns(rng, k, m, &context_stretch, &[]);
    let mut side = || {
        let looped = rng.chance(m.looped_side_rate);
        let last_submit = !looped && rng.chance(m.submit_last_rate);
        let own_stretch = Stretch {
            n_turns: m.scored_per_side,
            own: true,
            judged: true,
            looped,
            last_submit,
            ends: true,
            malformed: true,
            repeat_rate: m.repeat_rate,
        };
        (looped, plan_turns(rng, k, m, &own_stretch, &context))
    };
    let sides = [side(), side()];
    SamplePlan { context, sides }
}

/// Planted escape_duel rows of one side: credited own turns, not repeats,
/// right after a failed observation or a repeated command.
pub fn escape_duel_rows(full: &[PlannedTurn]) -> u64 {
    full.windows(2)
        .filter(|w| {
            w[1].scored && w[1].credit > 0 && !w[1].repeat && (w[1].prev_failed || w[0].repeat)
        })
        .count() as u64
}

/// The turns an escape_mini row may train (the default select config).
pub const ESCAPE_MINI_TURNS: std::ops::RangeInclusive<u32> = 5..=32;

/// Planted escape_mini rows of one run, from its rendered commands (so a
/// command that happens to equal the one before counts, as it does in the
/// lake): the two commands before a well-formed turn in `ESCAPE_MINI_TURNS`
/// are one command, and the turn's own differs from it.
pub fn escape_mini_rows(plan: &[PlannedTurn], commands: &[String]) -> u64 {
    let command = |i: usize| {
        (plan[i].shape != Shape::NoBlock)
            .then(|| crate::turn::loops::normalize_command(&commands[i]))
    };
    (2..plan.len())
        .filter(|&i| {
            let (a, b, c) = (command(i - 2), command(i - 1), command(i));
            a.is_some()
                && a == b
                && c.is_some()
                && c != b
                && plan[i].shape == Shape::Normal
                && !plan[i].think_unclosed
                && ESCAPE_MINI_TURNS.contains(&plan[i].t)
        })
        .count() as u64
}

#[derive(Debug, Default, Clone, Copy)]
struct Acc {
    turns: u64,
    credit: u64,
    earning: u64,
}

impl Acc {
    fn add(&mut self, t: &PlannedTurn) {
        self.turns += 1;
        self.credit += t.credit as u64;
        self.earning += (t.credit > 0) as u64;
    }
    fn stat(&self, total: u64) -> CreditStat {
        let n = self.turns.max(1) as f64;
        CreditStat {
            turns: self.turns,
            share: self.turns as f64 / total.max(1) as f64,
            mean_credit: self.credit as f64 / n,
            pct_earning: 100.0 * self.earning as f64 / n,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CreditStat {
    pub turns: u64,
    pub share: f64,
    pub mean_credit: f64,
    pub pct_earning: f64,
}

/// Turn-level figures of a set of plans, computed as the reports compute them.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Over well-formed, non-submit turns of every trajectory.
    pub cmd_kind_share: BTreeMap<String, f64>,
    /// Over well-formed, non-submit turns that an observation follows.
    pub failed_obs_share: f64,
    /// Over well-formed, non-submit turns of trajectories that do not loop.
    pub repeat_rate: f64,
    /// Over scored turns of judged sides (Albedo), by command kind label.
    pub credit_by_kind: BTreeMap<String, CreditStat>,
    /// Over scored turns of judged sides, by turn index t.
    pub credit_by_turn: BTreeMap<u32, CreditStat>,
    /// Scored turns of judged sides whose own observation failed, of those an observation follows.
    pub failed_own_share: f64,
    /// Scored turns whose previous turn's observation failed.
    pub share_after_failure: f64,
    pub pct_earning_after_failure: f64,
    pub pct_earning_baseline: f64,
}

/// Accumulates plans into `Figures`.
#[derive(Debug, Default)]
pub struct Tally {
    kinds: BTreeMap<String, u64>,
    wellformed: u64,
    with_obs: u64,
    failed: u64,
    norep_turns: u64,
    repeats: u64,
    by_kind: BTreeMap<String, Acc>,
    by_turn: BTreeMap<u32, Acc>,
    scored: Acc,
    scored_with_obs: u64,
    scored_failed: u64,
    after_fail: Acc,
}

impl Tally {
    pub fn add(&mut self, plan: &[PlannedTurn], judged: bool, looped: bool) {
        for t in plan {
            let wellformed = t.shape == Shape::Normal && t.kind != CmdKind::Submit;
            if wellformed {
                self.wellformed += 1;
                *self.kinds.entry(t.kind.as_str().to_string()).or_default() += 1;
                if t.has_obs {
                    self.with_obs += 1;
                    self.failed += t.failed as u64;
                }
                if !looped {
                    self.norep_turns += 1;
                    self.repeats += t.repeat as u64;
                }
            }
            if judged && t.scored {
                self.by_kind
                    .entry(t.label().as_str().to_string())
                    .or_default()
                    .add(t);
                self.by_turn.entry(t.t).or_default().add(t);
                self.scored.add(t);
                if t.has_obs {
                    self.scored_with_obs += 1;
                    self.scored_failed += t.failed as u64;
                }
                if t.prev_failed {
                    self.after_fail.add(t);
                }
            }
        }
    }

    pub fn figures(&self) -> Figures {
        let total = self.scored.turns;
        Figures {
            cmd_kind_share: self
                .kinds
                .iter()
                .map(|(k, n)| (k.clone(), *n as f64 / self.wellformed.max(1) as f64))
                .collect(),
            failed_obs_share: self.failed as f64 / self.with_obs.max(1) as f64,
            repeat_rate: self.repeats as f64 / self.norep_turns.max(1) as f64,
            credit_by_kind: self
                .by_kind
                .iter()
                .map(|(k, a)| (k.clone(), a.stat(total)))
                .collect(),
            credit_by_turn: self
                .by_turn
                .iter()
                .map(|(k, a)| (*k, a.stat(total)))
                .collect(),
            failed_own_share: self.scored_failed as f64 / self.scored_with_obs.max(1) as f64,
            share_after_failure: self.after_fail.turns as f64 / total.max(1) as f64,
            pct_earning_after_failure: self.after_fail.stat(total).pct_earning,
            pct_earning_baseline: self.scored.stat(total).pct_earning,
        }
    }
}
