//! Encoding many rendered rows by their distinct pieces.
//!
//! A tokenizer cuts its input at its added tokens (`<|im_start|>`,
//! `<|im_end|>`, ...) before it normalizes or pre-tokenizes anything, so the
//! text between two of them encodes the same alone as inside the whole
//! string. The rows of a mix share most of their pieces (every escape row
//! repeats its trajectory, every row of an Albedo sample its context), so a
//! batch of rows encodes each distinct piece once and assembles each row's
//! ids and offsets from them.

use std::collections::HashMap;

use rayon::prelude::*;

use super::{Encoded, TextEncoder};

/// A stretch of a rendered row: plain text, or one added token.
pub(super) enum Piece<'a> {
    Text { at: usize, text: &'a str },
    Added { at: usize, len: usize, id: u32 },
}

/// Cut `text` at the leftmost (then longest) added token, as tokenizers do.
/// Each token's next occurrence is searched for again only once the cut has
/// passed it, so the text is scanned once per token, not once per piece.
pub(super) fn split<'a>(text: &'a str, added: &[(String, u32)]) -> Vec<Piece<'a>> {
    let find_from = |t: &str, from: usize| text[from..].find(t).map(|i| from + i);
    let mut next: Vec<Option<usize>> = added.iter().map(|(t, _)| find_from(t, 0)).collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        for ((t, _), pos) in added.iter().zip(next.iter_mut()) {
            if pos.is_some_and(|p| p < at) {
                *pos = find_from(t, at);
            }
        }
        let cut = added
            .iter()
            .zip(&next)
            .filter_map(|((t, id), pos)| pos.map(|p| (p, t.len(), *id)))
            .min_by_key(|(p, len, _)| (*p, usize::MAX - len));
        let plain_end = cut.map_or(text.len(), |(p, _, _)| p);
        if plain_end > at {
            out.push(Piece::Text {
                at,
                text: &text[at..plain_end],
            });
        }
        match cut {
            Some((p, len, id)) => {
                out.push(Piece::Added { at: p, len, id });
                at = p + len;
            }
            None => break,
        }
    }
    out
}

/// Each text encoded as a whole string would be (`enc.encode_with_offsets`),
/// encoding each distinct piece once. Falls back to whole strings for a
/// tokenizer whose added tokens are not plain cut points.
pub fn encode_all(enc: &dyn TextEncoder, texts: &[&str]) -> Vec<Result<Encoded, String>> {
    let Some(added) = enc.cut_tokens() else {
        return texts
            .par_iter()
            .map(|t| enc.encode_with_offsets(t))
            .collect();
    };
    let pieces: Vec<Vec<Piece>> = texts.par_iter().map(|t| split(t, &added)).collect();
    let mut distinct: Vec<&str> = pieces
        .iter()
        .flatten()
        .filter_map(|p| match p {
            Piece::Text { text, .. } => Some(*text),
            Piece::Added { .. } => None,
        })
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let encoded: HashMap<&str, Result<Encoded, String>> = distinct
        .into_par_iter()
        .map(|p| (p, enc.encode_piece(p)))
        .collect();
    pieces
        .par_iter()
        .map(|row| {
            let mut out = Encoded::default();
            for p in row {
                match p {
                    Piece::Added { at, len, id } => {
                        out.ids.push(*id);
                        out.offsets.push((*at, at + len));
                    }
                    Piece::Text { at, text } => {
                        let e = encoded[text].as_ref().map_err(Clone::clone)?;
                        out.ids.extend_from_slice(&e.ids);
                        out.offsets
                            .extend(e.offsets.iter().map(|&(s, end)| (s + at, end + at)));
                    }
                }
            }
            Ok(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::hf::HfEncoder;
    use crate::tokenize::DEFAULT_TOKENIZER;

    #[test]
    fn pieces_encode_exactly_as_the_whole_string() {
        let enc = HfEncoder::from_bytes(DEFAULT_TOKENIZER).unwrap();
        assert!(
            enc.cut_tokens().is_some(),
            "the shipped tokenizer cuts at its added tokens"
        );
        let texts = [
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nFix the bug<|im_end|>\n",
            "<|im_start|>assistant\n<think>plan</think>\n```bash\ncat <<'EOF' > a.py\nprint('<|im_end|>')\nEOF\n```<|im_end|>\n",
            "  leading spaces, tabs\t\tand ünïcödé — 漢字 🚀<|im_end|><|im_end|>trailing",
            "<|im_start|>user\n<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n</output><|im_end|>\n",
            "",
            "no added tokens at all",
        ];
        let whole: Vec<Result<Encoded, String>> =
            texts.iter().map(|t| enc.encode_with_offsets(t)).collect();
        assert_eq!(encode_all(&enc, &texts), whole);
        assert!(whole[1].as_ref().unwrap().ids.len() > 10);
    }
}
