//! A generator of raw inputs in the real formats (Albedo eval runs,
//! mini-coder Parquet shards, mini-swe-agent trajectories) from a documented
//! generative model whose parameters are the planted truth. Same seed and
//! parameters: byte-identical files.

pub mod albedo;
pub mod checklist;
mod mini;
pub mod params;
pub mod plan;
pub mod rng;
pub mod text;

use serde::Serialize;
use std::path::{Path, PathBuf};

pub use params::Params;
use plan::{Figures, Tally};
use rng::Rng;

/// How much to generate.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sizes {
    pub eval_runs: u32,
    pub samples_per_run: u32,
    pub mini_coder: u64,
    pub mswea: u64,
}

/// Exact counts of what was written: what ingest must report.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub eval_runs: u64,
    pub samples: u64,
    pub sides: u64,
    pub albedo_turns: u64,
    pub albedo_messages: u64,
    pub questions: u64,
    pub judgments: u64,
    pub mini_coder_trajectories: u64,
    pub mini_coder_turns: u64,
    pub mini_coder_messages: u64,
    pub mswea_trajectories: u64,
    pub mswea_turns: u64,
    pub mswea_messages: u64,
    /// Planted product rows (before the format gate can only drop malformed ones).
    pub escape_duel_rows: u64,
    pub escape_mini_rows: u64,
    /// Bytes of input text written (message text and Albedo artifacts).
    pub bytes: u64,
}

/// The truth file: parameters, exact counts, and the turn-level figures of
/// this corpus (`realized`) and of the model itself (`expected`).
#[derive(Debug, Clone, Serialize)]
pub struct Truth {
    pub seed: u64,
    pub sizes: Sizes,
    pub params: Params,
    pub counts: Counts,
    pub realized: Figures,
    pub expected: Figures,
    /// What a scorer that knew the planted answer probabilities would reach.
    pub scorer: checklist::PlantedAnswers,
}

/// Where the parts of a corpus live under its folder.
pub fn albedo_dir(out: &Path) -> PathBuf {
    out.join("albedo")
}
pub fn mini_coder_dir(out: &Path) -> PathBuf {
    out.join("mini-coder")
}
pub fn mswea_dir(out: &Path) -> PathBuf {
    out.join("mswea")
}

/// Sides simulated (plans only, no text) for the expected figures.
const EXPECTED_SAMPLES: u32 = 40_000;

/// The figures the parameters imply, by simulating many Albedo samples.
pub fn expected_figures(p: &Params) -> Result<Figures, String> {
    let k = p.kinds()?;
    let m = &p.model;
    let mut rng = Rng::new(0x5EED);
    let mut tally = Tally::default();
    for _ in 0..EXPECTED_SAMPLES {
        let sample = plan::plan_sample(&mut rng, &k, m);
        for side in 0..2 {
            tally.add(&sample.full(side), true, sample.sides[side].0);
        }
    }
    Ok(tally.figures())
}

/// Message texts of `n` synthetic trajectories, for training a tokenizer.
pub fn sample_texts(seed: u64, n: u64, p: &Params) -> Vec<String> {
    let k = p.kinds().expect("validated parameters");
    mini::sample_texts(&Rng::new(seed), p, &k, n)
}

/// Write a corpus under `out` and return its truth.
pub fn generate(
    out: &Path,
    seed: u64,
    sizes: Sizes,
    p: &Params,
    progress: &dyn Fn(u64),
) -> std::io::Result<Truth> {
    let k = p.kinds().map_err(std::io::Error::other)?;
    let root = Rng::new(seed);
    let mut counts = Counts::default();
    let mut tally = Tally::default();
    let mut planted = checklist::PlantedAnswers::default();
    let adir = albedo_dir(out);
    for run in 0..sizes.eval_runs {
        let mut rng = root.fork(run as u64);
        albedo::write_run(
            &adir,
            &mut rng,
            p,
            &k,
            sizes.samples_per_run,
            &mut albedo::Tallies {
                counts: &mut counts,
                tally: &mut tally,
                planted: &mut planted,
            },
        )?;
        counts.eval_runs += 1;
        progress(1);
    }
    if sizes.mini_coder > 0 {
        mini::write_mini_coder(
            &mini_coder_dir(out),
            &root,
            p,
            &k,
            sizes.mini_coder,
            &mut counts,
        )?;
    }
    if sizes.mswea > 0 {
        mini::write_mswea(&mswea_dir(out), &root, p, &k, sizes.mswea, &mut counts)?;
    }
    planted.finish();
    Ok(Truth {
        seed,
        sizes,
        params: p.clone(),
        counts,
        realized: tally.figures(),
        expected: expected_figures(p).map_err(std::io::Error::other)?,
        scorer: planted,
    })
}
