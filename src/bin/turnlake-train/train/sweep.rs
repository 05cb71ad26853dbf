//! Mixture comparison by proxy models: for each candidate share vector and
//! seed, a training set drawn from the mixes in those shares with the same
//! budget of trainable (train-turn) tokens, the context fed but not counted,
//! and one small model trained on it for one pass; the seed varies the draw
//! as well as the model. The target's held-out rows (by default the held-out
//! `credit` rows) are split in two: candidates are ranked by mean loss on the
//! dev half, a difference counts only beyond the larger seed-to-seed spread,
//! and the winner's loss is reported on the test half. The winner is written
//! as a `[mix]` block that `turnlake mix --config` composes.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use tch::Device;

use super::data::{self, Tokenized};
use super::run::{self, Dataset, TrainConfig};
use super::{Prepared, TrainError};
use turnlake::pipeline::select::{Quality, Selection};

/// One candidate: mix name -> share (normalized to sum to 1), how each mix
/// takes its share, and whether its rows pass the target-calibrated gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub name: String,
    pub shares: BTreeMap<String, f64>,
    pub select: Selection,
    pub gated: bool,
}

/// Each candidate once per selection and gate setting (named with them
/// where there are several); a sweep compares at least two.
pub fn with_variants(
    candidates: Vec<Candidate>,
    selections: &[Selection],
    gates: &[bool],
) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::new();
    for c in candidates {
        for &select in selections {
            for &gated in gates {
                let mut marks = Vec::new();
                if selections.len() > 1 {
                    marks.push(if select == Selection::Ranked {
                        "ranked"
                    } else {
                        "random"
                    });
                }
                if gates.len() > 1 {
                    marks.push(if gated { "gated" } else { "ungated" });
                }
                let name = match marks.is_empty() {
                    true => c.name.clone(),
                    false => format!("{} ({})", c.name, marks.join(", ")),
                };
                out.push(Candidate {
                    name,
                    select,
                    gated,
                    ..c.clone()
                });
            }
        }
    }
    match out.len() {
        0 | 1 => Err(
            "a sweep compares at least two candidates: give several share vectors \
                      separated by ';', or --select random,ranked or --gate none,target"
                .into(),
        ),
        _ => Ok(out),
    }
}

/// The gate calibrated on the target's own rows (those not held out): the
/// central range of their lengths in tokens, 10th to 90th percentile.
pub fn target_range(
    prepared: &Prepared,
    target: &str,
    split: (u64, f64),
) -> Option<(usize, usize)> {
    let mut lengths: Vec<usize> = prepared
        .rows
        .iter()
        .filter(|r| r.mix == target && !data::held_out(&r.unit, split.0, split.1))
        .map(|r| r.ids.len())
        .collect();
    if lengths.is_empty() {
        return None;
    }
    lengths.sort_unstable();
    let at = |q: f64| lengths[((lengths.len() - 1) as f64 * q).round() as usize];
    Some((at(0.1), at(0.9)))
}

/// `credit=0.5,finish_mini=0.5;escape_mini=1` -> candidates.
pub fn parse_grid(grid: &str) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::new();
    for spec in grid.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let mut shares = BTreeMap::new();
        for part in spec.split(',') {
            let (mix, share) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected mix=share"))?;
            let share: f64 = share
                .trim()
                .parse()
                .map_err(|_| format!("{part:?}: the share is not a number"))?;
            if share < 0.0 {
                return Err(format!("{part:?}: a share cannot be negative"));
            }
            shares.insert(mix.trim().to_string(), share);
        }
        let total: f64 = shares.values().sum();
        if total <= 0.0 {
            return Err(format!("{spec:?}: the shares sum to zero"));
        }
        shares.values_mut().for_each(|s| *s /= total);
        out.push(Candidate {
            name: spec.to_string(),
            shares,
            select: Selection::Random,
            gated: false,
        });
    }
    if out.is_empty() {
        return Err("no candidate: give share vectors separated by ';'".into());
    }
    Ok(out)
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub rank: usize,
    pub candidate: Candidate,
    /// Loss on the target's dev half per seed, in seed order.
    pub losses: Vec<f64>,
    pub mean_loss: f64,
    /// max - min over seeds: the noise floor of this candidate.
    pub spread: f64,
    /// Loss on the target's test half per seed, and its mean.
    pub test_losses: Vec<f64>,
    pub test_mean_loss: f64,
    /// Whether its dev loss differs from the next-ranked candidate's by more
    /// than the larger of their spreads (the last: from the one above).
    pub beyond_noise: bool,
    /// Trainable and context tokens of its training sets (mean over seeds).
    pub trainable_tokens: usize,
    /// Whether its mixes held fewer trainable tokens than the budget (its
    /// loss then compares a smaller training set).
    pub short: bool,
    pub context_tokens: usize,
    /// Steps of each proxy: one pass over its windows.
    pub steps: i64,
    /// Seconds its proxies trained, all seeds (said, not written: a rerun
    /// writes the same sweep.json).
    #[serde(skip)]
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub target: String,
    pub dev_windows: usize,
    pub test_windows: usize,
    /// Trainable tokens each candidate's training set holds.
    pub trainable_budget: usize,
    /// The target-calibrated gate: the lengths (tokens) gated candidates keep.
    pub gate_tokens: Option<(usize, usize)>,
    pub seeds: Vec<u64>,
    pub ranking: Vec<Ranked>,
    /// The winner as a `[mix]` block (written to winner.toml).
    pub winner: String,
    pub lake: serde_json::Value,
}

/// Rows for `candidate`: each mix's share of `budget` trainable tokens,
/// rows taken in an order drawn by `draw_seed` (best first by quality when
/// the candidate is ranked, the draw breaking ties), none of the rows held
/// out by `split_seed`, and, for a gated candidate, only rows whose length
/// lies in `gate`; the row that reaches a quota is taken.
fn compose<'a>(
    prepared: &'a Prepared,
    candidate: &Candidate,
    (budget, gate): (usize, Option<(usize, usize)>),
    draw_seed: u64,
    (split_seed, heldout_share): (u64, f64),
) -> Vec<&'a Tokenized> {
    let mut out = Vec::new();
    let passes = |r: &Tokenized| match (candidate.gated, gate) {
        (true, Some((lo, hi))) => (lo..=hi).contains(&r.ids.len()),
        _ => true,
    };
    for (mix, share) in &candidate.shares {
        let rows: Vec<usize> = (0..prepared.rows.len())
            .filter(|&i| {
                let r = &prepared.rows[i];
                &r.mix == mix && !data::held_out(&r.unit, split_seed, heldout_share) && passes(r)
            })
            .collect();
        let mut order: Vec<usize> = run::permutation(rows.len(), draw_seed, 0)
            .into_iter()
            .map(|k| rows[k])
            .collect();
        if candidate.select == Selection::Ranked {
            // A stable sort: rows of equal quality stay in the drawn order.
            order.sort_by(|&a, &b| prepared.quality[b].total_cmp(&prepared.quality[a]));
        }
        let quota = (budget as f64 * share) as usize;
        let mut taken = 0;
        for i in order {
            if taken >= quota {
                break;
            }
            taken += prepared.rows[i].trainable();
            out.push(&prepared.rows[i]);
        }
    }
    out
}

/// What a sweep compares: candidates, the target mix, the seeds, and the
/// trainable tokens each candidate trains on.
pub struct SweepPlan<'a> {
    pub candidates: &'a [Candidate],
    pub target: &'a str,
    pub seeds: &'a [u64],
    pub budget: usize,
    /// The quality score a ranked candidate takes rows by.
    pub quality: Quality,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn spread(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
}

/// `winner` as a `[mix]` block `turnlake mix --config` composes.
pub fn mix_block(winner: &Ranked, seed: u64, quality: &Quality) -> String {
    let shares: String = winner
        .candidate
        .shares
        .iter()
        .map(|(m, s)| format!("{m} = {s}\n"))
        .collect();
    let select = match winner.candidate.select {
        Selection::Random => String::new(),
        Selection::Ranked => "select = \"ranked\"\n".to_string(),
    };
    let quality = match winner.candidate.select {
        Selection::Random => String::new(),
        Selection::Ranked => format!(
            "\n[mix.quality]\ncredit = {}\nscore = {}\nscorer = {}\n",
            quality.credit, quality.score, quality.scorer
        ),
    };
    let gated = match winner.candidate.gated {
        true => "# It trained on the rows the target-calibrated gate keeps (sweep.json's gate_tokens); mix keeps every length.\n",
        false => "",
    };
    format!(
        "# The winner of `turnlake mix sweep` ({}): dev loss {:.4} +/- {:.4}, test loss {:.4}.\n{gated}\
         # Compose it with: turnlake mix --config winner.toml [--model DIR]\n\
         [mix]\nmode = \"shares\"\nunit = \"tokens\"\nseed = {seed}\n{select}\n[mix.shares]\n{shares}{quality}",
        winner.candidate.name, winner.mean_loss, winner.spread, winner.test_mean_loss
    )
}

/// Train one proxy per candidate and seed; rank by mean dev loss.
pub fn sweep(
    prepared: &Prepared,
    plan: &SweepPlan,
    cfg: &TrainConfig,
    device: Device,
    out: &Path,
    on_run: &dyn Fn(),
) -> Result<SweepReport, TrainError> {
    let (candidates, target, seeds) = (plan.candidates, plan.target, plan.seeds);
    // The held-out split is fixed by the config's seed, so every candidate
    // and seed is measured on the same target windows; the target's held-out
    // rows split in two halves by another hash of their unit.
    let split = (cfg.seed, cfg.heldout_share);
    let (mut dev, mut test) = (Vec::new(), Vec::new());
    for r in prepared
        .rows
        .iter()
        .filter(|r| r.mix == target && data::held_out(&r.unit, cfg.seed, cfg.heldout_share))
    {
        match data::held_out(&r.unit, cfg.seed.wrapping_add(1), 0.5) {
            true => test.push(r),
            false => dev.push(r),
        }
    }
    let dev = data::pack(dev, cfg.seq_len, prepared.separator);
    let test = data::pack(test, cfg.seq_len, prepared.separator);
    if dev.is_empty() || test.is_empty() {
        return Err(TrainError::Data(format!(
            "too few held-out {target} rows to split into a dev and a test half \
             (raise heldout_share, or choose another --target)"
        )));
    }
    let gate = target_range(prepared, target, split);
    let mut ranked = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let (mut losses, mut test_losses) = (Vec::new(), Vec::new());
        let (mut trainable, mut context, mut steps) = (0, 0, 0);
        let started = std::time::Instant::now();
        for &seed in seeds {
            let rows = compose(prepared, candidate, (plan.budget, gate), seed, split);
            let held = rows.iter().map(|r| r.trainable()).sum::<usize>();
            trainable += held;
            context += rows.iter().map(|r| r.ids.len()).sum::<usize>() - held;
            let windows = data::pack(rows, cfg.seq_len, prepared.separator);
            if windows.is_empty() {
                // Nothing to train on (a gate that keeps none of its mixes'
                // rows): no loss, ranked last.
                losses.push(f64::NAN);
                test_losses.push(f64::NAN);
                on_run();
                continue;
            }
            let run_steps = windows.len().div_ceil(cfg.batch_size).max(1) as i64;
            steps = run_steps;
            let dataset = Dataset {
                vocab_size: prepared.vocab_size,
                train: windows,
                heldout: BTreeMap::from([
                    ("dev".to_string(), dev.clone()),
                    ("test".to_string(), test.clone()),
                ]),
            };
            let run_cfg = TrainConfig {
                seed,
                steps: run_steps,
                warmup: cfg.warmup.min(run_steps / 2),
                eval_every: run_steps,
                checkpoint_every: run_steps,
                ..cfg.clone()
            };
            let dir = out
                .join(format!("candidate-{i}"))
                .join(format!("seed-{seed}"));
            let opts = run::RunOptions::new(device, &dir, prepared.lake.clone());
            let report = run::train(&dataset, &run_cfg, &opts, &|_| {})?;
            let loss = |half: &str| {
                report
                    .heldout_loss
                    .get(half)
                    .map_or(f64::NAN, |l| *l as f64)
            };
            losses.push(loss("dev"));
            test_losses.push(loss("test"));
            on_run();
        }
        ranked.push(Ranked {
            rank: 0,
            candidate: candidate.clone(),
            mean_loss: mean(&losses),
            spread: spread(&losses),
            test_mean_loss: mean(&test_losses),
            losses,
            test_losses,
            beyond_noise: false,
            trainable_tokens: trainable / seeds.len().max(1),
            short: trainable / seeds.len().max(1) < plan.budget,
            context_tokens: context / seeds.len().max(1),
            steps,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    // Best first; a candidate with nothing to train on last.
    ranked.sort_by(|a, b| {
        (a.mean_loss.is_nan(), a.mean_loss)
            .partial_cmp(&(b.mean_loss.is_nan(), b.mean_loss))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    if ranked.first().is_none_or(|r| r.mean_loss.is_nan()) {
        return Err(TrainError::Data(
            "no candidate had rows to train on (check the grid's mix names and the gate)".into(),
        ));
    }
    let n = ranked.len();
    for i in 0..n {
        let other = if i + 1 < n {
            i + 1
        } else {
            i.saturating_sub(1)
        };
        let floor = ranked[i].spread.max(ranked[other].spread);
        ranked[i].beyond_noise =
            other != i && (ranked[i].mean_loss - ranked[other].mean_loss).abs() > floor;
        ranked[i].rank = i + 1;
    }
    let winner = mix_block(&ranked[0], seeds[0], &plan.quality);
    let report = SweepReport {
        target: target.to_string(),
        dev_windows: dev.len(),
        test_windows: test.len(),
        trainable_budget: plan.budget,
        gate_tokens: gate,
        seeds: seeds.to_vec(),
        ranking: ranked,
        winner,
        lake: prepared.lake.clone(),
    };
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("sweep.json"),
        serde_json::to_vec_pretty(&report).expect("json"),
    )?;
    std::fs::write(out.join("winner.toml"), &report.winner)?;
    let points: Vec<(String, Vec<f64>)> = report
        .ranking
        .iter()
        .filter(|r| !r.mean_loss.is_nan())
        .map(|r| {
            (
                r.candidate.name.clone(),
                r.losses.iter().map(|l| l.exp()).collect(),
            )
        })
        .collect();
    turnlake::plot::sweep(&points, &out.join("sweep.png"))
        .map_err(|e| TrainError::Data(format!("plotting the sweep: {e}")))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_parse_and_normalize() {
        let c = parse_grid("credit=1,finish_mini=3; escape_mini=2").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].shares["credit"], 0.25);
        assert_eq!(c[1].shares["escape_mini"], 1.0);
        assert!(parse_grid(" ; ").is_err());
        assert!(parse_grid("credit;x=1").is_err());
        assert!(parse_grid("credit=-1;x=1").is_err());
    }

    #[test]
    fn one_share_vector_is_a_sweep_only_with_variants() {
        let one = parse_grid("escape_duel=1").unwrap();
        let plain = with_variants(one.clone(), &[Selection::Random], &[false]);
        assert!(plain.is_err());
        let both = with_variants(one, &[Selection::Random, Selection::Ranked], &[false]).unwrap();
        let names: Vec<&str> = both.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["escape_duel=1 (random)", "escape_duel=1 (ranked)"]);
    }
}
