//! mini-swe-agent `*.traj.json` files: v1 (`mini-swe-agent-1`, text
//! actions), v2 (`mini-swe-agent-1.1`, tool calls, `role: "tool"`
//! observations, a closing `role: "exit"` message) and bare message lists.
//! One file is one record and one trajectory.

use serde_json::Value;

use crate::storage::{Entry, Location};

use super::json::{opt_str, parse_record, FieldError, FieldResult};
use super::{derive_checked, reject, RawMessage, RawTrajectory, Record, Unit};

pub const SOURCE: &str = "mswea";

pub fn wants(name: &str) -> bool {
    name.ends_with(".traj.json") || name.ends_with(".traj")
}

/// Read one trajectory file.
pub fn read_file(file: &Entry, emit: &mut dyn FnMut(Record)) -> std::io::Result<()> {
    let path = &file.location;
    let bytes = file.read_blocking()?;
    match parse_record(&bytes)
        .and_then(|v| trajectory(&v, path))
        .and_then(|raw| derive_checked(&raw))
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
        let msg = message(m, &format!("messages[{i}]."))?;
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
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        messages.push(msg);
    }
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
        messages,
        ..Default::default()
    })
}

/// One message of either version; content may be a string, null, or a list of text parts.
pub fn message(m: &Value, path: &str) -> FieldResult<RawMessage> {
    let role = match m.get("role") {
        Some(Value::String(r)) => r.clone(),
        Some(_) => return Err(FieldError::new(format!("{path}role"), "expected a string")),
        None => return Err(FieldError::new(format!("{path}role"), "missing")),
    };
    let content = match m.get("content") {
        Some(Value::String(c)) => c.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| {
                p.get("text")
                    .and_then(Value::as_str)
                    .or_else(|| p.as_str())
                    .unwrap_or("")
            })
            .collect::<Vec<_>>()
            .join(""),
        Some(_) => {
            return Err(FieldError::new(
                format!("{path}content"),
                "expected a string",
            ))
        }
    };
    let tool_calls = m.get("tool_calls").filter(|t| !t.is_null());
    let mut actions: Vec<String> = m
        .pointer("/extra/actions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("command").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if actions.is_empty() {
        if let Some(Value::Array(calls)) = tool_calls {
            for (i, c) in calls.iter().enumerate() {
                let args = c.pointer("/function/arguments");
                let parsed = match args {
                    Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
                    Some(v) => Some(v.clone()),
                    None => None,
                };
                match parsed
                    .as_ref()
                    .and_then(|a| a.get("command"))
                    .and_then(Value::as_str)
                {
                    Some(cmd) => actions.push(cmd.to_string()),
                    None => {
                        return Err(FieldError::new(
                            format!("{path}tool_calls[{i}].function.arguments"),
                            "no \"command\" in the tool call arguments",
                        ))
                    }
                }
            }
        }
    }
    Ok(RawMessage {
        role,
        content,
        reasoning_content: opt_str(m, "reasoning_content").filter(|r| !r.is_empty()),
        tool_calls: tool_calls.map(|t| t.to_string()),
        actions,
        score_target: false,
        environment_observation: false,
    })
}
