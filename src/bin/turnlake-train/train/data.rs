//! Training data from a built mix: each row rendered with the validated
//! tokenizer and chat template, loss only on its `train: true` turns (the
//! content and the end-of-message token; -100 elsewhere), rows held out by
//! sample or instance, and packed into fixed-length windows.

use serde_json::Value;

use turnlake::digest::sha256_hex;
use turnlake::tokenize::template::{ChatTemplate, Message, Template};
use turnlake::tokenize::TextEncoder;

/// Label of a position that carries no loss.
pub const IGNORE: i64 = -100;

/// One tokenized row.
#[derive(Debug, Clone)]
pub struct Tokenized {
    pub mix: String,
    /// The sample or instance the row comes from: the held-out unit.
    pub unit: String,
    pub ids: Vec<i64>,
    /// `ids[i]` where position i is trained on, else IGNORE.
    pub labels: Vec<i64>,
}

/// Render `row` (`{"mix", "messages": [{"role", "content", "train"}]}`)
/// with `template`: turnlake's, each message encoded on its own; a model's,
/// the conversation as one string, as its trainer tokenizes it.
pub fn tokenize(
    enc: &dyn TextEncoder,
    template: &Template,
    row: &Value,
    unit: String,
) -> Result<Tokenized, String> {
    match template {
        Template::Toml(t) => tokenize_segments(enc, t, row, unit),
        Template::Model { .. } => tokenize_whole(enc, template, row, unit),
    }
}

/// A model template's rendering: the tokens inside each train turn's span,
/// and the one after it (the turn's end), are trained on.
fn tokenize_whole(
    enc: &dyn TextEncoder,
    template: &Template,
    row: &Value,
    unit: String,
) -> Result<Tokenized, String> {
    let rendered = template.render_row(row)?;
    let encoded = enc.encode_with_offsets(&rendered.text)?;
    let ids: Vec<i64> = encoded.ids.iter().map(|&i| i as i64).collect();
    let mut labels = vec![IGNORE; ids.len()];
    let empty = Vec::new();
    let messages = row["messages"].as_array().unwrap_or(&empty);
    for (m, &(a, b)) in messages.iter().zip(&rendered.spans) {
        if m["train"].as_bool() != Some(true) {
            continue;
        }
        let inside: Vec<usize> = (0..ids.len())
            .filter(|&i| {
                let (s, e) = encoded.offsets[i];
                s >= a && e <= b && e > s
            })
            .collect();
        if let (Some(&first), Some(&last)) = (inside.first(), inside.last()) {
            let end = (last + 2).min(ids.len());
            labels[first..end].copy_from_slice(&ids[first..end]);
        }
    }
    Ok(Tokenized {
        mix: row["mix"].as_str().unwrap_or("").to_string(),
        unit,
        ids,
        labels,
    })
}

/// Turnlake's template: each message's content encoded on its own.
fn tokenize_segments(
    enc: &dyn TextEncoder,
    template: &ChatTemplate,
    row: &Value,
    unit: String,
) -> Result<Tokenized, String> {
    let messages = row["messages"].as_array().cloned().unwrap_or_default();
    let list: Vec<Message> = messages
        .iter()
        .map(|m| Message {
            role: m["role"].as_str().unwrap_or(""),
            content: m["content"].as_str().unwrap_or(""),
        })
        .collect();
    let rendered = template.render(enc, &list)?;
    let ids: Vec<i64> = rendered.ids.iter().map(|&i| i as i64).collect();
    let mut labels = vec![IGNORE; ids.len()];
    for (m, &(start, end)) in messages.iter().zip(&rendered.spans) {
        if m["train"].as_bool() == Some(true) {
            // The content and the token that ends the message.
            let end = (end + 1).min(ids.len());
            labels[start..end].copy_from_slice(&ids[start..end]);
        }
    }
    Ok(Tokenized {
        mix: row["mix"].as_str().unwrap_or("").to_string(),
        unit,
        ids,
        labels,
    })
}

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
        ids.extend_from_slice(&r.ids);
        labels.extend_from_slice(&r.labels);
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
        let row = |ids: Vec<i64>, labels: Vec<i64>| Tokenized {
            mix: "m".into(),
            unit: "u".into(),
            ids,
            labels,
        };
        let a = row(vec![1, 2, 3, 4], vec![IGNORE, IGNORE, 3, 4]);
        let b = row(vec![5, 6, 7], vec![IGNORE; 3]);
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

    use turnlake::tokenize::hf::HfEncoder;
    use turnlake::tokenize::jinja::JinjaTemplate;
    use turnlake::tokenize::DEFAULT_TOKENIZER;

    #[test]
    fn a_model_template_trains_the_train_turns_tokens_and_their_end() {
        let enc = HfEncoder::from_bytes(DEFAULT_TOKENIZER).unwrap();
        let jinja = "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}";
        let template = Template::Model {
            template: Box::new(JinjaTemplate::new(jinja, None, None).unwrap()),
            preserve_thinking: false,
        };
        let row = serde_json::json!({"mix": "credit", "messages": [
            {"role": "user", "content": "fix it", "train": false},
            {"role": "assistant", "content": "cat -n a.py", "train": false},
            {"role": "user", "content": "1 x", "train": false},
            {"role": "assistant", "content": "sed -i s/x/y/ a.py", "train": true},
        ]});
        let t = tokenize(&enc, &template, &row, "u".into()).unwrap();
        let trained: Vec<u32> = t
            .ids
            .iter()
            .zip(&t.labels)
            .filter(|(_, l)| **l != IGNORE)
            .map(|(id, _)| *id as u32)
            .collect();
        assert_eq!(
            enc.decode(&trained).unwrap(),
            "sed -i s/x/y/ a.py<|im_end|>"
        );
        // The same row through turnlake's own ChatML trains the same tokens.
        let own = tokenize(
            &enc,
            &Template::Toml(ChatTemplate::chatml()),
            &row,
            "u".into(),
        )
        .unwrap();
        assert_eq!(own.ids, t.ids);
        assert_eq!(own.labels, t.labels);
    }
}
