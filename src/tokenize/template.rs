//! The chat template: how a row's messages become one token sequence, and
//! where each message's content lies in it.

use serde::Deserialize;

use super::{TextEncoder, CHATML_SPECIALS};

pub const DEFAULT_TEMPLATE: &str = include_str!("../../data/chatml.toml");

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ChatTemplate {
    pub message_start: String,
    pub message_end: String,
    #[serde(default)]
    pub trim_content: bool,
}

/// A message to render.
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// A rendered row: its ids and, per message, the token span of its content.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub ids: Vec<u32>,
    pub spans: Vec<(usize, usize)>,
}

impl ChatTemplate {
    pub fn from_toml(text: &str) -> Result<ChatTemplate, String> {
        let t: ChatTemplate = toml::from_str(text).map_err(|e| e.to_string())?;
        if !t.message_start.contains("{role}") {
            return Err("message_start must contain {role}".into());
        }
        Ok(t)
    }

    pub fn chatml() -> ChatTemplate {
        ChatTemplate::from_toml(DEFAULT_TEMPLATE).expect("data/chatml.toml is valid")
    }

    /// Encode template text: its special tokens as special ids, the rest as text.
    fn encode_template(
        enc: &dyn TextEncoder,
        text: &str,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        let mut rest = text;
        while !rest.is_empty() {
            let next = CHATML_SPECIALS
                .iter()
                .filter_map(|s| rest.find(s).map(|at| (at, *s)))
                .min();
            let (at, special) = match next {
                Some(x) => x,
                None => (rest.len(), ""),
            };
            if at > 0 {
                out.extend(enc.encode_text(&rest[..at])?);
            }
            if special.is_empty() {
                break;
            }
            out.push(
                enc.special_id(special)
                    .ok_or_else(|| format!("the tokenizer has no special token {special}"))?,
            );
            rest = &rest[at + special.len()..];
        }
        Ok(())
    }

    /// The conversation as one string, as a chat-template trainer renders it,
    /// and each message's content as a byte range of it.
    pub fn render_text(&self, messages: &[Message]) -> (String, Vec<(usize, usize)>) {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(messages.len());
        for m in messages {
            text.push_str(&self.message_start.replace("{role}", m.role));
            let content = if self.trim_content {
                m.content.trim()
            } else {
                m.content
            };
            let start = text.len();
            text.push_str(content);
            spans.push((start, text.len()));
            text.push_str(&self.message_end.replace("{role}", m.role));
        }
        (text, spans)
    }

    /// Each message encoded on its own: template text with its special ids,
    /// content as plain text.
    pub fn render(&self, enc: &dyn TextEncoder, messages: &[Message]) -> Result<Rendered, String> {
        let mut ids = Vec::new();
        let mut spans = Vec::with_capacity(messages.len());
        for m in messages {
            Self::encode_template(enc, &self.message_start.replace("{role}", m.role), &mut ids)?;
            let content = if self.trim_content {
                m.content.trim()
            } else {
                m.content
            };
            let start = ids.len();
            ids.extend(enc.encode_text(content)?);
            spans.push((start, ids.len()));
            Self::encode_template(enc, &self.message_end.replace("{role}", m.role), &mut ids)?;
        }
        Ok(Rendered { ids, spans })
    }
}
