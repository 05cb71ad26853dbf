//! Mixture comparison by proxy models: for each candidate share vector, a
//! training set of the same token budget drawn from the mixes in those
//! shares, one small model per seed, ranked by held-out loss on a target set
//! (by default the held-out `credit` rows), with the seed-to-seed spread.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use tch::Device;

use super::data::{self, Tokenized};
use super::run::{self, Dataset, TrainConfig};
use super::{Prepared, TrainError};

/// One candidate: mix name -> share (normalized to sum to 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub name: String,
    pub shares: BTreeMap<String, f64>,
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
        });
    }
    if out.len() < 2 {
        return Err("a sweep needs at least two candidates (separate them with ';')".into());
    }
    Ok(out)
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub rank: usize,
    pub candidate: Candidate,
    /// Held-out target loss per seed, in seed order.
    pub losses: Vec<f64>,
    pub mean_loss: f64,
    /// max - min over seeds.
    pub spread: f64,
    pub train_tokens: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub target: String,
    pub target_windows: usize,
    pub token_budget: usize,
    pub seeds: Vec<u64>,
    pub ranking: Vec<Ranked>,
    pub lake: serde_json::Value,
}

/// Rows for `candidate` within `budget` tokens: each mix's share of the
/// budget, rows taken in a seeded order, none of them held out.
fn compose<'a>(
    prepared: &'a Prepared,
    candidate: &Candidate,
    budget: usize,
    seed: u64,
    heldout_share: f64,
) -> Vec<&'a Tokenized> {
    let mut out = Vec::new();
    for (mix, share) in &candidate.shares {
        let mut rows: Vec<&Tokenized> = prepared
            .rows
            .iter()
            .filter(|r| &r.mix == mix && !data::held_out(&r.unit, seed, heldout_share))
            .collect();
        rows = run::permutation(rows.len(), seed, 0)
            .into_iter()
            .map(|i| rows[i])
            .collect();
        let quota = (budget as f64 * share) as usize;
        let mut taken = 0;
        for r in rows {
            if taken >= quota {
                break;
            }
            taken += r.ids.len();
            out.push(r);
        }
    }
    out
}

/// What a sweep compares: candidates, the target mix, the seeds.
pub struct SweepPlan<'a> {
    pub candidates: &'a [Candidate],
    pub target: &'a str,
    pub seeds: &'a [u64],
}

/// Train one proxy per candidate and seed; rank by mean held-out target loss.
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
    // and seed is measured on the same target windows.
    let split_seed = cfg.seed;
    let target_rows: Vec<&Tokenized> = prepared
        .rows
        .iter()
        .filter(|r| r.mix == target && data::held_out(&r.unit, split_seed, cfg.heldout_share))
        .collect();
    let target_windows = data::pack(target_rows, cfg.seq_len, prepared.separator);
    if target_windows.is_empty() {
        return Err(TrainError::Data(format!(
            "no held-out {target} rows to measure the candidates on"
        )));
    }
    let budget = cfg.steps as usize * cfg.batch_size * cfg.seq_len;
    let mut ranked = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let rows = compose(prepared, candidate, budget, split_seed, cfg.heldout_share);
        let train_tokens = rows.iter().map(|r| r.ids.len()).sum();
        let windows = data::pack(rows, cfg.seq_len, prepared.separator);
        let mut losses = Vec::new();
        for &seed in seeds {
            let dataset = Dataset {
                vocab_size: prepared.vocab_size,
                train: windows.clone(),
                heldout: BTreeMap::from([(target.to_string(), target_windows.clone())]),
            };
            let run_cfg = TrainConfig {
                seed,
                eval_every: cfg.steps,
                checkpoint_every: cfg.steps,
                ..cfg.clone()
            };
            let dir = out
                .join(format!("candidate-{i}"))
                .join(format!("seed-{seed}"));
            let opts = run::RunOptions::new(device, &dir, prepared.lake.clone());
            let report = run::train(&dataset, &run_cfg, &opts, &|_| {})?;
            losses.push(
                report
                    .heldout_loss
                    .get(target)
                    .map_or(f64::NAN, |l| *l as f64),
            );
            on_run();
        }
        let mean = losses.iter().sum::<f64>() / losses.len() as f64;
        let spread = losses.iter().copied().fold(f64::MIN, f64::max)
            - losses.iter().copied().fold(f64::MAX, f64::min);
        ranked.push(Ranked {
            rank: 0,
            candidate: candidate.clone(),
            losses,
            mean_loss: mean,
            spread,
            train_tokens,
        });
    }
    ranked.sort_by(|a, b| a.mean_loss.total_cmp(&b.mean_loss));
    for (i, r) in ranked.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    let report = SweepReport {
        target: target.to_string(),
        target_windows: target_windows.len(),
        token_budget: budget,
        seeds: seeds.to_vec(),
        ranking: ranked,
        lake: prepared.lake.clone(),
    };
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("sweep.json"),
        serde_json::to_vec_pretty(&report).expect("json"),
    )?;
    let points: Vec<(String, Vec<f64>)> = report
        .ranking
        .iter()
        .map(|r| (r.candidate.name.clone(), r.losses.clone()))
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
        assert!(parse_grid("credit=1").is_err());
        assert!(parse_grid("credit;x=1").is_err());
        assert!(parse_grid("credit=-1;x=1").is_err());
    }
}
