//! The training sink: a small Qwen2-architecture causal LM trained with tch
//! on a built mix, loss only on `train: true` turns, held-out loss per mix;
//! and the mixture sweep that trains one proxy model per candidate share
//! vector and ranks them by held-out loss on a target set.

pub mod data;
pub mod model;
pub mod optim;
pub mod run;
pub mod sweep;

use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use data::Tokenized;
use turnlake::columns;
use turnlake::engine;
use turnlake::export::{sft_rows, ExportError};
use turnlake::lake::Lake;
use turnlake::pipeline::select::Quality;
use turnlake::tokenize::template::Template;
use turnlake::tokenize::TextEncoder;

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{0}")]
    Data(String),
    #[error(transparent)]
    Lake(#[from] turnlake::lake::LakeError),
    #[error(transparent)]
    Engine(#[from] turnlake::engine::EngineError),
    #[error(transparent)]
    Export(#[from] turnlake::export::ExportError),
    #[error(transparent)]
    Pipeline(#[from] turnlake::pipeline::PipelineError),
    #[error("libtorch")]
    Torch(#[from] tch::TchError),
    #[error("writing the run")]
    Io(#[from] std::io::Error),
}

/// A mix's rows, tokenized, with where they came from.
pub struct Prepared {
    pub vocab_size: i64,
    /// The token between packed rows (`<|endoftext|>`).
    pub separator: i64,
    pub rows: Vec<Tokenized>,
    /// Each row's quality score (sql/row_quality.sql), in `rows`' order,
    /// when asked for (all 0 otherwise).
    pub quality: Vec<f64>,
    /// The lake commit and table versions the rows were read at.
    pub lake: serde_json::Value,
}

/// Read and tokenize the rows of `table` as validate renders them (only
/// those of `mixes` when given), with each row's quality score under
/// `quality` when given. Rows stream in chunks and are tokenized in
/// parallel off the runtime's threads, so only their tokens are held.
pub async fn prepare(
    lake: &Lake,
    table: &str,
    (enc, template): (Arc<dyn TextEncoder>, Template),
    quality: Option<&Quality>,
    mixes: Option<BTreeSet<String>>,
) -> Result<Prepared, TrainError> {
    let view = lake.view().await?;
    let ctx = engine::session(lake).await?;
    // Each row's held-out unit: its trajectory's sample (Albedo) or instance.
    let query = |e| turnlake::engine::EngineError::Query {
        context: format!("reading the rows of {table}"),
        source: Box::new(e),
    };
    let row_traj = ctx
        .table(table)
        .await
        .and_then(|t| t.select_columns(&["row_id", "traj_id"]))
        .map_err(query)?
        .collect()
        .await
        .map_err(query)?;
    let trajectories = engine::run_sql(
        &ctx,
        "SELECT traj_id, coalesce(sample_id, instance_id, traj_id) AS unit FROM trajectories",
        "the rows' samples and instances",
    )
    .await?;
    let unit_of_traj: BTreeMap<String, String> = columns::strings(&trajectories, "traj_id")
        .into_iter()
        .zip(columns::strings(&trajectories, "unit"))
        .filter_map(|(t, u)| Some((t?, u?)))
        .collect();
    let unit_of: BTreeMap<String, String> = columns::strings(&row_traj, "row_id")
        .into_iter()
        .zip(columns::strings(&row_traj, "traj_id"))
        .filter_map(|(r, t)| Some((r?, unit_of_traj.get(&t?)?.clone())))
        .collect();
    let encoder = Arc::clone(&enc);
    let rows = sft_rows::stream_rows(
        lake,
        table,
        Vec::new(),
        move |out: &mut Vec<(String, Tokenized)>, chunk| {
            let wanted = |row: &&serde_json::Value| {
                mixes
                    .as_ref()
                    .is_none_or(|m| m.contains(row["mix"].as_str().unwrap_or("")))
            };
            let chunk: Vec<&serde_json::Value> = chunk.iter().filter(wanted).collect();
            let tokenized = chunk
                .par_iter()
                .map(|row| {
                    let id = row["row_id"].as_str().unwrap_or("").to_string();
                    let unit = unit_of.get(&id).cloned().unwrap_or_else(|| id.clone());
                    data::tokenize(encoder.as_ref(), &template, row, unit)
                        .map(|t| (id.clone(), t))
                        .map_err(|e| ExportError::Refused(format!("row {id}: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.extend(tokenized);
            Ok(())
        },
    )
    .await?;
    let scores = match quality {
        Some(q) => turnlake::pipeline::mix::row_qualities(&ctx, table, q).await?,
        None => BTreeMap::new(),
    };
    let quality = rows
        .iter()
        .map(|(id, _)| scores.get(id).copied().unwrap_or(0.0))
        .collect();
    Ok(Prepared {
        vocab_size: enc.vocab_size() as i64,
        quality,
        separator: enc.special_id("<|endoftext|>").unwrap_or(0) as i64,
        rows: rows.into_iter().map(|(_, t)| t).collect(),
        lake: serde_json::json!({
            "root": lake.root().to_string(),
            "lake_commit": view.commit.as_ref().map(|c| c.version),
            "tables": view.tables,
            "table": table,
        }),
    })
}

impl Prepared {
    /// Training windows from rows not held out, and held-out windows per mix.
    pub fn dataset(&self, seq_len: usize, seed: u64, heldout_share: f64) -> run::Dataset {
        let held = |r: &&Tokenized| data::held_out(&r.unit, seed, heldout_share);
        let train = data::pack(
            self.rows.iter().filter(|r| !held(r)),
            seq_len,
            self.separator,
        );
        let mut by_mix: BTreeMap<String, Vec<&Tokenized>> = BTreeMap::new();
        for r in self.rows.iter().filter(held) {
            by_mix.entry(r.mix.clone()).or_default().push(r);
        }
        run::Dataset {
            vocab_size: self.vocab_size,
            train,
            heldout: by_mix
                .into_iter()
                .map(|(mix, rows)| (mix, data::pack(rows, seq_len, self.separator)))
                .filter(|(_, w)| !w.is_empty())
                .collect(),
        }
    }
}
