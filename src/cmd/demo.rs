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
use crate::pipeline::{credit, stats};
use crate::sinks::Sink;
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
    // Only ever clear what an earlier demo wrote here.
    let ours = [
        "corpus",
        "lake",
        "plots",
        "sft_mix.jsonl",
        "sft_mix.jsonl.manifest.json",
        "pipeline.toml",
        "my-runs",
        "verl",
        "runs",
        "train.toml",
    ];
    if dir.exists() {
        let foreign = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok())
            .any(|e| !ours.iter().any(|o| e.file_name() == *o));
        anyhow::ensure!(
            !foreign,
            "{} holds files the demo did not write; give an empty or new --dir",
            dir.display()
        );
        for o in ours {
            let p = dir.join(o);
            if p.is_dir() {
                std::fs::remove_dir_all(&p).with_context(|| format!("clearing {}", p.display()))?;
            } else if p.exists() {
                std::fs::remove_file(&p).with_context(|| format!("clearing {}", p.display()))?;
            }
        }
    }
    let corpus = dir.join("corpus");
    let sizes = Sizes {
        eval_runs: 8,
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
        let report = ingest(&lake, kind, vec![path.into()], Default::default()).await?;
        super::ingest::print_report(&report);
    }

    println!("\n== tables");
    super::tables::run(&crate::cmd::LakeArg {
        root: lake.root().to_string(),
        as_of: None,
        cluster: None,
    })
    .await?;

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

    println!("\n== credit: per-turn credit from the judge's citations");
    let summary = credit::build(&lake, &credit::CreditConfig::default_config()).await?;
    println!(
        "   {} citations ({} invalid, kept with their reason), {} scored turns, {} sides",
        summary.citations, summary.invalid_citations, summary.turns, summary.sides
    );

    println!("\n== stats: where credit lives");
    let mut report = stats::report(&lake).await?;
    super::stats::plant_truth(&mut report, &serde_json::to_value(&truth)?);
    super::stats::render(
        std::io::stdout().lock(),
        &report,
        super::stats::ReportFormat::Table,
    )?;
    super::stats::write_plots(&report, &dir.join("plots"))?;

    println!("\n== select: products through the format gate");
    let select_config = crate::pipeline::select::SelectConfig::default_config();
    let summary = crate::pipeline::select::build(&lake, &select_config).await?;
    super::select::print_summary(&summary);

    println!("\n== mix: sft_mix keeps every product row");
    let report = crate::job::mix::compose(&lake, &select_config.mix, None).await?;
    super::mix::print_report(&report);

    let escape = engine::run_sql(
        &engine::session(&lake).await?,
        "SELECT traj_id FROM escape_duel ORDER BY row_id LIMIT 1",
        "demo: an escape_duel trajectory",
    )
    .await?;
    if let Some(traj_id) = crate::columns::strings(&escape, "traj_id")
        .into_iter()
        .flatten()
        .next()
    {
        println!("\n== show: the trajectory of the first escape_duel row");
        let view =
            crate::pipeline::show::show(&lake, &crate::pipeline::show::Which::TrajId(traj_id))
                .await?;
        println!(
            "{}",
            super::show::render(&view, std::io::IsTerminal::is_terminal(&std::io::stdout()))
        );
    }

    println!("\n== validate: every train turn through the shipped tokenizer and ChatML");
    let options = crate::job::validate::ValidateOptions::defaults(32768);
    let validated = crate::job::validate::validate_table(&lake, &options).await?;
    super::validate::print_report(&validated.report, &crate::job::validate::describe(&options));

    println!("\n== export sft");
    let out = dir.join("sft_mix.jsonl");
    let (s, manifest, manifest_path) = crate::job::export::export_sft(
        &lake,
        "sft_mix",
        crate::export::sft::SftFormat::Jsonl,
        None,
        &out.clone().into(),
    )
    .await?;
    println!(
        "   {} rows, {} messages, {} train turns -> {} (lake commit {}; `turnlake rebuild {}` reproduces it)",
        s.rows,
        s.messages,
        s.train_turns,
        out.display(),
        manifest.lake_commit,
        manifest_path
    );
    let snap =
        crate::lake::snapshot::create(&lake, "demo", Some("the demo's export".into())).await?;
    println!(
        "   snapshot {} names lake commit {} (read it later with --as-of {})",
        snap.name, snap.lake_version, snap.name
    );

    let mut skipped = Vec::new();
    if Sink::Train.built() {
        train(&lake, &dir).await?;
    } else {
        skipped.push(Sink::Train);
    }
    if Sink::Scorer.built() {
        scorer(&lake, &dir).await?;
    } else {
        skipped.push(Sink::Scorer);
    }
    verl(&lake, &dir).await?;

    println!(
        "\n== build: the same pipeline as one batch job (pipeline.toml); every step is current"
    );
    let pipeline = dir.join("pipeline.toml");
    std::fs::write(
        &pipeline,
        "[inputs]\nalbedo = [\"corpus/albedo\"]\nmini_coder = [\"corpus/mini-coder\"]\nmswea = [\"corpus/mswea\"]\n\n[outputs]\nsft = \"sft_mix.jsonl\"\n",
    )?;
    super::build::run(
        &crate::cmd::LakeArg {
            root: lake.root().to_string(),
            as_of: None,
            cluster: None,
        },
        super::build::BuildArgs {
            pipeline: pipeline.display().to_string(),
        },
    )
    .await?;

    println!(
        "\nlake left at {} (try: turnlake --lake {} sql \"SELECT * FROM trajectories LIMIT 5\")",
        lake.root(),
        dir.join("lake").display()
    );
    println!(
        "look at what it built in a browser: turnlake --lake {} serve",
        dir.join("lake").display()
    );
    for sink in skipped {
        println!(
            "skipped {}: this build left out the `{}` feature (cargo build --features {})",
            sink.feature(),
            sink.feature(),
            sink.feature()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The local scorer on the demo corpus: features, fit, held-out report,
/// turn labels, and a "user run" (a held-out side written back out as a
/// mini-swe-agent trajectory) scored against its sample's checklist.
async fn scorer(lake: &Lake, dir: &std::path::Path) -> anyhow::Result<()> {
    use crate::scorer::{features, jobs, model::FitParams, score, training::Shares, turns};
    println!("\n== scorer features: one row per (judged side, checklist question)");
    let s = features::build(lake).await?;
    println!("   {} rows over {} sides", s.rows, s.sides);
    println!("\n== scorer fit: gradient-boosted trees, split by eval run");
    let fitted = jobs::fit(lake, &FitParams::default(), Shares::default()).await?;
    for (meta, _) in [&fitted.checklist, &fitted.turn_credit] {
        println!(
            "   {}: {} rounds on {} train runs; {} test runs held out",
            meta.name,
            meta.rounds,
            meta.split.train.len(),
            meta.split.test.len()
        );
    }
    println!("\n== scorer eval: held-out calibration");
    let (checklist, turn) = jobs::evaluate(lake).await?;
    super::scorer::print_checklist(&checklist);
    super::scorer::print_turns(&turn);
    println!("\n== scorer label: turn-credit labels for runs no judge saw");
    let labelled = turns::label(lake).await?;
    println!(
        "   {} turns labelled, {} predicted to earn credit",
        labelled.turns, labelled.earning
    );
    println!("\n== scorer score: a run of your own on a known sample");
    let held_out = fitted
        .checklist
        .0
        .split
        .test
        .first()
        .cloned()
        .unwrap_or_default();
    let runs = dir.join("my-runs");
    let file = score::write_side_as_run(lake, &held_out, "challenger", &runs).await?;
    let summary = score::score(lake, &[file.display().to_string()], None).await?;
    for r in &summary.runs {
        println!(
            "   {} on sample {} (matched by {}): predicted score {:.3}, king judged {}",
            r.file,
            r.sample_id,
            r.matched_by,
            r.predicted_score,
            r.king_score.map_or("-".into(), |k| format!("{k:.3}"))
        );
    }
    for n in &summary.notes {
        println!("   note: {n}");
    }
    Ok(())
}

/// The verl export: every source when the turn-credit model's held-out kappa
/// clears the threshold, else (as the contract says) the refusal, then the
/// judged Albedo sides alone.
async fn verl(lake: &Lake, dir: &std::path::Path) -> anyhow::Result<()> {
    use crate::export::verl::VerlOptions;
    println!("\n== export verl: trajectories with per-turn and per-trajectory rewards");
    let out: crate::storage::Location = dir.join("verl").into();
    let mut opts = VerlOptions {
        sources: vec!["albedo".into(), "mini_coder".into(), "mswea".into()],
        min_kappa: 0.4,
        alpha: 0.9,
        model: None,
    };
    let (summary, manifest, at) = match crate::job::export::export_verl(lake, &opts, &out).await {
        Ok(done) => done,
        Err(refused) => {
            println!("   refused: {refused:#}");
            println!(
                "   exporting the judged Albedo sides alone (judge labels need no calibration)"
            );
            opts.sources = vec!["albedo".into()];
            crate::job::export::export_verl(lake, &opts, &out).await?
        }
    };
    println!(
        "   {} (lake commit {}; `turnlake rebuild {at}` reproduces it)",
        out, manifest.lake_commit
    );
    super::export::print_verl_summary(&summary);
    Ok(())
}

/// A tiny Qwen2-architecture model trained for a few steps on the mix, by
/// `turnlake train` (in the turnlake-train binary).
async fn train(lake: &Lake, dir: &std::path::Path) -> anyhow::Result<()> {
    println!("\n== train: a tiny model on sft_mix for a few steps (loss on train turns only)");
    let mut cfg: toml::Table = toml::from_str(super::train::DEFAULT_CONFIG)?;
    for (key, value) in [("steps", 8), ("eval_every", 4), ("checkpoint_every", 4)] {
        cfg.insert(key.into(), toml::Value::Integer(value));
    }
    let config = dir.join("train.toml");
    std::fs::write(&config, toml::to_string(&cfg)?)?;
    let status = super::train::trainer()?
        .arg("--lake")
        .arg(lake.root().as_str())
        .arg("train")
        .args(["--mix", "sft_mix", "--out"])
        .arg(dir.join("runs/demo"))
        .arg("--config")
        .arg(&config)
        .status()
        .context("running turnlake-train")?;
    anyhow::ensure!(status.success(), "turnlake train failed ({status})");
    Ok(())
}
