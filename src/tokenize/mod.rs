//! Tokenizers and the chat template: render a row's messages into token ids
//! the way a trainer does, with each train turn's label span, and check that
//! every span decodes back to exactly the assistant content.
//!
//! Content is always encoded as plain text: a `<|im_end|>` inside a bash
//! heredoc stays text; only the template's own special tokens become special ids.

pub mod hf;
pub mod template;
pub mod tiktoken;
pub mod train;
pub mod validate;

/// What validation needs from a tokenizer.
pub trait TextEncoder: Send + Sync {
    /// Ids of `text`, never matching special tokens inside it.
    fn encode_text(&self, text: &str) -> Result<Vec<u32>, String>;
    /// The id of a special token of the template.
    fn special_id(&self, token: &str) -> Option<u32>;
    /// The text of `ids`, special tokens included.
    fn decode(&self, ids: &[u32]) -> Result<String, String>;
}

/// The special tokens a ChatML template uses.
pub const CHATML_SPECIALS: [&str; 3] = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"];
/// Qwen's thinking markers: ordinary added tokens, not specials.
pub const THINK_TOKENS: [&str; 2] = ["<think>", "</think>"];

/// The tokenizer turnlake trains and ships (`turnlake tokenizer train`).
pub const DEFAULT_TOKENIZER: &[u8] = include_bytes!("../../data/tokenizer.json");
