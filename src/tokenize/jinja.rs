//! A model's own Jinja chat template, rendered as transformers renders it
//! (`apply_chat_template`): trimmed blocks, Python's string methods,
//! `raise_exception`, `strftime_now` and a `tojson` that writes what
//! Python's `json.dumps` writes. Each assistant message's span in the
//! rendered text is what a trainer's labels cover.

use minijinja::value::{Kwargs, Serde, Value};
use minijinja::{Environment, Error, ErrorKind};

/// Where a ChatML-family template starts an assistant turn and ends a turn.
const ASSISTANT_HEADER: &str = "<|im_start|>assistant\n";
const TURN_END: &str = "<|im_end|>";

pub struct JinjaTemplate {
    env: Environment<'static>,
    bos: Option<String>,
    eos: Option<String>,
}

impl JinjaTemplate {
    /// The template `source`, with the model's `bos` and `eos` tokens.
    pub fn new(
        source: &str,
        bos: Option<String>,
        eos: Option<String>,
    ) -> Result<JinjaTemplate, String> {
        let mut env = Environment::new();
        // transformers' settings: jinja2 with trim_blocks and lstrip_blocks.
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| e.to_string())?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Value, Error> {
                Err(Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_function("strftime_now", |format: String| {
            chrono::Utc::now().format(&format).to_string()
        });
        env.add_filter("tojson", tojson);
        env.add_template_owned("chat_template", source.to_string())
            .map_err(|e| e.to_string())?;
        Ok(JinjaTemplate { env, bos, eos })
    }

    /// `messages` (and `tools`) as the template renders them for training:
    /// no generation prompt; `preserve_thinking` as the caller chose.
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        preserve_thinking: bool,
    ) -> Result<String, String> {
        let template = self
            .env
            .get_template("chat_template")
            .expect("added in new");
        let ctx = minijinja::context! {
            messages => Value::from(Serde(messages)),
            tools => tools.map(|t| Value::from(Serde(t))),
            add_generation_prompt => false,
            preserve_thinking => preserve_thinking,
            bos_token => self.bos.clone(),
            eos_token => self.eos.clone(),
        };
        template.render(ctx).map_err(|e| {
            // A template's own raise_exception says what is wrong in its words.
            let mut text = e.to_string();
            if let Some(detail) = e.detail() {
                text = format!("{detail} ({text})");
            }
            text
        })
    }
}

/// The byte range of each assistant turn's generation in `text`: from after
/// its header to its turn end, the k-th for the k-th of `assistants`
/// assistant messages.
pub fn assistant_spans(text: &str, assistants: usize) -> Result<Vec<(usize, usize)>, String> {
    let mut spans = Vec::with_capacity(assistants);
    let mut at = 0;
    while let Some(found) = text[at..].find(ASSISTANT_HEADER) {
        let start = at + found + ASSISTANT_HEADER.len();
        let end = text[start..]
            .find(TURN_END)
            .map(|e| start + e)
            .ok_or_else(|| format!("the assistant turn at byte {start} has no {TURN_END}"))?;
        spans.push((start, end));
        at = end;
    }
    if spans.len() != assistants {
        return Err(format!(
            "the template rendered {} assistant turns for {assistants} assistant messages",
            spans.len()
        ));
    }
    Ok(spans)
}

/// Python's `json.dumps(value, ensure_ascii=False)` (`indent` as it takes
/// it), which transformers' templates call as `tojson`: `", "` and `": "`
/// between items, keys in their order, no escaping of non-ASCII text.
fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let _: Option<bool> = kwargs.get("ensure_ascii")?;
    let _: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let mut out = String::new();
    write_python_json(&json, indent, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn write_python_json(v: &serde_json::Value, indent: Option<usize>, depth: usize, out: &mut String) {
    use serde_json::Value as J;
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * depth));
        }
    };
    let separator = if indent.is_some() { "," } else { ", " };
    match v {
        J::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                write_python_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        J::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                out.push_str(&serde_json::to_string(k).expect("a string serializes"));
                out.push_str(": ");
                write_python_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        other => out.push_str(&serde_json::to_string(other).expect("a JSON value serializes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_with_python_methods_and_finds_assistant_spans() {
        let t = JinjaTemplate::new(
            "{% for m in messages %}{% if m.content.startswith('x') %}{{ raise_exception('no x') }}{% endif %}\
             {{ '<|im_start|>' + m.role + '\\n' + m.content.strip() + '<|im_end|>\\n' }}{% endfor %}",
            None,
            Some("<|im_end|>".into()),
        )
        .unwrap();
        let msgs = serde_json::json!([
            {"role": "user", "content": " hi "},
            {"role": "assistant", "content": "ls -la\n"},
        ]);
        let text = t.render(&msgs, None, false).unwrap();
        assert_eq!(
            text,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nls -la<|im_end|>\n"
        );
        let spans = assistant_spans(&text, 1).unwrap();
        assert_eq!(&text[spans[0].0..spans[0].1], "ls -la");
        assert!(assistant_spans(&text, 2)
            .unwrap_err()
            .contains("1 assistant turns for 2"));
        let err = t.render(
            &serde_json::json!([{"role": "user", "content": "x"}]),
            None,
            false,
        );
        assert!(err.unwrap_err().contains("no x"));
    }

    #[test]
    fn tojson_writes_what_python_json_dumps_writes() {
        let t = JinjaTemplate::new(
            "{{ tools[0] | tojson }}|{{ tools | tojson(indent=2) }}",
            None,
            None,
        )
        .unwrap();
        let tools = serde_json::json!([{"name": "bash", "parameters": {"z": [1, "é<"], "a": {}}}]);
        let text = t
            .render(&serde_json::json!([]), Some(&tools), false)
            .unwrap();
        let (flat, indented) = text.split_once('|').unwrap();
        assert_eq!(
            flat,
            r#"{"name": "bash", "parameters": {"z": [1, "é<"], "a": {}}}"#
        );
        assert_eq!(
            indented,
            "[\n  {\n    \"name\": \"bash\",\n    \"parameters\": {\n      \"z\": [\n        1,\n        \"é<\"\n      ],\n      \"a\": {}\n    }\n  }\n]"
        );
    }
}
