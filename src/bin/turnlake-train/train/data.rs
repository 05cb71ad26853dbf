//! Training data from a built mix: each row rendered with the validated
//! tokenizer and chat template, loss only on its `train: true` turns (the
//! content and the end-of-message token; -100 elsewhere), rows held out by
//! sample or instance, and packed into fixed-length windows.

use turnlake::digest::sha256_hex;
pub use turnlake::tokenize::labels::{tokenize, Tokenized, IGNORE};

/// Whether a unit is held out: a seeded hash of it below `share`.
pub fn held_out(unit: &str, seed: u64, share: f64) -> bool {
    let h = sha256_hex(format!("{seed}\0{unit}").as_bytes());
    let x = u64::from_str_radix(&h[..12], 16).expect("hex") as f64 / (1u64 << 48) as f64;
    x < share
}

/// A packed window: `seq_len + 1` tokens, inputs are all but the last,
/// targets all but the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub ids: Vec<i64>,
    pub labels: Vec<i64>,
}

impl Window {
    pub fn inputs(&self) -> &[i64] {
        &self.ids[..self.ids.len() - 1]
    }
    /// Next-token targets: position i predicts token i + 1.
    pub fn targets(&self) -> &[i64] {
        &self.labels[1..]
    }
    pub fn trained_tokens(&self) -> usize {
        self.targets().iter().filter(|l| **l != IGNORE).count()
    }
}

/// Concatenate rows (separated by `separator`, which carries no loss) and
/// cut windows of `seq_len + 1` tokens every `seq_len`; windows with no
/// trained target are dropped.
pub fn pack<'a>(
    rows: impl IntoIterator<Item = &'a Tokenized>,
    seq_len: usize,
    separator: i64,
) -> Vec<Window> {
    let (mut ids, mut labels) = (Vec::new(), Vec::new());
    for r in rows {
        for (id, label) in r.ids_and_labels() {
            ids.push(id);
            labels.push(label);
        }
        ids.push(separator);
        labels.push(IGNORE);
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at + seq_len < ids.len() {
        let w = Window {
            ids: ids[at..at + seq_len + 1].to_vec(),
            labels: labels[at..at + seq_len + 1].to_vec(),
        };
        if w.trained_tokens() > 0 {
            out.push(w);
        }
        at += seq_len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_labels_aligned_and_drops_untrained_windows() {
        let row = |ids: Vec<u32>, trained: Vec<bool>| Tokenized {
            mix: "m".into(),
            unit: "u".into(),
            ids,
            trained,
        };
        let a = row(vec![1, 2, 3, 4], vec![false, false, true, true]);
        let b = row(vec![5, 6, 7], vec![false; 3]);
        let w = pack([&a, &b], 3, 0);
        // Stream: 1 2 3 4 0 5 6 7 0 -> windows [1 2 3 4], [4 0 5 6] (no label but its first: dropped).
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].inputs(), &[1, 2, 3]);
        assert_eq!(w[0].targets(), &[IGNORE, 3, 4]);
        assert_eq!(w[0].trained_tokens(), 2);
        let share = (0..1000)
            .filter(|i| held_out(&format!("u{i}"), 7, 0.1))
            .count();
        assert!((70..130).contains(&share), "{share}");
    }
}
