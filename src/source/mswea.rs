//! mini-swe-agent `*.traj.json` files: v1 (`mini-swe-agent-1`, text
//! actions), v2 (`mini-swe-agent-1.1`: text actions, chat tool calls with
//! `role: "tool"` observations, or Responses-API items; a closing
//! `role: "exit"` message) and bare message lists. One file is one record
//! and one trajectory; a batch run's `<instance>/<instance>.traj.json` files
//! are found wherever they lie under the input folder.
//!
//! v2 records a response the agent rejected (a format error) only inside the
//! next user message's `extra`; it comes back here as an assistant message
//! flagged `recovered`, so every model response is a turn.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::storage::{Entry, Location};

use super::json::{compact_json, opt_str, parse_record, FieldError, FieldResult};
use super::{derive_checked, reject, RawMessage, RawTrajectory, Record, Unit};

pub const SOURCE: &str = "mswea";

pub fn wants(name: &str) -> bool {
    name.ends_with(".traj.json") || name.ends_with(".traj")
}

/// Read one trajectory file.
pub fn read_file(file: &Entry, emit: &mut dyn FnMut(Record)) -> std::io::Result<()> {
    let path = &file.location;
    let cap = crate::limits::get().record_bytes;
    if file.size > cap {
        let reason = format!(
            "a record of {} bytes, more than the limit of {cap} (--max-record-bytes)",
            file.size
        );
        emit(reject(SOURCE, path, None, None, reason, &[]));
        return Ok(());
    }
    let bytes = file.read_blocking()?;
    match parse_record(&bytes)
        .and_then(|v| trajectory(&v, path))
        .map(|raw| with_recorded_extras(raw, &bytes))
        .and_then(derive_checked)
    {
        Ok(rows) => emit(Record::Unit(Unit {
            trajectories: vec![rows],
            ..Default::default()
        })),
        Err(e) => {
            let field = Some(e.field.as_str()).filter(|f| !f.is_empty());
            emit(reject(SOURCE, path, None, field, e.reason, &bytes));
        }
    }
    Ok(())
}

/// The bash tool of mini-swe-agent's tool-call configs, in the
/// chat-completions shape (`minisweagent.models.utils.actions_toolcall.BASH_TOOL`):
/// the `tools` a tool-call run was given.
pub const BASH_TOOL: &str = r#"[{"type":"function","function":{"name":"bash","description":"Execute a bash command","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The bash command to execute"}},"required":["command"]}}}]"#;

/// The normalized trajectory of one parsed file.
pub fn trajectory(v: &Value, path: &Location) -> FieldResult<RawTrajectory> {
    let (list, info, instance) = match v {
        Value::Array(list) => (list, None, None),
        Value::Object(_) => match v.get("messages") {
            Some(Value::Array(list)) => (list, v.get("info"), opt_str(v, "instance_id")),
            Some(_) => return Err(FieldError::new("messages", "expected a list")),
            None => return Err(FieldError::new("messages", "missing")),
        },
        _ => {
            return Err(FieldError::new(
                "",
                "expected a JSON object or a list of messages",
            ))
        }
    };
    if list.is_empty() {
        return Err(FieldError::new("messages", "empty"));
    }
    let mut messages = Vec::with_capacity(list.len());
    let mut exit_status = info.and_then(|i| opt_str(i, "exit_status"));
    let mut model = info
        .and_then(|i| i.pointer("/config/model/model_name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    for (i, m) in list.iter().enumerate() {
        let at = format!("messages[{i}].");
        let msg = message(m, &at)?;
        if let Some(rejected) = format_error_response(m, &at)? {
            messages.push(rejected);
        }
        if msg.role == "exit" {
            exit_status = exit_status.or_else(|| {
                m.pointer("/extra/exit_status")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        }
        if model.is_none() && msg.role == "assistant" {
            model = m
                .pointer("/extra/response/model")
                .or_else(|| m.get("model").filter(|_| is_response_object(m)))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        messages.push(msg);
    }
    let used_tools = given_tools(v).unwrap_or_else(|| {
        messages
            .iter()
            .any(|m| m.tool_calls.is_some() || m.tool_call_id.is_some())
    });
    let stem = path
        .file_name()
        .map(|n| {
            n.trim_end_matches(".json")
                .trim_end_matches(".traj")
                .to_string()
        })
        .unwrap_or_default();
    let instance_id = instance.unwrap_or(stem);
    let sha = super::derive::messages_sha(&messages);
    Ok(RawTrajectory {
        traj_id: format!("{SOURCE}/{instance_id}/{}", &sha[..16]),
        source: SOURCE,
        model,
        instance_id: Some(instance_id),
        exit_status,
        input_file: path.to_string(),
        tools: used_tools.then(|| BASH_TOOL.to_string()),
        messages,
        messages_sha: Some(sha),
        ..Default::default()
    })
}

/// Each message's `extra` as the text the agent wrote (whitespace outside
/// strings dropped), in place of the one re-serialized from a `Value`:
/// serde_json reads floats such as timestamps lossily, and the extra is
/// promised back unchanged. A file whose extras cannot be read this way
/// keeps the re-serialized ones.
fn with_recorded_extras(mut raw: RawTrajectory, bytes: &[u8]) -> RawTrajectory {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        extra: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct File<'a> {
        #[serde(borrow)]
        messages: Vec<Message<'a>>,
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return raw;
    };
    let recorded = if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<Message>>(text)
    } else {
        serde_json::from_str::<File>(text).map(|f| f.messages)
    };
    let Ok(recorded) = recorded else {
        return raw;
    };
    let kept = raw.messages.iter_mut().filter(|m| !m.recovered);
    for (msg, rec) in kept.zip(&recorded) {
        msg.extra = rec.extra.map(|e| compact_json(e.get()));
    }
    raw
}

/// Whether a 2.x run was given the bash tool, from its recorded model
/// config: the text-based model classes carry an `action_regex`, the
/// tool-call ones do not. `None` for other versions or where no config was
/// recorded.
fn given_tools(file: &Value) -> Option<bool> {
    if file.get("trajectory_format")?.as_str()? != "mini-swe-agent-1.1" {
        return None;
    }
    let model = file.pointer("/info/config/model")?.as_object()?;
    Some(!model.contains_key("action_regex"))
}

fn is_response_object(m: &Value) -> bool {
    m.get("object").and_then(Value::as_str) == Some("response")
}

/// Text of a content that is a string, null, or a list of parts with `text`.
fn content_text(content: Option<&Value>, field: &str) -> FieldResult<String> {
    match content {
        Some(Value::String(c)) => Ok(c.clone()),
        Some(Value::Null) | None => Ok(String::new()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .map(|p| {
                p.get("text")
                    .and_then(Value::as_str)
                    .or_else(|| p.as_str())
                    .unwrap_or("")
            })
            .collect::<Vec<_>>()
            .join("")),
        Some(_) => Err(FieldError::new(field, "expected a string")),
    }
}

/// One message of any version and style.
pub fn message(m: &Value, path: &str) -> FieldResult<RawMessage> {
    let mut msg = chat_message(m, path)?;
    msg.extra = m
        .get("extra")
        .filter(|e| !e.is_null())
        .map(Value::to_string);
    Ok(msg)
}

/// A recorded message in the chat shape, whichever API wrote it.
fn chat_message(m: &Value, path: &str) -> FieldResult<RawMessage> {
    if is_response_object(m) {
        let mut msg = response_message(m, &format!("{path}output"))?;
        msg.actions = recorded_actions(m).unwrap_or(msg.actions);
        return Ok(msg);
    }
    if m.get("type").and_then(Value::as_str) == Some("function_call_output") {
        return Ok(RawMessage {
            role: "tool".into(),
            content: content_text(m.get("output"), &format!("{path}output"))?,
            tool_call_id: opt_str(m, "call_id"),
            ..Default::default()
        });
    }
    let role = match m.get("role") {
        Some(Value::String(r)) => r.clone(),
        Some(_) => return Err(FieldError::new(format!("{path}role"), "expected a string")),
        None => return Err(FieldError::new(format!("{path}role"), "missing")),
    };
    let content = content_text(m.get("content"), &format!("{path}content"))?;
    let tool_calls = m.get("tool_calls").filter(|t| !t.is_null());
    let (commands, complete) = tool_call_commands(tool_calls);
    Ok(RawMessage {
        role,
        content,
        reasoning_content: opt_str(m, "reasoning_content").filter(|r| !r.is_empty()),
        tool_calls: tool_calls.map(|t| t.to_string()),
        tool_call_id: opt_str(m, "tool_call_id"),
        actions: recorded_actions(m).unwrap_or(commands),
        tool_calls_complete: complete,
        ..Default::default()
    })
}

/// The commands the agent parsed and ran, as it recorded them (`extra.actions`).
fn recorded_actions(m: &Value) -> Option<Vec<String>> {
    m.pointer("/extra/actions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("command").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
}

/// The `command` of each chat tool call, and whether every call had one
/// (`None` when the message has no tool calls).
fn tool_call_commands(tool_calls: Option<&Value>) -> (Vec<String>, Option<bool>) {
    let calls = match tool_calls {
        Some(Value::Array(calls)) if !calls.is_empty() => calls,
        _ => return (Vec::new(), None),
    };
    let commands: Vec<String> = calls
        .iter()
        .filter_map(|c| {
            bash_command(
                c.pointer("/function/name"),
                c.pointer("/function/arguments"),
            )
        })
        .collect();
    let complete = commands.len() == calls.len();
    (commands, Some(complete))
}

/// The command of a call to the bash tool, its arguments a JSON string (or
/// an object); `None` for another tool or arguments without a command.
fn bash_command(name: Option<&Value>, arguments: Option<&Value>) -> Option<String> {
    if name.and_then(Value::as_str).is_some_and(|n| n != "bash") {
        return None;
    }
    let parsed = match arguments? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        v => v.clone(),
    };
    parsed.get("command")?.as_str().map(str::to_string)
}

/// A Responses-API response (`{"object": "response", "output": [...]}`) as
/// one chat-shaped assistant message: its text, its reasoning summary, and
/// its `function_call` items as `tool_calls[{id, type, function{name, arguments}}]`.
fn response_message(m: &Value, field: &str) -> FieldResult<RawMessage> {
    let output = match m.get("output") {
        Some(Value::Array(items)) => items.as_slice(),
        Some(Value::Null) | None => &[],
        Some(_) => return Err(FieldError::new(field, "expected a list")),
    };
    let (mut text, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => text.push_str(&content_text(item.get("content"), field)?),
            Some("reasoning") => {
                for part in ["summary", "content"] {
                    reasoning.push_str(&content_text(item.get(part), field)?);
                }
            }
            Some("function_call") => {
                let id = item.get("call_id").or_else(|| item.get("id"));
                let arguments = match item.get("arguments") {
                    Some(Value::String(s)) => Value::String(s.clone()),
                    Some(v) => Value::String(v.to_string()),
                    None => Value::String(String::new()),
                };
                calls.push(serde_json::json!({
                    "id": id.cloned().unwrap_or(Value::Null),
                    "type": "function",
                    "function": {"name": item.get("name").cloned().unwrap_or(Value::Null), "arguments": arguments},
                }));
            }
            _ => {}
        }
    }
    let any_call = !calls.is_empty();
    let tool_calls = any_call.then(|| Value::Array(calls));
    let (commands, complete) = tool_call_commands(tool_calls.as_ref());
    Ok(RawMessage {
        role: "assistant".into(),
        content: text,
        reasoning_content: Some(reasoning).filter(|r| !r.is_empty()),
        tool_calls: tool_calls.map(|t| t.to_string()),
        actions: commands,
        // A Responses-API run acts only through calls: none is no action.
        tool_calls_complete: Some(any_call && complete.unwrap_or(false)),
        ..Default::default()
    })
}

/// The response a format-error message (`extra.interrupt_type: "FormatError"`)
/// says the agent rejected, as an assistant message flagged `recovered`.
fn format_error_response(m: &Value, path: &str) -> FieldResult<Option<RawMessage>> {
    let Some(extra) = m.get("extra") else {
        return Ok(None);
    };
    if extra.get("interrupt_type").and_then(Value::as_str) != Some("FormatError") {
        return Ok(None);
    }
    let field = format!("{path}extra.response");
    let mut msg =
        match (extra.get("model_response"), extra.get("response")) {
            // Text models: the response text.
            (Some(Value::String(text)), _) => RawMessage {
                role: "assistant".into(),
                content: text.clone(),
                ..Default::default()
            },
            (_, Some(r)) if is_response_object(r) => response_message(r, &field)?,
            (_, Some(r)) if r.pointer("/choices/0/message").is_some() => {
                let mut msg = chat_message(
                    &r["choices"][0]["message"],
                    &format!("{field}.choices[0].message."),
                )?;
                msg.role = "assistant".into();
                msg
            }
            (_, Some(Value::String(repr))) => RawMessage {
                role: "assistant".into(),
                content: repr.clone(),
                ..Default::default()
            },
            _ => return Err(FieldError::new(
                field,
                "a FormatError message without the rejected response (model_response or response)",
            )),
        };
    msg.format_error = Some(rejection_reason(&msg, extra));
    msg.recovered = true;
    Ok(Some(msg))
}

/// Why mini-swe-agent rejected a response, in its own words.
fn rejection_reason(msg: &RawMessage, extra: &Value) -> String {
    if let Some(n) = extra.get("n_actions").and_then(Value::as_i64) {
        return format!("Expected exactly 1 action, found {n}.");
    }
    let calls: Vec<Value> = msg
        .tool_calls
        .as_deref()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok())
        .unwrap_or_default();
    if calls.is_empty() {
        return "No tool calls found in the response.".into();
    }
    let mut reasons = Vec::new();
    for c in &calls {
        let (name, arguments) = (
            c.pointer("/function/name"),
            c.pointer("/function/arguments"),
        );
        let args = match arguments {
            Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
            Some(v) => Some(v.clone()),
            None => None,
        };
        if args.is_none() {
            reasons.push("Error parsing tool call arguments.".to_string());
        }
        if let Some(n) = name.and_then(Value::as_str).filter(|n| *n != "bash") {
            reasons.push(format!("Unknown tool '{n}'."));
        }
        if args.as_ref().and_then(|a| a.get("command")).is_none() {
            reasons.push("Missing 'command' argument in bash tool call.".into());
        }
    }
    if reasons.is_empty() {
        "Rejected by the agent.".into()
    } else {
        reasons.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path() -> Location {
        Location::parse("runs/x/x.traj.json").unwrap()
    }

    #[test]
    fn a_responses_api_run_comes_in_the_chat_shape() {
        let v = json!({"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"object": "response", "model": "openai/o4-mini", "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look first."}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
                {"type": "function_call", "call_id": "call_1", "id": "fc_1", "name": "bash", "arguments": "{\"command\": \"ls\"}"},
                {"type": "function_call", "call_id": "call_2", "id": "fc_2", "name": "bash", "arguments": "{\"command\": \"git status\"}"}
            ], "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"}, {"command": "git status", "tool_call_id": "call_2"}]}},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"returncode\": 0, \"output\": \"a\"}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "{\"returncode\": 0, \"output\": \"b\"}"}
        ]});
        let t = trajectory(&v, &path()).unwrap();
        assert_eq!(t.model.as_deref(), Some("openai/o4-mini"));
        assert_eq!(t.tools.as_deref(), Some(BASH_TOOL));
        let a = &t.messages[2];
        assert_eq!(
            (a.role.as_str(), a.content.as_str()),
            ("assistant", "Let me look.")
        );
        assert_eq!(a.reasoning_content.as_deref(), Some("Look first."));
        assert_eq!(a.actions, vec!["ls", "git status"]);
        let calls: Value = serde_json::from_str(a.tool_calls.as_deref().unwrap()).unwrap();
        assert_eq!(
            calls[1],
            json!({"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"git status\"}"}})
        );
        let o = &t.messages[4];
        assert_eq!(
            (o.role.as_str(), o.tool_call_id.as_deref()),
            ("tool", Some("call_2"))
        );
    }

    #[test]
    fn a_format_error_brings_back_the_response_the_agent_rejected() {
        let v = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "user", "content": "Format error: found 2 actions",
             "extra": {"interrupt_type": "FormatError", "n_actions": 2,
                       "model_response": "```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```"}},
            {"role": "user", "content": "Tool call error: no tool calls",
             "extra": {"interrupt_type": "FormatError",
                       "response": {"choices": [{"message": {"role": "assistant", "content": "I will think.", "tool_calls": null}}]}}}
        ]});
        let t = trajectory(&v, &path()).unwrap();
        let roles: Vec<(&str, bool)> = t
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.recovered))
            .collect();
        assert_eq!(
            roles,
            vec![
                ("system", false),
                ("user", false),
                ("assistant", true),
                ("user", false),
                ("assistant", true),
                ("user", false)
            ]
        );
        assert_eq!(
            t.messages[2].format_error.as_deref(),
            Some("Expected exactly 1 action, found 2.")
        );
        assert!(t.messages[2].content.contains("pwd"));
        assert_eq!(t.messages[4].content, "I will think.");
        assert_eq!(
            t.messages[4].format_error.as_deref(),
            Some("No tool calls found in the response.")
        );
        // The recovered responses are not part of the content key.
        let sent: Vec<RawMessage> = t
            .messages
            .iter()
            .filter(|m| !m.recovered)
            .cloned()
            .collect();
        assert_eq!(
            super::super::derive::messages_sha(&sent),
            super::super::derive::messages_sha(&t.messages)
        );
    }

    #[test]
    fn a_run_is_given_tools_by_its_recorded_model_config() {
        let run = |model: Value| {
            json!({"trajectory_format": "mini-swe-agent-1.1",
                   "info": {"config": {"model": model}}, "messages": [
                {"role": "user", "content": "task"},
                {"role": "user", "content": "Tool call error: no tool calls",
                 "extra": {"interrupt_type": "FormatError",
                           "response": {"choices": [{"message": {"role": "assistant", "content": "Hm."}}]}}}
            ]})
        };
        // A tool-call run whose one response had no tool call was still given the tool.
        let toolcall = trajectory(&run(json!({"model_name": "m"})), &path()).unwrap();
        assert_eq!(toolcall.tools.as_deref(), Some(BASH_TOOL));
        let text = run(json!({"model_name": "m", "action_regex": "```mswea_bash_command"}));
        assert_eq!(trajectory(&text, &path()).unwrap().tools, None);
    }

    #[test]
    fn a_format_error_without_the_response_is_refused_naming_the_message() {
        let v = json!({"messages": [
            {"role": "user", "content": "task"},
            {"role": "user", "content": "error", "extra": {"interrupt_type": "FormatError"}}
        ]});
        let e = trajectory(&v, &path()).unwrap_err();
        assert_eq!(e.field, "messages[1].extra.response");
    }
}
