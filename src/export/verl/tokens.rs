//! Prompt and response lengths in tokens for `summary.json`, under the
//! tokenizer and template a trainer will use (`--model`, else turnlake's
//! shipped BPE with ChatML): the prompt is a trajectory's messages before
//! its first turn, the response the rest up to its last turn.

use std::path::Path;

use serde::Serialize;

use super::Message;
use crate::export::ExportError;
use crate::tokenize::hf::HfEncoder;
use crate::tokenize::model::Model;
use crate::tokenize::template::{ChatTemplate, Template};
use crate::tokenize::validate::percentile;
use crate::tokenize::{TextEncoder, DEFAULT_TOKENIZER};

/// Token lengths over every exported trajectory.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TokenLengths {
    pub tokenizer: String,
    pub prompt: Percentiles,
    pub response: Percentiles,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: usize,
    pub p90: usize,
    pub p99: usize,
    pub max: usize,
}

impl Percentiles {
    fn of(mut values: Vec<usize>) -> Percentiles {
        values.sort_unstable();
        Percentiles {
            p50: percentile(&values, 0.5),
            p90: percentile(&values, 0.9),
            p99: percentile(&values, 0.99),
            max: values.last().copied().unwrap_or(0),
        }
    }
}

pub(super) struct TokenCounter {
    encoder: Box<dyn TextEncoder>,
    template: Template,
    tokenizer: String,
    prompts: Vec<usize>,
    responses: Vec<usize>,
}

impl TokenCounter {
    pub(super) fn new(model: Option<&Path>) -> Result<TokenCounter, ExportError> {
        let refused = |e: String| ExportError::Refused(e);
        let (encoder, template, tokenizer): (Box<dyn TextEncoder>, _, _) = match model {
            Some(dir) => {
                let m = Model::open(dir).map_err(|e| refused(e.to_string()))?;
                let template = Template::Model {
                    template: Box::new(m.template),
                    preserve_thinking: false,
                };
                (
                    Box::new(m.encoder),
                    template,
                    format!("the model folder {}", dir.display()),
                )
            }
            None => (
                Box::new(HfEncoder::from_bytes(DEFAULT_TOKENIZER).map_err(refused)?),
                Template::Toml(ChatTemplate::chatml()),
                "turnlake's shipped BPE with ChatML".to_string(),
            ),
        };
        Ok(TokenCounter {
            encoder,
            template,
            tokenizer,
            prompts: Vec::new(),
            responses: Vec::new(),
        })
    }

    /// Count trajectory `id`: `prompt` and `whole` (the prompt and the turns).
    pub(super) fn count(
        &mut self,
        id: &str,
        prompt: &[&Message],
        whole: &[&Message],
        tools: Option<&serde_json::Value>,
    ) -> Result<(), ExportError> {
        let prompt = self.tokens(id, prompt, tools)?;
        let whole = self.tokens(id, whole, tools)?;
        self.prompts.push(prompt);
        self.responses.push(whole.saturating_sub(prompt));
        Ok(())
    }

    fn tokens(
        &self,
        id: &str,
        messages: &[&Message],
        tools: Option<&serde_json::Value>,
    ) -> Result<usize, ExportError> {
        let mut row = serde_json::json!({ "messages": messages });
        if let Some(tools) = tools {
            row["tools"] = tools.clone();
        }
        let fail = |e: String| ExportError::Integrity {
            traj_id: id.to_string(),
            reason: format!("counting tokens: {e}"),
        };
        let text = self.template.render_row(&row).map_err(fail)?.text;
        Ok(self
            .encoder
            .encode_with_offsets(&text)
            .map_err(fail)?
            .ids
            .len())
    }

    pub(super) fn lengths(self) -> TokenLengths {
        TokenLengths {
            tokenizer: self.tokenizer,
            prompt: Percentiles::of(self.prompts),
            response: Percentiles::of(self.responses),
        }
    }
}
