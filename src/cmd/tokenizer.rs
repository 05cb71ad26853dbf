//! `turnlake tokenizer train --out FILE`: the small BPE the project ships.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::synth::{self, Params};
use crate::tokenize::train::train_bpe;

#[derive(Debug, Subcommand)]
pub enum TokenizerCommand {
    /// Train a byte-level BPE tokenizer.json on synthetic agent text.
    Train(TrainArgs),
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 4000)]
    pub vocab: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Synthetic trajectories to learn merges from.
    #[arg(long, default_value_t = 300)]
    pub trajectories: u64,
}

pub fn run(cmd: TokenizerCommand) -> anyhow::Result<ExitCode> {
    let TokenizerCommand::Train(args) = cmd;
    let texts = synth::sample_texts(args.seed, args.trajectories, &Params::default_params());
    let tok = train_bpe(texts, args.vocab).map_err(anyhow::Error::msg)?;
    tok.save(&args.out, false)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "trained a {}-token BPE on {} synthetic trajectories: {}",
        tok.get_vocab_size(true),
        args.trajectories,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
