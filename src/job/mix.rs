//! `mix` as a job: with `[mix] unit = "tokens"`, each product row's
//! trainable tokens are counted first (its rows streamed through the SFT
//! export's assembly and tokenized as `train` and `mix sweep` tokenize them),
//! then the mix step composes `sft_mix` from them.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use crate::digest::sha256_hex;
use crate::export::sft_rows;
use crate::lake::Lake;
use crate::pipeline::mix::{self, MixReport, TokenCounts};
use crate::pipeline::select::{MixConfig, MixUnit, PRODUCTS};
use crate::tokenize::hf::HfEncoder;
use crate::tokenize::labels;
use crate::tokenize::model::Model;
use crate::tokenize::template::{ChatTemplate, Template, DEFAULT_TEMPLATE};
use crate::tokenize::{TextEncoder, DEFAULT_TOKENIZER};

/// The tokenizer and template that count trainable tokens: a model
/// folder's, else turnlake's own with ChatML; and their digest.
pub struct Counter {
    pub encoder: Box<dyn TextEncoder>,
    pub template: Template,
    pub digest: String,
}

impl Counter {
    pub fn open(model: Option<&Path>) -> anyhow::Result<Counter> {
        Ok(match model {
            Some(dir) => {
                let m = Model::open(dir)?;
                Counter {
                    digest: m.sha256,
                    encoder: Box::new(m.encoder),
                    template: Template::Model {
                        template: Box::new(m.template),
                        preserve_thinking: false,
                    },
                }
            }
            None => {
                let mut both = DEFAULT_TOKENIZER.to_vec();
                both.extend_from_slice(DEFAULT_TEMPLATE.as_bytes());
                Counter {
                    digest: sha256_hex(&both),
                    encoder: Box::new(
                        HfEncoder::from_bytes(DEFAULT_TOKENIZER).map_err(anyhow::Error::msg)?,
                    ),
                    template: Template::Toml(ChatTemplate::chatml()),
                }
            }
        })
    }
}

/// Each product row's trainable tokens under `counter`.
pub async fn count_tokens(lake: &Lake, counter: Counter) -> anyhow::Result<TokenCounts> {
    let view = lake.view().await?;
    let counter = Arc::new(counter);
    let mut rows = Vec::new();
    for (_, table) in PRODUCTS {
        if !view.tables.contains_key(table) {
            continue;
        }
        let c = Arc::clone(&counter);
        let counted = sft_rows::stream_rows(lake, table, Vec::new(), move |out, chunk| {
            for row in chunk {
                let id = row["row_id"].as_str().unwrap_or("").to_string();
                let t = labels::tokenize(c.encoder.as_ref(), &c.template, &row, String::new())
                    .map_err(|e| crate::export::ExportError::Refused(format!("row {id}: {e}")))?;
                let mix = row["mix"].as_str().unwrap_or("").to_string();
                out.push((mix, id, t.trainable() as i64));
            }
            Ok(())
        })
        .await
        .with_context(|| format!("counting the trainable tokens of {table}"))?;
        rows.extend(counted);
    }
    Ok(TokenCounts {
        rows,
        tokenizer: counter.digest.clone(),
    })
}

/// Compose `sft_mix` as `config` says, counting trainable tokens with the
/// tokenizer `model` names (turnlake's own without one) when its shares
/// are token quotas.
pub async fn compose(
    lake: &Lake,
    config: &MixConfig,
    model: Option<&Path>,
) -> anyhow::Result<MixReport> {
    let tokens = match config.unit {
        MixUnit::Rows => None,
        MixUnit::Tokens => Some(count_tokens(lake, Counter::open(model)?).await?),
    };
    Ok(mix::build(lake, config, tokens.as_ref()).await?)
}
