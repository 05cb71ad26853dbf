//! A byte-level BPE's merges applied to a pre-token's raw bytes.
//!
//! `tokenizers`' BPE merges the characters of the byte-level string and
//! returns every token with its text as a fresh `String`, looked up by id;
//! validation keeps only ids and byte ranges, so those allocations and
//! lookups cost more than the merges. Here each byte starts as its byte-level
//! character's id and pairs merge by the tokenizer's own ranks, lowest rank
//! first and leftmost among equals, exactly as `tokenizers` merges them.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;
use tokenizers::models::bpe::BPE;

/// Pre-tokens this long or longer are merged anew each time (as in
/// `tokenizers`, whose cache skips them too): they rarely repeat.
const CACHED_LEN: usize = 256;
/// Distinct pre-tokens each thread keeps merged; past it, new ones are
/// merged anew each time. Bounds the cache to a few MB a thread.
const CACHED_PRETOKENS: usize = 65_536;

/// Ids for each `Merges` value, so a thread's cache never serves another's.
static NEXT_MERGES_ID: AtomicU64 = AtomicU64::new(0);

/// A pre-token's tokens: each id and the number of bytes it covers.
type Tokens = Box<[(u32, u32)]>;

/// The id of the `Merges` a thread's cache holds pre-tokens for, and them.
type Cache = (u64, HashMap<Box<[u8]>, Tokens>);

thread_local! {
    /// The tokens of the pre-tokens this thread merged lately.
    static CACHE: RefCell<Cache> = RefCell::new((u64::MAX, HashMap::new()));
}

/// The merge table of a byte-level BPE model.
pub struct Merges {
    id: u64,
    /// Each byte's id: the id of its byte-level character.
    byte_ids: [u32; 256],
    /// (left id, right id) -> (rank, merged id).
    pairs: HashMap<(u32, u32), (u32, u32)>,
    /// For a model that `ignore_merges`: the ids of whole pre-tokens that
    /// are themselves in the vocabulary, by their bytes.
    whole: Option<HashMap<Box<[u8]>, u32>>,
}

impl Merges {
    /// The merges of `bpe`, where `byte_chars` is each byte's byte-level
    /// character; `None` where a byte's character is not in its vocabulary
    /// or its merges cannot be read (`tokenizers` then goes its own way).
    pub fn of(bpe: &BPE, byte_chars: &[String]) -> Option<Merges> {
        let vocab = bpe.get_vocab();
        let mut byte_ids = [0u32; 256];
        for (id, c) in byte_ids.iter_mut().zip(byte_chars) {
            *id = *vocab.get(c)?;
        }
        let model = serde_json::to_value(bpe).ok()?;
        let mut pairs = HashMap::new();
        for (rank, merge) in model["merges"].as_array()?.iter().enumerate() {
            let (a, b) = match merge {
                Value::Array(ab) if ab.len() == 2 => (ab[0].as_str()?, ab[1].as_str()?),
                Value::String(s) => s.split_once(' ')?,
                _ => return None,
            };
            let merged = vocab.get(&format!("{a}{b}"))?;
            // A pair listed twice keeps its last rank, as `tokenizers` does.
            pairs.insert(
                (*vocab.get(a)?, *vocab.get(b)?),
                (u32::try_from(rank).ok()?, *merged),
            );
        }
        let whole = bpe.ignore_merges.then(|| {
            let byte_of: HashMap<char, u8> = byte_chars
                .iter()
                .zip(0u8..=255)
                .filter_map(|(c, b)| Some((c.chars().next()?, b)))
                .collect();
            vocab
                .iter()
                .filter_map(|(token, id)| {
                    let bytes: Option<Vec<u8>> =
                        token.chars().map(|c| byte_of.get(&c).copied()).collect();
                    Some((bytes?.into_boxed_slice(), *id))
                })
                .collect()
        });
        Some(Merges {
            id: NEXT_MERGES_ID.fetch_add(1, Ordering::Relaxed),
            byte_ids,
            pairs,
            whole,
        })
    }

    /// Calls `token(id, byte length)` for each token of `bytes`, in order.
    pub fn each_token(&self, bytes: &[u8], mut token: impl FnMut(u32, usize)) {
        if bytes.is_empty() {
            return;
        }
        if let Some(id) = self.whole.as_ref().and_then(|w| w.get(bytes)) {
            return token(*id, bytes.len());
        }
        if bytes.len() >= CACHED_LEN {
            for (id, len) in self.merge(bytes) {
                token(id, len as usize);
            }
            return;
        }
        CACHE.with(|cell| {
            let mut cache = cell.borrow_mut();
            if cache.0 != self.id {
                *cache = (self.id, HashMap::new());
            }
            let map = &mut cache.1;
            let tokens = match map.get(bytes) {
                Some(tokens) => tokens,
                None => {
                    let merged = self.merge(bytes).into_boxed_slice();
                    if map.len() >= CACHED_PRETOKENS {
                        for (id, len) in merged {
                            token(id, len as usize);
                        }
                        return;
                    }
                    map.entry(bytes.into()).or_insert(merged)
                }
            };
            for &(id, len) in tokens.iter() {
                token(id, len as usize);
            }
        })
    }

    /// `bytes` merged: each token's id and byte length.
    fn merge(&self, bytes: &[u8]) -> Vec<(u32, u32)> {
        /// One symbol of the word being merged; `len` 0 once merged away.
        #[derive(Clone, Copy)]
        struct Symbol {
            id: u32,
            len: u32,
            prev: usize,
            next: usize,
        }
        const NONE: usize = usize::MAX;
        let n = bytes.len();
        let mut symbols: Vec<Symbol> = bytes
            .iter()
            .enumerate()
            .map(|(i, b)| Symbol {
                id: self.byte_ids[usize::from(*b)],
                len: 1,
                prev: if i == 0 { NONE } else { i - 1 },
                next: if i + 1 == n { NONE } else { i + 1 },
            })
            .collect();
        // (rank, position of the pair's left symbol, merged id), least first.
        let mut queue: BinaryHeap<Reverse<(u32, usize, u32)>> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, w)| {
                let &(rank, merged) = self.pairs.get(&(w[0].id, w[1].id))?;
                Some(Reverse((rank, pos, merged)))
            })
            .collect();
        while let Some(Reverse((_, pos, merged))) = queue.pop() {
            let left = symbols[pos];
            if left.len == 0 || left.next == NONE {
                continue;
            }
            let right = symbols[left.next];
            // An entry left from before either side last merged.
            if self.pairs.get(&(left.id, right.id)).map(|m| m.1) != Some(merged) {
                continue;
            }
            symbols[pos] = Symbol {
                id: merged,
                len: left.len + right.len,
                prev: left.prev,
                next: right.next,
            };
            symbols[left.next].len = 0;
            if right.next != NONE {
                symbols[right.next].prev = pos;
            }
            let current = symbols[pos];
            if current.prev != NONE {
                let before = symbols[current.prev];
                if let Some(&(rank, id)) = self.pairs.get(&(before.id, current.id)) {
                    queue.push(Reverse((rank, current.prev, id)));
                }
            }
            if current.next != NONE {
                let after = symbols[current.next];
                if let Some(&(rank, id)) = self.pairs.get(&(current.id, after.id)) {
                    queue.push(Reverse((rank, pos, id)));
                }
            }
        }
        symbols
            .into_iter()
            .filter(|s| s.len > 0)
            .map(|s| (s.id, s.len))
            .collect()
    }
}
