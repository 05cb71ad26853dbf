//! `turnlake demo`: the main job on a built-in example. Synthesizes a small
//! corpus, ingests all three formats, and runs every pipeline step there is,
//! printing what a user wants to see at each.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::engine;
use crate::lake::Lake;
use crate::output::{write_batches, Format};
use crate::pipeline::ingest::{ingest, InputKind};
use crate::synth::{self, Params, Sizes};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Working folder for the corpus and the lake (default: a fresh folder under the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("turnlake-demo-{}", std::process::id()))
    });
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let corpus = dir.join("corpus");
    let sizes = Sizes {
        eval_runs: 3,
        samples_per_run: 20,
        mini_coder: 300,
        mswea: 12,
    };
    println!(
        "== synth: a small corpus in the real formats under {}",
        corpus.display()
    );
    let truth = synth::generate(
        &corpus,
        args.seed,
        sizes,
        &Params::default_params(),
        &|_| {},
    )?;
    std::fs::write(
        corpus.join("truth.json"),
        serde_json::to_vec_pretty(&truth)?,
    )?;
    let c = &truth.counts;
    println!(
        "   {} eval runs / {} samples / {} sides, {} mini-coder, {} mswea trajectories",
        c.eval_runs, c.samples, c.sides, c.mini_coder_trajectories, c.mswea_trajectories
    );

    let lake = Lake::open(
        dir.join("lake")
            .to_str()
            .context("demo folder is not UTF-8")?,
    )?;
    for (label, kind, path) in [
        (
            "albedo",
            InputKind::Albedo { verify: true },
            synth::albedo_dir(&corpus),
        ),
        (
            "mini-coder",
            InputKind::MiniCoder,
            synth::mini_coder_dir(&corpus),
        ),
        ("mswea", InputKind::Mswea, synth::mswea_dir(&corpus)),
    ] {
        println!("\n== ingest {label}");
        let report = ingest(&lake, kind, vec![path]).await?;
        super::ingest::print_report(&report);
    }

    println!("\n== tables");
    super::tables::run(lake.root().as_str()).await?;

    let ctx = engine::session(&lake).await?;
    println!("\n== sql: turns by command kind");
    let q = "SELECT cmd_kind, count(*) AS turns, round(avg(CAST(obs_failed AS INT)), 3) AS failed_share \
             FROM turns GROUP BY 1 ORDER BY 2 DESC";
    println!("   {q}");
    write_batches(
        std::io::stdout(),
        &engine::run_sql(&ctx, q, "demo query").await?,
        Format::Table,
    )?;

    println!(
        "\nlake left at {} (try: turnlake --lake {} sql \"SELECT * FROM trajectories LIMIT 5\")",
        lake.root(),
        dir.join("lake").display()
    );
    Ok(ExitCode::SUCCESS)
}
