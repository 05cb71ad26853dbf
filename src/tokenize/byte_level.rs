//! Byte-level BPE on plain strings: what `tokenizers` does for a GPT-2-style
//! `tokenizer.json` (no normalizer, a regex split, bytes mapped to
//! characters, BPE), without its alignment bookkeeping.
//!
//! The `tokenizers` pipeline keeps a per-byte alignment vector through every
//! split and transform so it can report offsets; in `validate` that
//! bookkeeping (allocations, copies, realloc) took more time than the regex
//! and the merges together. Here the same regex splits the text, the
//! tokenizer's own merges join each pre-token's bytes (`merges`), and each
//! token's offsets are the range of the original characters its bytes come
//! from, which is what `tokenizers` reports. Tokenizers of any other shape
//! keep the full pipeline; the tests compare the two on text of every kind.

use fancy_regex::Regex;
use serde_json::Value;
use tokenizers::models::ModelWrapper;
use tokenizers::Tokenizer;

use super::merges::Merges;
use super::Encoded;

/// The split `ByteLevel` makes when its `use_regex` is set (GPT-2's pattern,
/// as `tokenizers` writes it).
const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// How a byte-level BPE tokenizer splits text before its merges.
enum Split {
    /// GPT-2's pattern, matched by hand (`gpt2_split`).
    Gpt2,
    /// Another pattern (Qwen's, say): its matches and the text between them.
    Regex(Regex),
}

/// The pre-tokenization of a byte-level BPE tokenizer.
pub struct ByteLevelBpe {
    split: Split,
    merges: Merges,
}

/// GPT-2's byte-to-character table: printable bytes stand for themselves,
/// the others for the characters from U+0100 on, in byte order.
fn byte_chars() -> Vec<String> {
    let printable = |b: u8| (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
    let mut next = 256u32;
    (0..=255u8)
        .map(|b| {
            let c = if printable(b) {
                char::from(b)
            } else {
                next += 1;
                char::from_u32(next - 1).expect("U+0100..U+0143 are characters")
            };
            c.to_string()
        })
        .collect()
}

impl ByteLevelBpe {
    /// The fast path for `tokenizer`, when it is of the one shape this
    /// reproduces exactly: no normalizer or post-processor, a BPE model
    /// without dropout or subword affixes, and a `ByteLevel` pre-tokenizer
    /// (with its own regex, or after one isolating `Split`), adding no prefix
    /// space.
    pub fn recognize(tokenizer: &Tokenizer) -> Option<ByteLevelBpe> {
        if tokenizer.get_normalizer().is_some()
            || tokenizer.get_post_processor().is_some()
            || tokenizer.get_truncation().is_some()
            || tokenizer.get_padding().is_some()
        {
            return None;
        }
        let ModelWrapper::BPE(bpe) = tokenizer.get_model() else {
            return None;
        };
        // Dropout merges at random; a subword prefix or suffix counts in the
        // lengths of byte-fallback tokens, whose offsets then leave the pre-token.
        if bpe.dropout.is_some()
            || bpe.continuing_subword_prefix.is_some()
            || bpe.end_of_word_suffix.is_some()
        {
            return None;
        }
        // The pre-tokenizer as JSON, to read its settings by name.
        let pre = serde_json::to_value(tokenizer.get_pre_tokenizer()?).ok()?;
        let byte_level = |v: &Value, regex: bool| {
            v["type"] == "ByteLevel" && v["add_prefix_space"] == false && v["use_regex"] == regex
        };
        let pattern = if byte_level(&pre, true) {
            GPT2_PATTERN.to_string()
        } else {
            if pre["type"] != "Sequence" {
                return None;
            }
            let steps = pre["pretokenizers"].as_array().filter(|s| s.len() == 2)?;
            let split = &steps[0];
            if !(split["type"] == "Split"
                && split["behavior"] == "Isolated"
                && split["invert"] == false
                && byte_level(&steps[1], false))
            {
                return None;
            }
            match (
                split["pattern"]["Regex"].as_str(),
                split["pattern"]["String"].as_str(),
            ) {
                (Some(regex), _) => regex.to_string(),
                (None, Some(literal)) => fancy_regex::escape(literal).into_owned(),
                _ => return None,
            }
        };
        let split = if pattern == GPT2_PATTERN {
            Split::Gpt2
        } else {
            Split::Regex(Regex::new(&pattern).ok()?)
        };
        Some(ByteLevelBpe {
            split,
            merges: Merges::of(bpe, &byte_chars())?,
        })
    }

    /// The ids of `text` (which holds no added token) and each one's byte
    /// range in it; `None` where the regex gives up on the text (it hit its
    /// backtracking limit), which `tokenizers` handles its own way.
    pub fn encode(&self, text: &str) -> Option<Encoded> {
        let mut out = Encoded::default();
        let regex = match &self.split {
            Split::Gpt2 => {
                for (start, end) in super::gpt2_split::pieces(text) {
                    self.encode_pretoken(text, start, end, &mut out);
                }
                return Some(out);
            }
            Split::Regex(regex) => regex,
        };
        let mut at = 0;
        for m in regex.find_iter(text) {
            let m = m.ok()?;
            // `Isolated`: the text between two matches is a pre-token too.
            self.encode_pretoken(text, at, m.start(), &mut out);
            self.encode_pretoken(text, m.start(), m.end(), &mut out);
            at = m.end();
        }
        self.encode_pretoken(text, at, text.len(), &mut out);
        Some(out)
    }

    /// Merge `text[start..end]`, each token's range widened to whole characters.
    fn encode_pretoken(&self, text: &str, start: usize, end: usize, out: &mut Encoded) {
        let char_start = |mut i: usize| {
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let char_end = |mut i: usize| {
            while !text.is_char_boundary(i) {
                i += 1;
            }
            i
        };
        let mut at = start;
        self.merges
            .each_token(&text.as_bytes()[start..end], |id, len| {
                out.ids.push(id);
                out.offsets.push((char_start(at), char_end(at + len)));
                at += len;
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::DEFAULT_TOKENIZER;

    /// Text of every kind a transcript holds: code, shell, whitespace runs,
    /// contractions, digits, CRLF, and characters of one to four bytes.
    fn texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            "THOUGHT: unicode — naïve café, 你好, emoji 🚀\n\n```bash\ncat -n x.py\n```",
            "CRLF line\r\nand tabs\t\there\r\n",
            "long whitespace runs:            \n\n\n\n      end   ",
            "it's they're we've I'm you'll he'd IT'S 'tis",
            "x = 12345678 + 0.5e-3; y[i] += f(a, b) // ünïcödé\u{00a0}nbsp\u{2028}ls",
            "def f(self):\n    return {'a': [1, 2]}  # ok\n\tpass\n",
            "\u{feff}bom, 漢字漢字, ̃combining, 🧑‍💻 zwj, \u{0}nul \u{7f}del",
            "",
            " ",
            "\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        texts.push((0u8..=127).map(char::from).collect());
        // Pre-tokens past the merge cache's length limit.
        texts.push("ab".repeat(400));
        texts.push(format!("x{}y", " ".repeat(700)));
        texts.push("ü".repeat(300));
        // Deterministic pseudo-random strings over a mixed alphabet.
        let alphabet: Vec<char> = "aZ09 _\n\t\r'.,;:-+éß漢🚀ü\u{a0}\u{300}sS"
            .chars()
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for len in 1..200 {
            let s: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            texts.push(s);
        }
        texts
    }

    fn same_as_tokenizers(tokenizer: Tokenizer) {
        let fast = ByteLevelBpe::recognize(&tokenizer).expect("a byte-level BPE tokenizer");
        for text in texts() {
            let full = tokenizer.encode(text.as_str(), false).unwrap();
            let got = fast.encode(&text).unwrap();
            assert_eq!(got.ids, full.get_ids(), "{text:?}");
            assert_eq!(got.offsets, full.get_offsets(), "{text:?}");
        }
    }

    #[test]
    fn the_shipped_tokenizer_encodes_as_tokenizers_does() {
        same_as_tokenizers(Tokenizer::from_bytes(DEFAULT_TOKENIZER).unwrap());
    }

    #[test]
    fn a_split_then_byte_level_tokenizer_encodes_as_tokenizers_does() {
        // Qwen's shape: an isolating regex split, then ByteLevel without its own regex.
        let mut json: Value = serde_json::from_slice(DEFAULT_TOKENIZER).unwrap();
        json["pre_tokenizer"] = serde_json::json!({
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": super::super::tiktoken::QWEN_PATTERN},
                 "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
            ]
        });
        let bytes = serde_json::to_vec(&json).unwrap();
        same_as_tokenizers(Tokenizer::from_bytes(bytes).unwrap());
    }

    #[test]
    fn a_tokenizer_that_ignores_merges_for_known_words_encodes_as_tokenizers_does() {
        // A word in the vocabulary that no merge reaches: whole only when
        // the model ignores merges for known words.
        let mut json: Value = serde_json::from_slice(DEFAULT_TOKENIZER).unwrap();
        let next_id = json["model"]["vocab"].as_object().unwrap().len() + 1000;
        json["model"]["vocab"]["zqxjkw"] = Value::from(next_id);
        json["model"]["vocab"]["Ġzqxjkw"] = Value::from(next_id + 1);
        json["model"]["ignore_merges"] = Value::Bool(true);
        let tokenizer = Tokenizer::from_bytes(serde_json::to_vec(&json).unwrap()).unwrap();
        let fast = ByteLevelBpe::recognize(&tokenizer).unwrap();
        let text = "zqxjkw, say zqxjkw!";
        let full = tokenizer.encode(text, false).unwrap();
        assert_eq!(full.get_ids()[0], next_id as u32);
        assert!(full.get_ids().contains(&(next_id as u32 + 1)));
        let got = fast.encode(text).unwrap();
        assert_eq!(got.ids, full.get_ids());
        assert_eq!(got.offsets, full.get_offsets());
        same_as_tokenizers(tokenizer);
    }

    #[test]
    fn other_shapes_keep_the_full_pipeline() {
        let mut json: Value = serde_json::from_slice(DEFAULT_TOKENIZER).unwrap();
        json["pre_tokenizer"]["add_prefix_space"] = Value::Bool(true);
        let prefixed = Tokenizer::from_bytes(serde_json::to_vec(&json).unwrap()).unwrap();
        assert!(ByteLevelBpe::recognize(&prefixed).is_none());
        json["pre_tokenizer"]["add_prefix_space"] = Value::Bool(false);
        json["normalizer"] = serde_json::json!({"type": "NFC"});
        let normalized = Tokenizer::from_bytes(serde_json::to_vec(&json).unwrap()).unwrap();
        assert!(ByteLevelBpe::recognize(&normalized).is_none());
        let mut affixed = Tokenizer::from_bytes(DEFAULT_TOKENIZER).unwrap();
        let ModelWrapper::BPE(mut bpe) = affixed.get_model().clone() else {
            panic!("BPE");
        };
        bpe.end_of_word_suffix = Some("</w>".into());
        affixed.with_model(bpe);
        assert!(ByteLevelBpe::recognize(&affixed).is_none());
    }
}
