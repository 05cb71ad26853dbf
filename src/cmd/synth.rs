//! `turnlake synth --out DIR --seed S [sizes] [--params FILE] [--plant-mixture] [--truth-out FILE]`

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::synth::{self, Params, Sizes};

#[derive(Debug, Args)]
pub struct SynthArgs {
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 4)]
    pub eval_runs: u32,
    #[arg(long, default_value_t = 25)]
    pub samples_per_run: u32,
    #[arg(long, default_value_t = 200)]
    pub mini_coder: u64,
    #[arg(long, default_value_t = 20)]
    pub mswea: u64,
    /// Generative model parameters (default: the embedded data/synth.toml).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Plant a mixture effect for `mix sweep` to find (the params' [plant]
    /// mixture = true): the held-out credit rows are learned best from
    /// escape_mini and finish_mini half and half, and within escape_duel from
    /// the rows of the sides the judge scored highest.
    #[arg(long)]
    pub plant_mixture: bool,
    /// Where to write the planted truth (default: OUT/truth.json).
    #[arg(long)]
    pub truth_out: Option<PathBuf>,
}

pub fn load_params(path: Option<&PathBuf>) -> anyhow::Result<Params> {
    super::load_config(path, Params::default_params, Params::from_toml)
}

pub fn run(args: SynthArgs) -> anyhow::Result<ExitCode> {
    let mut params = load_params(args.params.as_ref())?;
    params.plant.mixture |= args.plant_mixture;
    let sizes = Sizes {
        eval_runs: args.eval_runs,
        samples_per_run: args.samples_per_run,
        mini_coder: args.mini_coder,
        mswea: args.mswea,
    };
    let started = Instant::now();
    let bar = crate::progress::bar(sizes.eval_runs as u64, "synth albedo runs");
    let truth = synth::generate(&args.out, args.seed, sizes, &params, &|n| bar.inc(n))
        .with_context(|| format!("writing the corpus under {}", args.out.display()))?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let truth_path = args
        .truth_out
        .unwrap_or_else(|| args.out.join("truth.json"));
    std::fs::write(&truth_path, serde_json::to_vec_pretty(&truth)?)
        .with_context(|| format!("writing {}", truth_path.display()))?;
    let c = &truth.counts;
    println!(
        "wrote {} eval runs ({} samples, {} sides), {} mini-coder and {} mswea trajectories under {}",
        c.eval_runs,
        c.samples,
        c.sides,
        c.mini_coder_trajectories,
        c.mswea_trajectories,
        args.out.display()
    );
    println!(
        "{:.1} MB of text in {secs:.2} s ({:.1} MB/s); truth in {}",
        c.bytes as f64 / 1e6,
        c.bytes as f64 / 1e6 / secs.max(1e-9),
        truth_path.display()
    );
    Ok(ExitCode::SUCCESS)
}
