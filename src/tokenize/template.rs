//! The chat template: how a row's messages become one token sequence, and
//! where each message's content lies in it.

use serde::Deserialize;

use super::jinja::{assistant_spans, JinjaTemplate};
use super::{TextEncoder, CHATML_SPECIALS};

/// How a row's conversation becomes one string: turnlake's TOML template
/// (ChatML by default), or a model folder's own Jinja template.
pub enum Template {
    Toml(ChatTemplate),
    Model {
        template: Box<JinjaTemplate>,
        /// Render the reasoning of every assistant turn, not only after the
        /// last user query (the king template's `preserve_thinking`).
        preserve_thinking: bool,
    },
}

/// A row rendered as one string, with each message's label span in it.
pub struct RenderedText {
    pub text: String,
    /// Per message; an empty span for what a trainer does not label.
    pub spans: Vec<(usize, usize)>,
    /// A span decodes to its message's recorded content (a TOML template),
    /// else to what the template rendered there.
    pub spans_are_content: bool,
}

impl Template {
    /// `row`'s messages (and tools) rendered; an error says why the
    /// template refused them.
    pub fn render_row(&self, row: &serde_json::Value) -> Result<RenderedText, String> {
        match self {
            Template::Toml(t) => {
                let (text, spans) = t.render_text(&messages_of(row));
                Ok(RenderedText {
                    text,
                    spans,
                    spans_are_content: true,
                })
            }
            Template::Model {
                template,
                preserve_thinking,
            } => {
                let messages = template_messages(row);
                let tools = row.get("tools").filter(|t| !t.is_null());
                let text = template.render(&messages, tools, *preserve_thinking)?;
                let roles: Vec<&str> = messages
                    .as_array()
                    .map(|m| m.iter().map(|m| m["role"].as_str().unwrap_or("")).collect())
                    .unwrap_or_default();
                let assistants = roles.iter().filter(|r| **r == "assistant").count();
                let mut found = assistant_spans(&text, assistants)?.into_iter();
                let spans = roles
                    .iter()
                    .map(|r| match *r {
                        "assistant" => found.next().expect("one span per assistant message"),
                        _ => (0, 0),
                    })
                    .collect();
                Ok(RenderedText {
                    text,
                    spans,
                    spans_are_content: false,
                })
            }
        }
    }

    /// The TOML template, for what only it does (segments mode).
    pub fn toml(&self) -> Option<&ChatTemplate> {
        match self {
            Template::Toml(t) => Some(t),
            Template::Model { .. } => None,
        }
    }
}

/// A row's messages as the template's input: role and content.
pub fn messages_of(row: &serde_json::Value) -> Vec<Message<'_>> {
    row["messages"]
        .as_array()
        .map(|msgs| {
            msgs.iter()
                .map(|m| Message {
                    role: m["role"].as_str().unwrap_or(""),
                    content: m["content"].as_str().unwrap_or(""),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A row's messages as a model's template takes them (transformers' chat
/// format): role, content, reasoning, tool calls with their arguments as
/// objects (a recorded JSON string is parsed), the tool call answered.
fn template_messages(row: &serde_json::Value) -> serde_json::Value {
    let empty = Vec::new();
    let messages = row["messages"].as_array().unwrap_or(&empty);
    let out = messages
        .iter()
        .map(|m| {
            let mut message = serde_json::Map::new();
            for key in ["role", "content", "reasoning_content", "tool_call_id"] {
                if let Some(v) = m.get(key).filter(|v| !v.is_null()) {
                    message.insert(key.into(), v.clone());
                }
            }
            if let Some(calls) = m.get("tool_calls").and_then(|c| c.as_array()) {
                let calls = calls
                    .iter()
                    .map(|call| {
                        let mut call = call.clone();
                        if let Some(args) = call.pointer_mut("/function/arguments") {
                            if let Some(parsed) = args
                                .as_str()
                                .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
                                .filter(|p| p.is_object())
                            {
                                *args = parsed;
                            }
                        }
                        call
                    })
                    .collect();
                message.insert("tool_calls".into(), serde_json::Value::Array(calls));
            }
            serde_json::Value::Object(message)
        })
        .collect();
    serde_json::Value::Array(out)
}

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
