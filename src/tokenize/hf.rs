//! Hugging Face `tokenizer.json` files, through the `tokenizers` crate.

use tokenizers::Tokenizer;

use super::byte_level::ByteLevelBpe;
use super::{Encoded, TextEncoder};

pub struct HfEncoder {
    /// Encodes text with special tokens treated as plain text.
    text: Tokenizer,
    /// Encodes text as a trainer does: special-token text becomes the special token.
    parsed: Tokenizer,
    /// Sorted: a handful of ids, looked up for every token.
    special_ids: Vec<u32>,
    /// Encodes pieces without the pipeline's bookkeeping, for byte-level BPE.
    byte_level: Option<ByteLevelBpe>,
}

impl HfEncoder {
    pub fn from_bytes(bytes: &[u8]) -> Result<HfEncoder, String> {
        let text = Tokenizer::from_bytes(bytes).map_err(|e| e.to_string())?;
        Ok(HfEncoder::from_tokenizer(text))
    }

    pub fn from_file(path: &std::path::Path) -> Result<HfEncoder, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        HfEncoder::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn from_tokenizer(parsed: Tokenizer) -> HfEncoder {
        let mut parsed = parsed;
        parsed.set_encode_special_tokens(false);
        let mut text = parsed.clone();
        text.set_encode_special_tokens(true);
        let mut special_ids: Vec<u32> = parsed
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id)
            .collect();
        special_ids.sort_unstable();
        HfEncoder {
            byte_level: ByteLevelBpe::recognize(&parsed),
            text,
            parsed,
            special_ids,
        }
    }
}

impl TextEncoder for HfEncoder {
    fn vocab_size(&self) -> usize {
        self.parsed.get_vocab_size(true)
    }

    fn encode_text(&self, text: &str) -> Result<Vec<u32>, String> {
        let enc = self
            .text
            .encode_fast(text, false)
            .map_err(|e| e.to_string())?;
        Ok(enc.get_ids().to_vec())
    }

    fn special_id(&self, token: &str) -> Option<u32> {
        self.text.token_to_id(token)
    }

    fn decode(&self, ids: &[u32]) -> Result<String, String> {
        self.text.decode(ids, false).map_err(|e| e.to_string())
    }

    fn normalize<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        use tokenizers::{NormalizedString, Normalizer};
        let Some(normalizer) = self.parsed.get_normalizer() else {
            return std::borrow::Cow::Borrowed(text);
        };
        let mut normalized = NormalizedString::from(text);
        match normalizer.normalize(&mut normalized) {
            Ok(()) => std::borrow::Cow::Owned(normalized.get().to_string()),
            Err(_) => std::borrow::Cow::Borrowed(text),
        }
    }

    fn is_special(&self, id: u32) -> bool {
        self.special_ids.binary_search(&id).is_ok()
    }

    fn cut_tokens(&self) -> Option<Vec<(String, u32)>> {
        // Tokens matched in normalized text are plain cut points only when
        // there is no normalizer.
        let normalizes = self.parsed.get_normalizer().is_some();
        let mut cuts: Vec<(String, u32)> = Vec::new();
        for (id, t) in self.parsed.get_added_tokens_decoder() {
            if t.lstrip || t.rstrip || t.single_word || (t.normalized && normalizes) {
                return None;
            }
            cuts.push((t.content.clone(), id));
        }
        cuts.sort();
        Some(cuts)
    }

    fn encode_with_offsets(&self, text: &str) -> Result<Encoded, String> {
        let enc = self.parsed.encode(text, false).map_err(|e| e.to_string())?;
        Ok(Encoded {
            ids: enc.get_ids().to_vec(),
            offsets: enc.get_offsets().to_vec(),
        })
    }

    fn encode_piece(&self, piece: &str) -> Result<Encoded, String> {
        if let Some(encoded) = self.byte_level.as_ref().and_then(|f| f.encode(piece)) {
            return Ok(encoded);
        }
        self.encode_with_offsets(piece)
    }
}
