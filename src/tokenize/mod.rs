//! Tokenizers and the chat template: render a row's messages into token ids
//! the way a trainer does, with each train turn's label span, and check that
//! every span decodes back to exactly the assistant content.
//!
//! Two ways to tokenize a row. `whole` (the default) renders the conversation
//! with the template and tokenizes it as one string, the way chat-template
//! trainers do: special-token text inside content becomes a special token, and
//! a token may merge across a message boundary; both are found and reported.
//! `segments` encodes each message's content on its own as plain text (a
//! `<|im_end|>` inside a heredoc stays text), as turn-wise trainers do.

pub mod byte_level;
mod gpt2_split;
pub mod hf;
pub mod jinja;
pub mod labels;
mod merges;
pub mod model;
pub mod pieces;
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
    /// Ids of a whole rendered string, with special-token text parsed as
    /// special tokens (as a trainer's tokenizer does), and each token's byte
    /// range in `text`.
    fn encode_with_offsets(&self, text: &str) -> Result<Encoded, String>;
    /// `encode_with_offsets` of text that holds none of the `cut_tokens`
    /// (a piece of a rendered row), which an encoder may do more cheaply.
    fn encode_piece(&self, piece: &str) -> Result<Encoded, String> {
        self.encode_with_offsets(piece)
    }
    /// `text` as the tokenizer's normalizer leaves it (what its ids decode to).
    fn normalize<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        std::borrow::Cow::Borrowed(text)
    }
    /// Whether `id` is one of the tokenizer's special tokens.
    fn is_special(&self, id: u32) -> bool;
    /// One more than the largest id it can produce (a model's vocabulary size).
    fn vocab_size(&self) -> usize;
    /// The tokens `encode_with_offsets` cuts its input at before anything
    /// else, with their ids; `None` when some of them are not plain cut
    /// points (they strip neighbouring spaces, match normalized text, ...).
    fn cut_tokens(&self) -> Option<Vec<(String, u32)>>;
}

/// A string's token ids and, per token, its byte range in the string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Encoded {
    pub ids: Vec<u32>,
    pub offsets: Vec<(usize, usize)>,
}

/// The special tokens a ChatML template uses.
pub const CHATML_SPECIALS: [&str; 3] = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"];
/// Qwen's thinking markers: ordinary added tokens, not specials.
pub const THINK_TOKENS: [&str; 2] = ["<think>", "</think>"];

/// The tokenizer turnlake trains and ships (`turnlake tokenizer train`).
pub const DEFAULT_TOKENIZER: &[u8] = include_bytes!("../../data/tokenizer.json");
