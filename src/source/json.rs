//! Small helpers for reading fields out of `serde_json::Value`s with errors
//! that name the field.

use serde_json::Value;

/// A field that is missing or has the wrong type.
#[derive(Debug)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

pub type FieldResult<T> = Result<T, FieldError>;

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub fn req_str(v: &Value, key: &str, path: &str) -> FieldResult<String> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(FieldError::new(
            format!("{path}{key}"),
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(FieldError::new(format!("{path}{key}"), "missing")),
    }
}

pub fn opt_str(v: &Value, key: &str) -> Option<String> {
    match v.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    }
}

pub fn opt_f64(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(|x| {
        x.as_f64()
            .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
    })
}

pub fn opt_i64(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(|x| {
        x.as_i64()
            .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
    })
}

pub fn opt_bool(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(|x| match x {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    })
}

pub fn req_array<'a>(v: &'a Value, key: &str, path: &str) -> FieldResult<&'a Vec<Value>> {
    match v.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(FieldError::new(
            format!("{path}{key}"),
            format!("expected a list, found {}", kind(other)),
        )),
        None => Err(FieldError::new(format!("{path}{key}"), "missing")),
    }
}

/// Parse one JSON record, naming the problem the way a person fixes it. A
/// record over the size or nesting limit ([`crate::limits`]) is refused
/// before it is parsed.
pub fn parse_record(bytes: &[u8]) -> Result<Value, FieldError> {
    let limits = crate::limits::get();
    if bytes.len() as u64 > limits.record_bytes {
        return Err(FieldError::new(
            "",
            format!(
                "a record of more than {} bytes (the limit: --max-record-bytes)",
                limits.record_bytes
            ),
        ));
    }
    if crate::limits::nests_deeper(bytes, limits.json_depth) {
        return Err(FieldError::new(
            "",
            format!(
                "JSON nested deeper than {} levels (the limit: --max-json-depth)",
                limits.json_depth
            ),
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| FieldError::new("", format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    serde_json::from_str(text).map_err(|e| {
        let what = if e.is_eof() {
            "truncated JSON"
        } else {
            "malformed JSON"
        };
        FieldError::new("", format!("{what}: {e}"))
    })
}

/// Valid JSON text with the whitespace outside its strings removed, every
/// token otherwise as written (numbers keep all their digits).
pub fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacting_drops_only_the_whitespace_between_tokens() {
        let pretty = "{\n  \"t\": 1775802351.9899065,\n  \"s\": \"a \\\" b\\\\\",\n  \"l\": [ 1, \"x  y\" ]\n}";
        assert_eq!(
            compact_json(pretty),
            r#"{"t":1775802351.9899065,"s":"a \" b\\","l":[1,"x  y"]}"#
        );
    }
}
