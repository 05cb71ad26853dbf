//! `turnlake train --mix sft_mix --out runs/NAME` and `turnlake mix sweep`:
//! the commands that train with libtorch. Their arguments are parsed here;
//! they run in the `turnlake-train` binary beside this one, so every other
//! command starts without loading libtorch (whose start-up cost is in
//! bench/README.md).

use anyhow::Context;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DeviceArg {
    Cpu,
    Cuda,
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
    #[arg(long, conflicts_with = "model")]
    pub tokenizer: Option<PathBuf>,
    /// A Hugging Face model folder: its tokenizer and chat template (see `validate --model`).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
}

/// The training settings `turnlake train` uses when given no --config.
pub const DEFAULT_CONFIG: &str = include_str!("../../data/train.toml");

/// The `turnlake-train` binary, beside this one.
pub fn trainer() -> anyhow::Result<Command> {
    crate::sinks::Sink::Train.require("training (turnlake train, turnlake mix sweep)")?;
    let exe = std::env::current_exe().context("locating the turnlake binary")?;
    let trainer = exe.with_file_name(format!("turnlake-train{}", std::env::consts::EXE_SUFFIX));
    anyhow::ensure!(
        trainer.is_file(),
        "training runs in the turnlake-train binary, which is not beside {} \
         (`cargo build` and `cargo install --path .` build both)",
        exe.display()
    );
    Ok(Command::new(trainer))
}

/// Hand this process's command line to `turnlake-train`, which parses the
/// same arguments; its exit is ours.
pub fn delegate() -> anyhow::Result<ExitCode> {
    let mut trainer = trainer()?;
    trainer.args(std::env::args_os().skip(1));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = trainer.exec();
        Err(err).context("starting turnlake-train")
    }
    #[cfg(not(unix))]
    {
        let status = trainer.status().context("running turnlake-train")?;
        Ok(ExitCode::from(status.code().unwrap_or(1) as u8))
    }
}
