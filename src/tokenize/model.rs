//! A Hugging Face model folder as the tokenizer and chat template: what a
//! trainer loads for the model it fine-tunes, read from the folder's own
//! files so token ids are the model's.
//!
//! - `tokenizer.json`: the tokenizer as it is;
//! - else one `*.tiktoken` rank file, turned into the byte-level BPE that
//!   transformers' `TikTokenConverter` builds from it (the same vocabulary,
//!   merges and `ignore_merges`), with the pre-tokenizer pattern of
//!   `tokenizer_config.json` (`pretokenize_regex`), NFC normalization for
//!   Qwen's tokenizer classes, and every token of `added_tokens_decoder` at
//!   the id it gives;
//! - the chat template from `chat_template.jinja`, else the config's
//!   `chat_template` (rendered by [`super::jinja`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use super::hf::HfEncoder;
use super::jinja::JinjaTemplate;

/// Qwen3.5/3.6's pre-tokenization pattern (Qwen2's with combining marks, `\p{M}`),
/// for a tiktoken vocabulary whose config names none.
pub const QWEN3_5_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

#[derive(Debug, thiserror::Error)]
#[error("model folder {dir}: {reason}")]
pub struct ModelError {
    pub dir: PathBuf,
    pub reason: String,
}

/// What `tokenizer_config.json` says that tokenizing and rendering need.
#[derive(Debug, Default, Deserialize)]
struct TokenizerConfig {
    #[serde(default)]
    added_tokens_decoder: BTreeMap<String, AddedTokenSpec>,
    chat_template: Option<TemplateField>,
    pretokenize_regex: Option<String>,
    tokenizer_class: Option<String>,
    bos_token: Option<TokenField>,
    eos_token: Option<TokenField>,
}

#[derive(Debug, Deserialize)]
struct AddedTokenSpec {
    content: String,
    #[serde(default)]
    special: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
    #[serde(default)]
    single_word: bool,
}

/// A special token as the config writes it: its text, or an object with it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TokenField {
    Text(String),
    Object { content: String },
}

impl TokenField {
    fn text(&self) -> &str {
        match self {
            TokenField::Text(t) | TokenField::Object { content: t } => t,
        }
    }
}

/// `chat_template` as one template, or named ones (`default` is used).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TemplateField {
    One(String),
    Named(Vec<NamedTemplate>),
}

#[derive(Debug, Deserialize)]
struct NamedTemplate {
    name: String,
    template: String,
}

/// A model folder's tokenizer and chat template.
pub struct Model {
    pub dir: PathBuf,
    pub encoder: HfEncoder,
    pub template: JinjaTemplate,
    /// sha256 over the files read, each named, in name order: what a step's
    /// parameters record.
    pub sha256: String,
}

impl Model {
    pub fn open(dir: &Path) -> Result<Model, ModelError> {
        let fail = |reason: String| ModelError {
            dir: dir.to_path_buf(),
            reason,
        };
        let mut read = BTreeMap::new();
        let mut load = |name: &str| -> Result<Option<String>, ModelError> {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    read.insert(name.to_string(), text.clone());
                    Ok(Some(text))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(fail(format!("{name}: {e}"))),
            }
        };
        let config: TokenizerConfig = match load("tokenizer_config.json")? {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| fail(format!("tokenizer_config.json: {e}")))?,
            None => TokenizerConfig::default(),
        };
        let tokenizer = match load("tokenizer.json")? {
            Some(text) => text
                .parse::<Tokenizer>()
                .map_err(|e| fail(format!("tokenizer.json: {e}")))?,
            None => {
                let name = tiktoken_file(dir).map_err(&fail)?;
                let ranks = load(&name)?.expect("listed just now");
                let pattern = config
                    .pretokenize_regex
                    .as_deref()
                    .unwrap_or(QWEN3_5_PATTERN);
                // transformers' Qwen2 tokenizers normalize to NFC, as Qwen's own tokenizer does.
                let nfc = config
                    .tokenizer_class
                    .as_deref()
                    .is_some_and(|c| c.starts_with("Qwen2"));
                tiktoken_tokenizer(&ranks, pattern, nfc, &config.added_tokens_decoder)
                    .map_err(|e| fail(format!("{name}: {e}")))?
            }
        };
        let source = match (load("chat_template.jinja")?, &config.chat_template) {
            (Some(text), _) => text,
            (None, Some(TemplateField::One(text))) => text.clone(),
            (None, Some(TemplateField::Named(named))) => named
                .iter()
                .find(|t| t.name == "default")
                .map(|t| t.template.clone())
                .ok_or_else(|| fail("tokenizer_config.json: no chat template named default".into()))?,
            (None, None) => {
                return Err(fail(
                    "no chat template: neither chat_template.jinja nor tokenizer_config.json's chat_template".into(),
                ))
            }
        };
        let special = |t: &Option<TokenField>| t.as_ref().map(|t| t.text().to_string());
        let template = JinjaTemplate::new(
            &source,
            special(&config.bos_token),
            special(&config.eos_token),
        )
        .map_err(|e| fail(format!("chat template: {e}")))?;
        let mut digest = Sha256::new();
        for (name, text) in &read {
            digest.update((name.len() as u64).to_le_bytes());
            digest.update(name.as_bytes());
            digest.update((text.len() as u64).to_le_bytes());
            digest.update(text.as_bytes());
        }
        Ok(Model {
            dir: dir.to_path_buf(),
            encoder: HfEncoder::from_tokenizer(tokenizer),
            template,
            sha256: hex::encode(digest.finalize()),
        })
    }
}

/// The one `*.tiktoken` file of `dir`.
fn tiktoken_file(dir: &Path) -> Result<String, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tiktoken"))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err("no tokenizer.json and no *.tiktoken vocabulary".into()),
        _ => Err(format!(
            "more than one *.tiktoken vocabulary: {}",
            found.join(", ")
        )),
    }
}

/// GPT-2's byte-to-character map, which byte-level BPE vocabularies are
/// written in: printable bytes stand for themselves, the rest from U+0100 on.
fn byte_chars() -> [char; 256] {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut chars = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        chars[b as usize] = if printable(b) {
            char::from(b)
        } else {
            next += 1;
            char::from_u32(next - 1).expect("below U+0200")
        };
    }
    chars
}

/// The byte-level BPE of a tiktoken rank file, as transformers'
/// `TikTokenConverter` builds it: each token its rank as id, a merge for
/// every split of a token into two tokens (ordered by the token's rank, then
/// the parts' ranks), and whole pre-tokens found in the vocabulary taken as
/// they are (`ignore_merges`, as tiktoken does). Added tokens get the ids
/// the config gives, or the load fails.
fn tiktoken_tokenizer(
    text: &str,
    pattern: &str,
    nfc: bool,
    added: &BTreeMap<String, AddedTokenSpec>,
) -> Result<Tokenizer, String> {
    let ranks = super::tiktoken::parse_ranks(text)?;
    let rank_of: std::collections::HashMap<&[u8], u32> =
        ranks.iter().map(|(b, r)| (b.as_slice(), *r)).collect();
    let chars = byte_chars();
    let as_text = |bytes: &[u8]| bytes.iter().map(|b| chars[*b as usize]).collect::<String>();
    let mut vocab = Vocab::default();
    // (the token's rank, its parts' ranks, the parts)
    type Merge<'a> = (u32, u32, u32, &'a [u8], &'a [u8]);
    let mut merges: Vec<Merge> = Vec::new();
    for (token, rank) in &ranks {
        vocab.insert(as_text(token), *rank);
        for at in 1..token.len() {
            let (l, r) = token.split_at(at);
            if let (Some(&rl), Some(&rr)) = (rank_of.get(l), rank_of.get(r)) {
                merges.push((*rank, rl, rr, l, r));
            }
        }
    }
    merges.sort_by_key(|&(rank, rl, rr, ..)| (rank, rl, rr));
    let merges = merges
        .into_iter()
        .map(|(.., l, r)| (as_text(l), as_text(r)))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(true)
        .build()
        .map_err(|e| e.to_string())?;
    let mut tokenizer = Tokenizer::new(bpe);
    if nfc {
        tokenizer
            .with_normalizer(Some(NFC))
            .map_err(|e| e.to_string())?;
    }
    let split = Split::new(
        SplitPattern::Regex(pattern.to_string()),
        SplitDelimiterBehavior::Isolated,
        false,
    )
    .map_err(|e| format!("pattern: {e}"))?;
    tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![
        split.into(),
        ByteLevel::new(false, true, false).into(),
    ])));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    let mut added: Vec<(u32, &AddedTokenSpec)> = added
        .iter()
        .map(|(id, spec)| {
            id.parse::<u32>()
                .map(|id| (id, spec))
                .map_err(|_| format!("added token id {id:?} is not a number"))
        })
        .collect::<Result<_, _>>()?;
    added.sort_by_key(|(id, _)| *id);
    for (id, spec) in added {
        let token = AddedToken::from(spec.content.clone(), spec.special)
            .lstrip(spec.lstrip)
            .rstrip(spec.rstrip)
            .normalized(spec.normalized)
            .single_word(spec.single_word);
        tokenizer
            .add_tokens(vec![token])
            .map_err(|e| e.to_string())?;
        match tokenizer.token_to_id(&spec.content) {
            Some(got) if got == id => {}
            got => {
                return Err(format!(
                    "added token {:?} should have id {id}, the vocabulary gives it {got:?}",
                    spec.content
                ))
            }
        }
    }
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::TextEncoder;

    /// A vocabulary of the bytes and a few merges, as a tiktoken file.
    fn small_ranks() -> String {
        use base64::Engine;
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for t in ["he", "ll", "hell", "hello", " w", " wor", "or", " world"] {
            tokens.push(t.as_bytes().to_vec());
        }
        tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{} {i}\n",
                    base64::engine::general_purpose::STANDARD.encode(t)
                )
            })
            .collect()
    }

    fn added(specs: &[(u32, &str, bool)]) -> BTreeMap<String, AddedTokenSpec> {
        specs
            .iter()
            .map(|(id, content, special)| {
                (
                    id.to_string(),
                    AddedTokenSpec {
                        content: content.to_string(),
                        special: *special,
                        lstrip: false,
                        rstrip: false,
                        normalized: false,
                        single_word: false,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_tiktoken_vocabulary_encodes_whole_words_and_added_tokens_at_their_ids() {
        let specs = added(&[(264, "<|im_start|>", true), (265, "<think>", false)]);
        let tok = tiktoken_tokenizer(&small_ranks(), QWEN3_5_PATTERN, true, &specs).unwrap();
        let enc = HfEncoder::from_tokenizer(tok);
        let e = enc
            .encode_with_offsets("<|im_start|>hello world<think>")
            .unwrap();
        assert_eq!(e.ids, vec![264, 259, 263, 265]);
        assert_eq!(
            enc.decode(&e.ids).unwrap(),
            "<|im_start|>hello world<think>"
        );
        assert!(enc.is_special(264) && !enc.is_special(265));
        // NFC: a decomposed é encodes as the composed one.
        let composed = enc.encode_text("\u{e9}").unwrap();
        assert_eq!(enc.encode_text("e\u{301}").unwrap(), composed);
    }

    #[test]
    fn an_added_token_at_another_id_than_the_config_says_is_refused() {
        let specs = added(&[(300, "<|im_start|>", true)]);
        let err = tiktoken_tokenizer(&small_ranks(), QWEN3_5_PATTERN, false, &specs).unwrap_err();
        assert!(err.contains("should have id 300"), "{err}");
    }

    #[test]
    fn the_byte_map_is_gpt2s() {
        let chars = byte_chars();
        assert_eq!(chars[b' ' as usize], 'Ġ');
        assert_eq!(chars[b'\n' as usize], 'Ċ');
        assert_eq!(chars[b'a' as usize], 'a');
    }
}
