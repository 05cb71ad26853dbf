//! `turnlake train --mix sft_mix --out runs/NAME`: train a small causal LM on
//! a built mix (loss on train turns only) and report held-out loss per mix.

use anyhow::Context;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::LakeArg;
use crate::tokenize::template::ChatTemplate;
use crate::train::run::{self, TrainConfig};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DeviceArg {
    Cpu,
    Cuda,
}

impl DeviceArg {
    pub fn device(self) -> anyhow::Result<tch::Device> {
        match self {
            DeviceArg::Cpu => Ok(tch::Device::Cpu),
            DeviceArg::Cuda => {
                anyhow::ensure!(
                    tch::Cuda::is_available(),
                    "--device cuda: libtorch sees no CUDA device"
                );
                Ok(tch::Device::Cuda(0))
            }
        }
    }
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The table of rows to train on: sft_mix, or one product table.
    #[arg(long, default_value = "sft_mix")]
    pub mix: String,
    /// The run folder: checkpoints/, model/ (config.json + model.safetensors), loss.png, report.json.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, value_enum, default_value = "cpu")]
    pub device: DeviceArg,
    /// Training settings (default: the embedded data/train.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Continue from the newest checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    /// Stop after this many steps in all (at a checkpoint; --resume goes on).
    #[arg(long)]
    pub stop_after: Option<i64>,
    /// A Hugging Face tokenizer.json (default: the shipped one validate uses).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
}

pub fn load_config(path: Option<&PathBuf>) -> anyhow::Result<TrainConfig> {
    super::load_config(path, TrainConfig::default_config, TrainConfig::from_toml)
}

pub async fn run(lake: &LakeArg, args: TrainArgs) -> anyhow::Result<ExitCode> {
    let cfg = load_config(args.config.as_ref())?;
    let device = args.device.device()?;
    let lake = lake.open().await?;
    let enc = super::validate::encoder(args.tokenizer.as_ref(), None, "")?;
    let prepared = crate::train::prepare(&lake, &args.mix, enc.as_ref(), &ChatTemplate::chatml())
        .await
        .context("reading the rows to train on")?;
    let data = prepared.dataset(cfg.seq_len, cfg.seed, cfg.heldout_share);
    let bar = crate::progress::bar(cfg.steps as u64, "train");
    let report = tokio::task::block_in_place(|| {
        let opts = run::RunOptions {
            resume: args.resume,
            stop_after: args.stop_after,
            ..run::RunOptions::new(device, &args.out, prepared.lake.clone())
        };
        run::train(&data, &cfg, &opts, &|step| bar.set_position(step as u64))
    })?;
    bar.finish_and_clear();
    print_report(&report, &args.out);
    Ok(ExitCode::SUCCESS)
}

pub fn print_report(r: &run::RunReport, out: &std::path::Path) {
    println!(
        "trained {} steps{} of a {}-parameter Qwen2 model on {} windows: final train loss {}, {:.0} tokens/s ({})",
        r.steps,
        r.resumed_from.map_or(String::new(), |s| format!(" (resumed at {s})")),
        r.parameters,
        r.train_windows,
        r.final_train_loss.map_or("n/a".into(), |l| format!("{l:.3}")),
        r.tokens_per_second,
        r.device
    );
    for (mix, loss) in &r.heldout_loss {
        println!(
            "   held-out {mix}: loss {loss:.3} over {} windows",
            r.heldout_windows.get(mix).copied().unwrap_or(0)
        );
    }
    println!(
        "   run folder {} (report.json, loss.png, model/, checkpoints/)",
        out.display()
    );
}
