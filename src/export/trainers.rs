//! The SFT rows in the shape each trainer loads as it is (`export sft --for`):
//!
//! - `axolotl`: the rows unchanged (its `chat_template` strategy reads each
//!   message's `train` flag through `message_field_training`), with the
//!   dataset config that loads them written beside the file;
//! - `trl`: one conversational prompt/completion pair per train turn, the
//!   messages before it as the prompt. TRL's `assistant_only_loss` trains
//!   every assistant message and ignores a per-message flag; a
//!   completion-only loss on these pairs trains exactly the train turns;
//! - `kto`: the same pairs, unpaired and labelled, as KTO-style trainers take
//!   them: every train turn (`label: true`) and every other labelled turn:
//!   whether the judge credited it, or, in a run no judge saw, whether the
//!   local scorer predicts it earns credit (verl's `r_turn`); `label_source`
//!   says which (`train`, `judge`, `scorer`).

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
    Kto,
}

/// A message as a prompt or completion holds it: the row's message
/// without its `train` flag and judgement (which the pair's shape says).
fn chat_message(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(map) = m.as_object_mut() {
        map.remove("train");
        map.remove("judged");
    }
    m
}

/// A pair of `row`: the messages before `at` as the prompt, `at` as the completion.
fn pair(row: &Value, messages: &[Value], at: usize, t: &Value) -> Value {
    let mut pair = serde_json::json!({
        "row_id": row["row_id"],
        "mix": row["mix"],
        "t": t,
        "prompt": messages[..at].iter().map(chat_message).collect::<Vec<_>>(),
        "completion": [chat_message(&messages[at])],
    });
    if let Some(tools) = row.get("tools") {
        pair["tools"] = tools.clone();
    }
    pair
}

/// The KTO rows of `row` (read with its labelled turns): each train turn
/// labelled true, each other labelled turn by its judge's or scorer's
/// label, in message order.
pub fn kto_rows(row: &Value) -> Vec<Value> {
    let empty = Vec::new();
    let messages = row["messages"].as_array().unwrap_or(&empty);
    let meta = row["train_meta"].as_array().unwrap_or(&empty);
    let mut train_t = meta.iter().map(|m| &m["t"]);
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let (t, label, source) = match (m["train"] == true, m.get("judged")) {
                (true, _) => (
                    train_t.next().cloned().unwrap_or(Value::Null),
                    true,
                    Value::from("train"),
                ),
                (false, Some(j)) => (
                    j["t"].clone(),
                    j["label"] == true,
                    j["label_source"].clone(),
                ),
                (false, None) => return None,
            };
            let mut row = pair(row, messages, i, &t);
            row["label"] = Value::Bool(label);
            row["label_source"] = source;
            Some(row)
        })
        .collect()
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
        .map(|((i, _), meta)| pair(row, messages, i, &meta["t"]))
        .collect()
}

/// The Parquet schema of the KTO rows (`schemas/exports/kto.json`): the
/// pairs' with a `label`.
pub fn kto_parquet_schema() -> Arc<Schema> {
    let mut fields: Vec<Field> = trl_parquet_schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("label", DataType::Boolean, false));
    fields.push(Field::new("label_source", DataType::Utf8, false));
    Arc::new(Schema::new(fields))
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
    fn kto_labels_train_turns_true_and_other_turns_by_their_judge_or_scorer() {
        let j = |t: i64, label: bool, source: &str| serde_json::json!({"t": t, "label": label, "label_source": source});
        let row = serde_json::json!({
            "row_id": "r1", "mix": "credit",
            "messages": [
                {"role": "user", "content": "u", "train": false},
                {"role": "assistant", "content": "a1", "train": false, "judged": j(1, false, "judge")},
                {"role": "user", "content": "o1", "train": false},
                {"role": "assistant", "content": "a2", "train": false, "judged": j(2, true, "scorer")},
                {"role": "user", "content": "o2", "train": false},
                {"role": "assistant", "content": "a3", "train": true, "judged": j(3, false, "judge")},
                {"role": "user", "content": "o3", "train": false},
                {"role": "assistant", "content": "a4", "train": false},
            ],
            "train_meta": [{"t": 3}],
        });
        let rows = kto_rows(&row);
        let got: Vec<(Value, bool, Value)> = rows
            .iter()
            .map(|r| {
                (
                    r["t"].clone(),
                    r["label"].as_bool().unwrap(),
                    r["label_source"].clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1.into(), false, "judge".into()),
                (2.into(), true, "scorer".into()),
                (3.into(), true, "train".into())
            ]
        );
        assert_eq!(rows[2]["prompt"].as_array().unwrap().len(), 5);
        assert!(rows[2]["prompt"][1].get("judged").is_none());
        assert_eq!(
            rows[2]["completion"],
            serde_json::json!([{"role": "assistant", "content": "a3"}])
        );
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
