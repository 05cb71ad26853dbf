//! `turnlake tokenizer train --out FILE`: the small BPE the project ships.
//! `turnlake tokenizer render --model DIR [FILE]`: conversations (JSON lines
//! of `{"messages": [...], "tools": [...]}`) as a model's template renders
//! and its tokenizer encodes them, with each assistant turn's label span.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::synth::{self, Params};
use crate::tokenize::model::Model;
use crate::tokenize::template::Template;
use crate::tokenize::train::train_bpe;
use crate::tokenize::TextEncoder;

#[derive(Debug, Subcommand)]
pub enum TokenizerCommand {
    /// Train a byte-level BPE tokenizer.json on synthetic agent text.
    Train(TrainArgs),
    /// Render and tokenize conversations with a model folder's chat template
    /// and tokenizer: one JSON line each, with its text, token ids and the
    /// token span of each assistant turn.
    Render(RenderArgs),
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A Hugging Face model folder (see `validate --model`).
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// JSON lines of conversations (default: standard input).
    pub file: Option<PathBuf>,
    /// Render every assistant turn's reasoning (the template's preserve_thinking).
    #[arg(long)]
    pub preserve_thinking: bool,
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
    match cmd {
        TokenizerCommand::Train(args) => train(args),
        TokenizerCommand::Render(args) => render(args),
    }
}

fn render(args: RenderArgs) -> anyhow::Result<ExitCode> {
    use std::io::{BufRead, Write};
    let model = Model::open(&args.model)?;
    let template = Template::Model {
        template: Box::new(model.template),
        preserve_thinking: args.preserve_thinking,
    };
    let (input, origin): (Box<dyn BufRead>, String) = match &args.file {
        Some(path) => (
            Box::new(std::io::BufReader::new(
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
            )),
            path.display().to_string(),
        ),
        None => (Box::new(std::io::stdin().lock()), "standard input".into()),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("reading {origin}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{origin}, line {}", i + 1);
        let row: serde_json::Value = serde_json::from_str(&line).with_context(at)?;
        let rendered = template
            .render_row(&row)
            .map_err(anyhow::Error::msg)
            .with_context(at)?;
        let encoded = model
            .encoder
            .encode_with_offsets(&rendered.text)
            .map_err(anyhow::Error::msg)
            .with_context(at)?;
        // Each assistant turn's tokens: those inside its byte span.
        let labels: Vec<(usize, usize)> = rendered
            .spans
            .iter()
            .zip(row["messages"].as_array().into_iter().flatten())
            .filter(|(_, m)| m["role"] == "assistant")
            .map(|(&(a, b), _)| {
                let inside = |&(s, e): &(usize, usize)| s >= a && e <= b && e > s;
                let first = encoded.offsets.iter().position(inside).unwrap_or(0);
                let count = encoded.offsets.iter().filter(|o| inside(o)).count();
                (first, first + count)
            })
            .collect();
        let shown = serde_json::json!({
            "text": rendered.text,
            "ids": encoded.ids,
            "assistant_tokens": labels,
        });
        writeln!(out, "{shown}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn train(args: TrainArgs) -> anyhow::Result<ExitCode> {
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
