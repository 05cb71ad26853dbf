//! The shapes verl's files take: a trajectory line of trajectories.jsonl
//! with its turns, the RL and multi-turn SFT Parquet rows, and their schemas.

use super::*;

/// A message as the Parquet files type it ([`crate::export::tool_calls_for_parquet`]).
pub(super) fn parquet_message(m: &Message) -> std::borrow::Cow<'_, Message> {
    match m
        .tool_calls
        .as_ref()
        .and_then(crate::export::tool_calls_for_parquet)
    {
        Some(calls) => std::borrow::Cow::Owned(Message {
            tool_calls: Some(calls),
            ..m.clone()
        }),
        None => std::borrow::Cow::Borrowed(m),
    }
}

#[derive(Debug, Serialize)]
pub(super) struct TurnOut<'a> {
    pub(super) t: i64,
    pub(super) turn_sha: &'a str,
    pub(super) prompt: Vec<&'a Message>,
    /// The rendered bytes the model was given (an Albedo side's first scored turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt_text: Option<&'a str>,
    pub(super) response: &'a Message,
    pub(super) r_turn: i64,
    pub(super) parsed: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct TrajectoryOut<'a> {
    pub(super) trajectory_id: &'a str,
    pub(super) source: &'a str,
    pub(super) sample_id: Option<&'a str>,
    pub(super) side: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a serde_json::Value>,
    pub(super) turns: Vec<TurnOut<'a>>,
    pub(super) r_exit: Option<f64>,
    pub(super) r_format: i64,
    pub(super) r_outcome: Option<f64>,
    pub(super) r_judge: Option<f64>,
    pub(super) t_exit: Option<i64>,
    pub(super) t_last_evidence: Option<i64>,
    pub(super) label_source: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct RewardModel {
    pub(super) style: &'static str,
    pub(super) ground_truth: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ExtraInfo<'a> {
    pub(super) split: &'static str,
    pub(super) index: i64,
    pub(super) trajectory_id: &'a str,
    pub(super) source: &'a str,
    pub(super) sample_id: Option<&'a str>,
    pub(super) side: Option<&'a str>,
    pub(super) label_source: &'a str,
    pub(super) alpha: f64,
    pub(super) turn_t: Vec<i64>,
    pub(super) r_turn: Vec<i64>,
    pub(super) r_format: i64,
    pub(super) r_exit: Option<f64>,
    pub(super) r_outcome: Option<f64>,
    pub(super) r_judge: Option<f64>,
    pub(super) t_exit: Option<i64>,
    pub(super) t_last_evidence: Option<i64>,
    pub(super) prompt_text: Option<&'a str>,
    pub(super) instance_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub(super) struct RlRow<'a> {
    pub(super) data_source: String,
    /// verl's agent loop for the row: `tool_agent` for a run that used tools.
    pub(super) agent_name: Option<&'static str>,
    pub(super) prompt: Vec<std::borrow::Cow<'a, Message>>,
    pub(super) tools: Option<&'a str>,
    pub(super) ability: &'static str,
    pub(super) reward_model: RewardModel,
    pub(super) extra_info: ExtraInfo<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct SftRow<'a> {
    pub(super) trajectory_id: &'a str,
    pub(super) messages: Vec<SftMessage<'a>>,
    pub(super) tools: Option<&'a str>,
}

/// A message of the multi-turn SFT file: trained when it is a turn whose
/// label is true (`python/turnlake_verl.py` masks the rest).
#[derive(Debug, Serialize)]
pub(super) struct SftMessage<'a> {
    #[serde(flatten)]
    pub(super) message: std::borrow::Cow<'a, Message>,
    pub(super) train: bool,
}

pub(super) fn message_list() -> DataType {
    messages_of(Vec::new())
}

/// A list of messages: role, content, the recorded fields, then `extra`.
fn messages_of(extra: Vec<Field>) -> DataType {
    let mut fields = vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
    ];
    fields.extend(crate::export::recorded_fields());
    fields.extend(extra);
    let message = Fields::from(fields);
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(message),
        true,
    )))
}

/// The columns verl's RLHFDataset reads (`data_source`, `prompt`, `ability`,
/// `reward_model{style, ground_truth}`, `extra_info`).
pub fn rl_schema() -> SchemaRef {
    let ints = DataType::List(Arc::new(Field::new("item", DataType::Int64, true)));
    Arc::new(Schema::new(vec![
        Field::new("data_source", DataType::Utf8, false),
        Field::new("agent_name", DataType::Utf8, true),
        Field::new("prompt", message_list(), false),
        Field::new("tools", DataType::Utf8, true),
        Field::new("ability", DataType::Utf8, false),
        Field::new(
            "reward_model",
            DataType::Struct(Fields::from(vec![
                Field::new("style", DataType::Utf8, false),
                Field::new("ground_truth", DataType::Utf8, false),
            ])),
            false,
        ),
        Field::new(
            "extra_info",
            DataType::Struct(Fields::from(vec![
                Field::new("split", DataType::Utf8, false),
                Field::new("index", DataType::Int64, false),
                Field::new("trajectory_id", DataType::Utf8, false),
                Field::new("source", DataType::Utf8, false),
                Field::new("sample_id", DataType::Utf8, true),
                Field::new("side", DataType::Utf8, true),
                Field::new("label_source", DataType::Utf8, false),
                Field::new("alpha", DataType::Float64, false),
                Field::new("turn_t", ints.clone(), false),
                Field::new("r_turn", ints, false),
                Field::new("r_format", DataType::Int64, false),
                Field::new("r_exit", DataType::Float64, true),
                Field::new("r_outcome", DataType::Float64, true),
                Field::new("r_judge", DataType::Float64, true),
                Field::new("t_exit", DataType::Int64, true),
                Field::new("t_last_evidence", DataType::Int64, true),
                Field::new("prompt_text", DataType::Utf8, true),
                Field::new("instance_id", DataType::Utf8, true),
            ])),
            false,
        ),
    ]))
}

/// The columns verl's MultiTurnSFTDataset reads (`messages`, each with its
/// `train` flag), with the trajectory.
pub fn sft_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("trajectory_id", DataType::Utf8, false),
        Field::new(
            "messages",
            messages_of(vec![Field::new("train", DataType::Boolean, false)]),
            false,
        ),
        Field::new("tools", DataType::Utf8, true),
    ]))
}
