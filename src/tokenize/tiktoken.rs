//! tiktoken-format BPE rank files (`*.tiktoken`: a base64 token and its rank
//! per line), with a pre-tokenization pattern and special tokens, so
//! Qwen-family vocabularies work without a model directory.

use base64::Engine;
use fancy_regex::Regex;
use std::collections::HashMap;

use super::pieces::Piece;
use super::{Encoded, TextEncoder};

/// Qwen2/Qwen3's pre-tokenization pattern.
pub const QWEN_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The tokens of a rank file with their ranks, in file order.
pub fn parse_ranks(text: &str) -> Result<Vec<(Vec<u8>, u32)>, String> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let mut parts = line.split_whitespace();
        let (Some(b64), Some(rank)) = (parts.next(), parts.next()) else {
            return Err(format!("line {}: expected `<base64 token> <rank>`", i + 1));
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("line {}: bad base64: {e}", i + 1))?;
        let rank: u32 = rank
            .parse()
            .map_err(|_| format!("line {}: bad rank {rank:?}", i + 1))?;
        out.push((bytes, rank));
    }
    Ok(out)
}

/// A token id and its byte range.
type TokenSpan = (u32, (usize, usize));

#[derive(Debug)]
pub struct TiktokenEncoder {
    ranks: HashMap<Vec<u8>, u32>,
    tokens: HashMap<u32, Vec<u8>>,
    specials: HashMap<String, u32>,
    pattern: Regex,
}

impl TiktokenEncoder {
    /// Parse a rank file. Special tokens get ids after the last rank, in the
    /// order given, unless `specials` names them with ids.
    pub fn parse(
        text: &str,
        pattern: &str,
        specials: &[(&str, Option<u32>)],
    ) -> Result<TiktokenEncoder, String> {
        let mut ranks = HashMap::new();
        let mut tokens = HashMap::new();
        for (bytes, rank) in parse_ranks(text)? {
            tokens.insert(rank, bytes.clone());
            ranks.insert(bytes, rank);
        }
        let mut next = tokens.keys().max().map_or(0, |m| m + 1);
        let mut special_ids = HashMap::new();
        for (name, id) in specials {
            let id = id.unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            special_ids.insert(name.to_string(), id);
            tokens.insert(id, name.as_bytes().to_vec());
        }
        let pattern = Regex::new(pattern).map_err(|e| format!("pattern: {e}"))?;
        Ok(TiktokenEncoder {
            ranks,
            tokens,
            specials: special_ids,
            pattern,
        })
    }

    pub fn from_file(
        path: &std::path::Path,
        pattern: &str,
        specials: &[(&str, Option<u32>)],
    ) -> Result<TiktokenEncoder, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        TiktokenEncoder::parse(&text, pattern, specials)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Byte-pair merge of one pre-token: repeatedly join the adjacent pair of lowest rank.
    fn merge(&self, piece: &[u8]) -> Result<Vec<u32>, String> {
        Ok(self
            .merge_spans(piece)?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// Byte-pair merge of one pre-token, each id with its byte range in `piece`.
    fn merge_spans(&self, piece: &[u8]) -> Result<Vec<TokenSpan>, String> {
        if let Some(r) = self.ranks.get(piece) {
            return Ok(vec![(*r, (0, piece.len()))]);
        }
        let mut parts: Vec<(usize, usize)> = (0..piece.len()).map(|i| (i, i + 1)).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    self.ranks
                        .get(&piece[parts[i].0..parts[i + 1].1])
                        .map(|r| (*r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            parts[i].1 = parts[i + 1].1;
            parts.remove(i + 1);
        }
        parts
            .iter()
            .map(|(a, b)| {
                self.ranks
                    .get(&piece[*a..*b])
                    .map(|r| (*r, (*a, *b)))
                    .ok_or_else(|| format!("byte sequence {:02x?} has no rank", &piece[*a..*b]))
            })
            .collect()
    }

    /// Pre-tokenize and merge `text`, offsets shifted by `base`.
    fn encode_plain(&self, text: &str, base: usize, out: &mut Encoded) -> Result<(), String> {
        for m in self.pattern.find_iter(text) {
            let m = m.map_err(|e| format!("pattern: {e}"))?;
            for (id, (a, b)) in self.merge_spans(m.as_str().as_bytes())? {
                out.ids.push(id);
                out.offsets
                    .push((base + m.start() + a, base + m.start() + b));
            }
        }
        Ok(())
    }
}

impl TextEncoder for TiktokenEncoder {
    fn vocab_size(&self) -> usize {
        let ranks = self.ranks.values().max().copied().unwrap_or(0);
        let specials = self.specials.values().max().copied().unwrap_or(0);
        ranks.max(specials) as usize + 1
    }

    fn encode_text(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut ids = Vec::new();
        for m in self.pattern.find_iter(text) {
            let m = m.map_err(|e| format!("pattern: {e}"))?;
            ids.extend(self.merge(m.as_str().as_bytes())?);
        }
        Ok(ids)
    }

    fn special_id(&self, token: &str) -> Option<u32> {
        self.specials.get(token).copied()
    }

    fn is_special(&self, id: u32) -> bool {
        self.specials.values().any(|s| *s == id)
    }

    fn cut_tokens(&self) -> Option<Vec<(String, u32)>> {
        let mut cuts: Vec<(String, u32)> = self
            .specials
            .iter()
            .map(|(t, id)| (t.clone(), *id))
            .collect();
        cuts.sort();
        Some(cuts)
    }

    fn encode_with_offsets(&self, text: &str) -> Result<Encoded, String> {
        let mut out = Encoded::default();
        let cuts = self.cut_tokens().unwrap_or_default();
        for piece in super::pieces::split(text, &cuts) {
            match piece {
                Piece::Text { at, text } => self.encode_plain(text, at, &mut out)?,
                Piece::Added { at, len, id } => {
                    out.ids.push(id);
                    out.offsets.push((at, at + len));
                }
            }
        }
        Ok(out)
    }

    fn encode_piece(&self, piece: &str) -> Result<Encoded, String> {
        let mut out = Encoded::default();
        self.encode_plain(piece, 0, &mut out)?;
        Ok(out)
    }

    fn decode(&self, ids: &[u32]) -> Result<String, String> {
        let mut bytes = Vec::new();
        for id in ids {
            bytes.extend(
                self.tokens
                    .get(id)
                    .ok_or_else(|| format!("unknown id {id}"))?,
            );
        }
        String::from_utf8(bytes).map_err(|e| format!("decoded bytes are not UTF-8: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every single byte, then merges for "th", "the", "  ".
    fn ranks_file(skip: Option<u8>) -> String {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut lines: Vec<String> = (0u8..=255)
            .filter(|b| Some(*b) != skip)
            .map(|b| format!("{} {}", b64(&[b]), b))
            .collect();
        for (i, t) in ["th", "the", "  "].iter().enumerate() {
            lines.push(format!("{} {}", b64(t.as_bytes()), 256 + i));
        }
        lines.join("\n")
    }

    #[test]
    fn merges_round_trips_and_specials() {
        let enc = TiktokenEncoder::parse(
            &ranks_file(None),
            QWEN_PATTERN,
            &[("<|im_start|>", None), ("<|im_end|>", None)],
        )
        .unwrap();
        assert_eq!(enc.encode_text("the").unwrap(), vec![257]);
        assert_eq!(enc.special_id("<|im_start|>"), Some(259));
        assert_eq!(enc.special_id("<|im_end|>"), Some(260));
        for text in [
            "the cat\r\n\tsat",
            "héllo wörld ✓ 你好",
            "cat <<'EOF'\n<|im_end|>\nEOF",
            "    four spaces  ",
        ] {
            let ids = enc.encode_text(text).unwrap();
            assert!(
                !ids.contains(&260),
                "content must not become a special token: {text:?}"
            );
            assert_eq!(enc.decode(&ids).unwrap(), text);
        }
    }

    #[test]
    fn a_byte_without_a_rank_is_an_error() {
        let enc = TiktokenEncoder::parse(&ranks_file(Some(b'~')), QWEN_PATTERN, &[]).unwrap();
        let err = enc.encode_text("a ~ b").unwrap_err();
        assert!(err.contains("7e"), "{err}");
        assert!(
            TiktokenEncoder::parse("bm90IGJhc2U2NA== x", QWEN_PATTERN, &[])
                .unwrap_err()
                .contains("line 1")
        );
    }
}
