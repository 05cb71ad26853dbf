//! `turnlake-train`: the commands that train with libtorch, `turnlake train`
//! and `turnlake mix sweep`. `turnlake` hands them here with its own command
//! line (this binary parses the same arguments), so that no other command
//! pays for loading libtorch.

mod train;

use anyhow::Context;
use clap::Parser;
use comfy_table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

use train::run::{self, TrainConfig};
use turnlake::cli::{Cli, Command};
use turnlake::cmd::mix::{GateArg, MixArgs, MixCommand, SweepArgs};
use turnlake::cmd::train::{DeviceArg, TrainArgs};
use turnlake::cmd::LakeArg;
use turnlake::pipeline::select::{Quality, Selection};
use turnlake::tokenize::template::Template;

fn main() -> ExitCode {
    turnlake::entry::main(run)
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let lake = cli.lake_arg();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Train(args) => rt.block_on(train(&lake, args)),
        Command::Mix(MixArgs {
            command: Some(MixCommand::Sweep(args)),
            ..
        }) => rt.block_on(sweep(&lake, args)),
        _ => {
            anyhow::bail!("turnlake-train runs `train` and `mix sweep`; run the rest with turnlake")
        }
    }
}

fn device(arg: DeviceArg) -> anyhow::Result<tch::Device> {
    match arg {
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

/// The tokenizer and template the rows render with, as validate loads
/// them, and their description.
fn tokenizer(
    tokenizer: Option<PathBuf>,
    model: Option<PathBuf>,
) -> anyhow::Result<(Box<dyn turnlake::tokenize::TextEncoder>, Template, String)> {
    let options = turnlake::job::validate::ValidateOptions {
        tokenizer,
        model,
        ..turnlake::job::validate::ValidateOptions::defaults(0)
    };
    let (enc, template) = turnlake::job::validate::tokenizer_and_template(&options)?;
    Ok((enc, template, turnlake::job::validate::describe(&options)))
}

fn load_config(path: Option<&PathBuf>) -> anyhow::Result<TrainConfig> {
    turnlake::cmd::load_config(path, TrainConfig::default_config, TrainConfig::from_toml)
}

async fn train(lake: &LakeArg, args: TrainArgs) -> anyhow::Result<ExitCode> {
    let cfg = load_config(args.config.as_ref())?;
    let device = device(args.device)?;
    let lake = lake.open().await?;
    let (enc, template, used) = tokenizer(args.tokenizer.clone(), args.model.clone())?;
    println!("tokenizer and template: {used}");
    let prepared = train::prepare(&lake, &args.mix, (enc.into(), template), None, None)
        .await
        .context("reading the rows to train on")?;
    let data = prepared.dataset(cfg.seq_len, cfg.seed, cfg.heldout_share);
    let bar = turnlake::progress::bar(cfg.steps as u64, "train");
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

fn print_report(r: &run::RunReport, out: &std::path::Path) {
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

async fn sweep(lake: &LakeArg, args: SweepArgs) -> anyhow::Result<ExitCode> {
    use train::sweep;
    let selections: Vec<Selection> = args.select.iter().map(|s| (*s).into()).collect();
    let gates: Vec<bool> = args.gate.iter().map(|g| *g == GateArg::Target).collect();
    let candidates = sweep::parse_grid(&args.grid)
        .and_then(|c| sweep::with_variants(c, &selections, &gates))
        .map_err(anyhow::Error::msg)?;
    anyhow::ensure!(!args.seeds.is_empty(), "--seeds: give at least one seed");
    let cfg = load_config(args.train_config.as_ref())?;
    let device = device(args.device)?;
    let lake = lake.open().await?;
    let (enc, template, used) = tokenizer(None, args.model.clone())?;
    println!("tokenizer and template: {used}");
    let ranked = selections.contains(&Selection::Ranked);
    let quality = Quality::parse(&args.quality).map_err(|e| anyhow::anyhow!("--quality: {e}"))?;
    // Only the mixes a candidate draws from, and the target's.
    let mixes = candidates
        .iter()
        .flat_map(|c| c.shares.keys().cloned())
        .chain([args.target.clone()])
        .collect();
    let started = std::time::Instant::now();
    let prepared = train::prepare(
        &lake,
        &args.table,
        (enc.into(), template),
        ranked.then_some(&quality),
        Some(mixes),
    )
    .await
    .context("reading the rows to train on")?;
    let prepare_seconds = started.elapsed().as_secs_f64();
    let bar = turnlake::progress::bar((candidates.len() * args.seeds.len()) as u64, "sweep");
    let report = tokio::task::block_in_place(|| {
        let plan = sweep::SweepPlan {
            candidates: &candidates,
            target: &args.target,
            seeds: &args.seeds,
            budget: args
                .budget
                .unwrap_or(cfg.steps as usize * cfg.batch_size * cfg.seq_len),
            quality,
        };
        sweep::sweep(&prepared, &plan, &cfg, device, &args.out, &|| bar.inc(1))
    })?;
    bar.finish_and_clear();
    print_sweep(&report);
    let per_candidate =
        report.ranking.iter().map(|c| c.seconds).sum::<f64>() / report.ranking.len().max(1) as f64;
    println!(
        "time: {prepare_seconds:.1} s to read and tokenize the rows ({} of them), then {per_candidate:.1} s \
         per candidate ({:.1} s per proxy)",
        prepared.rows.len(),
        per_candidate / args.seeds.len().max(1) as f64
    );
    println!("{}", report.winner);
    println!(
        "   {}, {} and {}",
        args.out.join("winner.toml").display(),
        args.out.join("sweep.json").display(),
        args.out.join("sweep.png").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A loss as the sweep's table shows it ("-": a candidate with no rows).
fn shown(loss: f64) -> String {
    match loss.is_nan() {
        true => "-".into(),
        false => format!("{loss:.4}"),
    }
}

fn print_sweep(r: &train::sweep::SweepReport) {
    println!(
        "mix sweep: {} trainable tokens per candidate; loss on the held-out {} rows' dev half ({} windows), \
         the winner's on the test half ({} windows); seeds {:?}",
        r.trainable_budget, r.target, r.dev_windows, r.test_windows, r.seeds
    );
    if let (Some((lo, hi)), true) = (r.gate_tokens, r.ranking.iter().any(|c| c.candidate.gated)) {
        println!("the target-calibrated gate keeps rows of {lo} to {hi} tokens (the target's 10th to 90th percentile)");
    }
    let mut t = Table::new();
    t.set_header(vec![
        "rank",
        "candidate",
        "dev loss (mean)",
        "dev perplexity",
        "spread (max-min)",
        "beyond noise",
        "per seed",
        "test loss",
        "trainable tokens",
        "context tokens",
        "steps",
    ]);
    for c in &r.ranking {
        t.add_row(vec![
            c.rank.to_string(),
            c.candidate.name.clone(),
            shown(c.mean_loss),
            match c.mean_loss.is_nan() {
                true => "-".into(),
                false => format!("{:.1}", c.mean_loss.exp()),
            },
            shown(c.spread),
            if c.beyond_noise { "yes" } else { "no" }.to_string(),
            c.losses
                .iter()
                .map(|l| shown(*l))
                .collect::<Vec<_>>()
                .join(" "),
            shown(c.test_mean_loss),
            match c.short {
                true => format!("{} (short)", c.trainable_tokens),
                false => c.trainable_tokens.to_string(),
            },
            c.context_tokens.to_string(),
            c.steps.to_string(),
        ]);
    }
    println!("{t}");
    if r.ranking.iter().any(|c| c.short) {
        println!(
            "(short): the candidate's mixes hold fewer trainable tokens than the budget, so it \
             trained on less; lower --budget to compare like with like"
        );
    }
    println!(
        "\"beyond noise\": the dev loss differs from the next candidate's by more than the larger \
         seed-to-seed spread of the two (the last: from the one above)"
    );
}
