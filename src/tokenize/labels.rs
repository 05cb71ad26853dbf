//! The tokens of one SFT row as a trainer sees them, and which carry the
//! loss: each `train: true` turn's tokens and the one that ends it (-100
//! elsewhere). `train` and `mix sweep` train on them; `mix` counts a row's
//! trainable tokens with them when its shares are token quotas.

use serde_json::Value;

use super::template::{ChatTemplate, Message, Template};
use super::TextEncoder;

/// Label of a position that carries no loss.
pub const IGNORE: i64 = -100;

/// One tokenized row. Ids as the tokenizer gives them and a flag a token:
/// a sweep holds every row of its mixes at once (as i64 ids and labels,
/// 16 bytes a token; these, 5).
#[derive(Debug, Clone)]
pub struct Tokenized {
    pub mix: String,
    /// The sample or instance the row comes from: the held-out unit.
    pub unit: String,
    pub ids: Vec<u32>,
    /// Whether position i is trained on.
    pub trained: Vec<bool>,
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
    let ids = encoded.ids;
    let mut trained = vec![false; ids.len()];
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
            trained[first..end].fill(true);
        }
    }
    Ok(Tokenized {
        mix: row["mix"].as_str().unwrap_or("").to_string(),
        unit,
        ids,
        trained,
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
    let ids = rendered.ids;
    let mut trained = vec![false; ids.len()];
    for (m, &(start, end)) in messages.iter().zip(&rendered.spans) {
        if m["train"].as_bool() == Some(true) {
            // The content and the token that ends the message.
            let end = (end + 1).min(ids.len());
            trained[start..end].fill(true);
        }
    }
    Ok(Tokenized {
        mix: row["mix"].as_str().unwrap_or("").to_string(),
        unit,
        ids,
        trained,
    })
}

impl Tokenized {
    /// The tokens that carry the loss.
    pub fn trainable(&self) -> usize {
        self.trained.iter().filter(|t| **t).count()
    }

    /// The ids as a trainer feeds them, and its labels: the id where the
    /// position is trained on, else [`IGNORE`].
    pub fn ids_and_labels(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ids.iter().zip(&self.trained).map(|(&id, &t)| {
            let id = id as i64;
            (id, if t { id } else { IGNORE })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::hf::HfEncoder;
    use crate::tokenize::jinja::JinjaTemplate;
    use crate::tokenize::DEFAULT_TOKENIZER;

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
            .ids_and_labels()
            .filter(|(_, l)| *l != IGNORE)
            .map(|(id, _)| id as u32)
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
        assert_eq!(own.trained, t.trained);
        assert_eq!(t.trainable(), trained.len());
    }
}
