//! The SFT rows in the shape each trainer loads as it is (`export sft --for`):
//!
//! - `axolotl`: the rows unchanged (its `chat_template` strategy reads each
//!   message's `train` flag through `message_field_training`), with the
//!   dataset config that loads them written beside the file;
//! - `trl`: one conversational prompt/completion pair per train turn, the
//!   messages before it as the prompt. TRL's `assistant_only_loss` trains
//!   every assistant message and ignores a per-message flag; a
//!   completion-only loss on these pairs trains exactly the train turns.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema};
use serde_json::Value;

use super::sft::SftFormat;

/// Who the export is shaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trainer {
    Axolotl,
    Trl,
}

/// A message as a prompt or completion holds it: the row's message
/// without its `train` flag (which the pair's shape says).
fn chat_message(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(map) = m.as_object_mut() {
        map.remove("train");
    }
    m
}

/// TRL's conversational prompt/completion pairs of `row`, one per train
/// turn in order: its `row_id`, `mix` and turn `t`, the messages before it
/// as `prompt`, the turn as `completion`, and the run's `tools` where the
/// row has them.
pub fn trl_pairs(row: &Value) -> Vec<Value> {
    let empty = Vec::new();
    let messages = row["messages"].as_array().unwrap_or(&empty);
    let meta = row["train_meta"].as_array().unwrap_or(&empty);
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["train"] == true)
        .zip(meta)
        .map(|((i, m), meta)| {
            let mut pair = serde_json::json!({
                "row_id": row["row_id"],
                "mix": row["mix"],
                "t": meta["t"],
                "prompt": messages[..i].iter().map(chat_message).collect::<Vec<_>>(),
                "completion": [chat_message(m)],
            });
            if let Some(tools) = row.get("tools") {
                pair["tools"] = tools.clone();
            }
            pair
        })
        .collect()
}

/// The Parquet schema of the TRL pairs (`schemas/exports/trl.json`).
pub fn trl_parquet_schema() -> Arc<Schema> {
    let mut message = vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
    ];
    message.extend(super::recorded_fields());
    let messages = || {
        DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(Fields::from(message.clone())),
            true,
        )))
    };
    Arc::new(Schema::new(vec![
        Field::new("row_id", DataType::Utf8, false),
        Field::new("mix", DataType::Utf8, false),
        Field::new("t", DataType::Int32, false),
        Field::new("prompt", messages(), false),
        Field::new("completion", messages(), false),
        Field::new("tools", DataType::Utf8, true),
    ]))
}

/// The name of the axolotl config written beside the export `data`.
pub fn axolotl_config_name(data: &str) -> String {
    format!("{data}.axolotl.yml")
}

/// The axolotl dataset config that trains on the export file `data` as it
/// is: its chat_template strategy, each message's `train` flag deciding.
pub fn axolotl_config(data: &str, format: SftFormat) -> String {
    let ds_type = match format {
        SftFormat::Jsonl => "json",
        SftFormat::Parquet => "parquet",
    };
    format!(
        "# axolotl: train on {data} as turnlake exported it (turnlake export sft --for axolotl).\n\
         # A message is trained when its `train` flag is true; the chat template is the base model's.\n\
         datasets:\n  \
           - path: {data}\n    \
             ds_type: {ds_type}\n    \
             type: chat_template\n    \
             field_messages: messages\n    \
             message_property_mappings:\n      \
               role: role\n      \
               content: content\n    \
             message_field_training: train\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_gives_one_pair_per_train_turn_with_what_came_before_as_prompt() {
        let row = serde_json::json!({
            "row_id": "r1", "mix": "credit",
            "messages": [
                {"role": "system", "content": "s", "train": false},
                {"role": "user", "content": "u", "train": false},
                {"role": "assistant", "content": "a1", "train": false},
                {"role": "user", "content": "o1", "train": false},
                {"role": "assistant", "content": "a2", "train": true},
                {"role": "user", "content": "o2", "train": false},
                {"role": "assistant", "content": "a3", "train": true},
            ],
            "train_meta": [{"t": 2}, {"t": 3}],
        });
        let pairs = trl_pairs(&row);
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0]["t"], 2);
        assert_eq!(pairs[0]["prompt"].as_array().unwrap().len(), 4);
        assert_eq!(
            pairs[0]["completion"],
            serde_json::json!([{"role": "assistant", "content": "a2"}])
        );
        assert_eq!(pairs[1]["prompt"].as_array().unwrap().len(), 6);
        assert_eq!(
            pairs[1]["prompt"][4],
            serde_json::json!({"role": "assistant", "content": "a2"})
        );
        assert!(pairs[1].get("tools").is_none());
    }

    #[test]
    fn the_axolotl_config_names_the_file_and_the_train_flag() {
        let yml = axolotl_config("mix.parquet", SftFormat::Parquet);
        assert!(
            yml.contains("  - path: mix.parquet\n    ds_type: parquet\n"),
            "{yml}"
        );
        assert!(yml.contains("    message_field_training: train\n"), "{yml}");
    }
}
