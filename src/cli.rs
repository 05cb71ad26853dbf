//! Command-line definitions: clap arguments turned into calls of `cmd::*`.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

use crate::cmd;
use crate::cmd::LakeArg;
use crate::limits::{Limits, MAX_JSON_DEPTH};

#[derive(Debug, Parser)]
#[command(
    name = "turnlake",
    version,
    about = "Batch processor over a columnar lake of coding-agent trajectories"
)]
pub struct Cli {
    /// Lake root: a folder, a file:// URL or s3://bucket/prefix (credentials, region and endpoint from the AWS_* environment) [default: ./lake].
    #[arg(long, global = true, env = "TURNLAKE_LAKE")]
    pub lake: Option<String>,
    /// Read the lake as of a snapshot NAME, a lake commit VERSION or an RFC 3339
    /// TIMESTAMP (the last commit at or before it). Reading commands only.
    #[arg(long, global = true, value_name = "NAME|VERSION|TIMESTAMP")]
    pub as_of: Option<String>,
    /// Run the command's SQL on the Ballista cluster whose scheduler is at
    /// df://HOST:PORT (see `turnlake cluster`); writes stay on this machine.
    #[arg(long, global = true, env = "TURNLAKE_CLUSTER", value_name = "URL")]
    pub cluster: Option<String>,
    /// Bytes one JSON record may hold (a JSONL line, a *.traj.json, a
    /// verdict.json); a longer one is rejected with its reason.
    #[arg(long, global = true, env = "TURNLAKE_MAX_RECORD_BYTES", value_name = "BYTES",
          default_value_t = Limits::default().record_bytes, help_heading = "Input limits")]
    pub max_record_bytes: u64,
    /// Nesting depth one JSON record may reach (1 to 128).
    #[arg(long, global = true, env = "TURNLAKE_MAX_JSON_DEPTH", value_name = "LEVELS",
          default_value_t = Limits::default().json_depth as u64,
          value_parser = clap::value_parser!(u64).range(1..=MAX_JSON_DEPTH as u64),
          help_heading = "Input limits")]
    pub max_json_depth: u64,
    /// Messages one trajectory may hold.
    #[arg(long, global = true, env = "TURNLAKE_MAX_MESSAGES", value_name = "N",
          default_value_t = Limits::default().messages, help_heading = "Input limits")]
    pub max_messages: usize,
    /// Follow symlinks to folders when walking input folders (they are
    /// skipped with a warning otherwise; a loop is skipped either way).
    #[arg(long, global = true, help_heading = "Input limits")]
    pub follow: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fetch the judge artifacts of the Albedo dashboard's eval runs, resumably, into one folder per run.
    Harvest(cmd::harvest::HarvestArgs),
    /// Read raw inputs into the lake's tables.
    Ingest {
        #[command(subcommand)]
        source: cmd::ingest::IngestSource,
    },
    /// Run SQL over every table, with the turn-rule UDFs.
    Sql(cmd::sql::SqlArgs),
    /// List the lake's tables with rows, version and partition columns.
    Tables,
    /// Write a synthetic corpus in the real input formats, with its planted truth.
    Synth(cmd::synth::SynthArgs),
    /// Build per-turn credit from the judge's citations (credit_citations, turn_credit, side_credit).
    Credit(cmd::credit::CreditArgs),
    /// Report where credit lives: by command kind, turn index, after failures, by tag.
    Stats(cmd::stats::StatsArgs),
    /// Build the selection products (sft_credit, escape_duel, escape_mini, finish_mini) through the format gate.
    Select(cmd::select::SelectArgs),
    /// Compose sft_mix from the products and report its composition.
    Mix(cmd::mix::MixArgs),
    /// Write training files.
    Export {
        #[command(subcommand)]
        what: cmd::export::ExportCommand,
    },
    /// One trajectory turn by turn: kinds, observations, repeats, credit, citing questions, product rows.
    Show(cmd::show::ShowArgs),
    /// A read-only web app over the lake: trajectories with their credit, the lake's tables and commits.
    Serve(cmd::serve::ServeArgs),
    /// The judge-free local scorer: features, fit, held-out evaluation, turn labels, scoring your own runs.
    Scorer {
        #[command(subcommand)]
        what: cmd::scorer::ScorerCommand,
    },
    /// Train a small Qwen2-architecture causal LM on a built mix (loss on train turns only).
    Train(cmd::train::TrainArgs),
    /// Check that every train turn tokenizes and its label span decodes back exactly.
    Validate(cmd::validate::ValidateArgs),
    /// Tokenizer tools.
    Tokenizer {
        #[command(subcommand)]
        what: cmd::tokenizer::TokenizerCommand,
    },
    /// The whole pipeline as one batch job from a pipeline file; steps whose inputs, parameters and SQL are unchanged are skipped.
    Build(cmd::build::BuildArgs),
    /// Reproduce an export from the lake commit its manifest records and check every file's sha256.
    Rebuild(cmd::export::RebuildArgs),
    /// Remove the writer lock of a writer that died on another machine (one on this machine is taken over by itself).
    Unlock,
    /// Delete data files that no named snapshot and no latest lake commit reads.
    Vacuum(cmd::maintain::VacuumArgs),
    /// Compact the small files ingest flushes leave into larger ones.
    Optimize,
    /// Name lake commits, and show or compare what they hold.
    Snapshot {
        #[command(subcommand)]
        what: cmd::snapshot::SnapshotCommand,
    },
    /// Run the whole pipeline on a small built-in example.
    Demo(cmd::demo::DemoArgs),
    /// Serve a Ballista cluster that runs turnlake's SQL: a scheduler, and executors that register with it.
    Cluster {
        #[command(subcommand)]
        what: cmd::cluster::ClusterCommand,
    },
}

/// Parse the process arguments and run the command.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    crate::limits::set(Limits {
        record_bytes: cli.max_record_bytes,
        json_depth: cli.max_json_depth as usize,
        messages: cli.max_messages,
        follow: cli.follow,
    });
    bound_lake_write_queue();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(dispatch(cli))
}

/// Batches delta-rs lets wait between a query and its Parquet writer
/// (unless `DELTARS_WRITER_BATCH_CHANNEL_SIZE` says otherwise; delta-rs
/// reads it once, so it is set before any thread starts). Its default, 10,
/// fills whenever the writer (dictionaries, zstd) is slower than the query
/// that feeds it, which a large write is and a small one never gets to, so
/// a large write's memory grew with the queue (figures in bench/README.md).
/// Two still keep the query one batch ahead of the writer.
const LAKE_WRITE_QUEUE_BATCHES: &str = "2";

fn bound_lake_write_queue() {
    if std::env::var_os("DELTARS_WRITER_BATCH_CHANNEL_SIZE").is_none() {
        std::env::set_var(
            "DELTARS_WRITER_BATCH_CHANNEL_SIZE",
            LAKE_WRITE_QUEUE_BATCHES,
        );
    }
}

impl Cli {
    /// The lake the global options name.
    pub fn lake_arg(&self) -> LakeArg {
        LakeArg {
            root: self.lake.clone().unwrap_or_else(|| "./lake".into()),
            as_of: self.as_of.clone(),
            cluster: self.cluster.clone(),
        }
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let lake = cli.lake_arg();
    match cli.command {
        Command::Harvest(args) => cmd::harvest::run(args).await,
        Command::Ingest { source } => cmd::ingest::run(&lake, source).await,
        Command::Sql(args) => cmd::sql::run(&lake, args).await,
        Command::Tables => cmd::tables::run(&lake).await,
        Command::Synth(args) => cmd::synth::run(args),
        Command::Credit(args) => cmd::credit::run(&lake, args).await,
        Command::Stats(args) => cmd::stats::run(&lake, args).await,
        Command::Select(args) => cmd::select::run(&lake, args).await,
        Command::Mix(args) => cmd::mix::run(&lake, args).await,
        Command::Export { what } => cmd::export::run(&lake, what).await,
        Command::Show(args) => cmd::show::run(&lake, args).await,
        Command::Serve(args) => cmd::serve::run(&lake, args).await,
        Command::Snapshot { what } => cmd::snapshot::run(&lake, what).await,
        // Only a lake the user named: otherwise the manifest's own.
        Command::Rebuild(args) => cmd::export::rebuild(args, cli.lake.as_deref()).await,
        Command::Build(args) => cmd::build::run(&lake, args).await,
        Command::Vacuum(args) => cmd::maintain::vacuum(&lake, args).await,
        Command::Optimize => cmd::maintain::optimize(&lake).await,
        Command::Unlock => cmd::snapshot::unlock(&lake).await,
        Command::Scorer { what } => cmd::scorer::run(&lake, what).await,
        Command::Train(_) => cmd::train::delegate(),
        Command::Validate(args) => cmd::validate::run(&lake, args).await,
        Command::Tokenizer { what } => cmd::tokenizer::run(what),
        Command::Demo(args) => cmd::demo::run(args).await,
        Command::Cluster { what } => cmd::cluster::run(what).await,
    }
}
