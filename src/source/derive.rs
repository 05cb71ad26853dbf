//! From one normalized trajectory to its `trajectories`, `messages` and
//! `turns` rows, applying the turn rules of `crate::turn` once.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use crate::digest::{fields_sha, stored_hex, stored_hex_digits};

use super::json::{FieldError, FieldResult};
use super::rows::{MessageRow, TrajectoryRow, TurnRow};
use crate::turn::{
    action_text, detect_obs_format, extract_bash_blocks,
    loops::{loop_metrics_normalized, normalize_command, repeat_flags},
    observation_outcome, submit_signal, think_unclosed, turn_kind, ObsFormat, ObsOutcome,
};

/// One recorded message, as read from any source.
#[derive(Debug, Clone, Default)]
pub struct RawMessage {
    pub role: String,
    pub content: String,
    pub reasoning_content: Option<String>,
    /// The recorded `tool_calls` JSON, verbatim.
    pub tool_calls: Option<String>,
    /// The tool call a `role: "tool"` observation answers.
    pub tool_call_id: Option<String>,
    /// Commands the agent parsed from the response (v2's `extra.actions`, or
    /// the tool calls' commands); empty when the text's blocks are the actions.
    pub actions: Vec<String>,
    /// For a response with tool calls: whether every call carried a command.
    pub tool_calls_complete: Option<bool>,
    /// A response the agent rejected, recovered from the next message's
    /// `extra`: never sent back to the model.
    pub recovered: bool,
    /// Why the agent rejected it (its FormatError).
    pub format_error: Option<String>,
    /// mini-swe-agent's recorded `extra` object, as JSON.
    pub extra: Option<String>,
    pub score_target: bool,
    pub environment_observation: bool,
}

impl RawMessage {
    /// The digest `messages.fields_sha` stores: over the fields beside
    /// content a trainer reads, so an export can refuse altered ones too.
    pub fn fields_sha(&self) -> String {
        fields_sha(
            self.reasoning_content.as_deref(),
            self.tool_calls.as_deref(),
            self.tool_call_id.as_deref(),
        )
    }
}

/// One trajectory from any source, before the turn rules run.
#[derive(Debug, Clone, Default)]
pub struct RawTrajectory {
    pub traj_id: String,
    pub source: &'static str,
    pub eval_run_id: Option<String>,
    pub sample_id: Option<String>,
    pub side: Option<String>,
    pub model: Option<String>,
    pub instance_id: Option<String>,
    pub score: Option<f64>,
    pub verified: Option<bool>,
    pub judged: bool,
    pub judge_looped: bool,
    pub exit_status: Option<String>,
    pub submit_marker: Option<String>,
    pub error: Option<String>,
    pub input_file: String,
    pub input_row: Option<i64>,
    /// The tool schema the run was given (JSON), for tool-call runs.
    pub tools: Option<String>,
    /// The rendered prompt the model was given, byte-exact, where recorded.
    pub prompt_text: Option<String>,
    pub messages: Vec<RawMessage>,
    /// [`messages_sha`] of `messages`, where the reader took it for the id:
    /// `derive` reuses it instead of hashing every message again.
    pub messages_sha: Option<String>,
}

/// The rows one trajectory contributes to the lake.
#[derive(Debug, Clone, Default)]
pub struct TrajectoryRows {
    pub trajectory: TrajectoryRow,
    pub messages: Vec<MessageRow>,
    pub turns: Vec<TurnRow>,
}

/// sha256 over every recorded message's role, content, reasoning and tool
/// calls: a trajectory's content key. Recovered responses are not part of it
/// (they derive from the message that records them).
pub fn messages_sha(messages: &[RawMessage]) -> String {
    let mut h = Sha256::new();
    for m in messages.iter().filter(|m| !m.recovered) {
        h.update(m.role.as_bytes());
        h.update([0]);
        h.update(m.content.as_bytes());
        h.update([0]);
        if let Some(r) = &m.reasoning_content {
            h.update(r.as_bytes());
        }
        h.update([0]);
        if let Some(t) = &m.tool_calls {
            h.update(t.as_bytes());
        }
        h.update([1]);
    }
    hex::encode(h.finalize())
}

fn is_observation_role(role: &str) -> bool {
    role == "user" || role == "tool"
}

/// The exit status of the run's exit record when it is the next message
/// after the assistant turn at `idx` and that turn's observations.
fn exit_status_after(raw: &RawTrajectory, idx: usize) -> Option<&str> {
    let after = raw.messages[idx + 1..]
        .iter()
        .find(|m| !is_observation_role(&m.role))?;
    (after.role == "exit").then(|| raw.exit_status.as_deref().unwrap_or(""))
}

/// `derive`, with a panic in a turn rule turned into a field error that names
/// the rule's message, so one odd record becomes a reject instead of ending
/// the whole ingest; a trajectory over the message limit is refused.
pub fn derive_checked(raw: RawTrajectory) -> FieldResult<TrajectoryRows> {
    let most = crate::limits::get().messages;
    if raw.messages.len() > most {
        return Err(FieldError::new(
            "messages",
            format!(
                "{} messages, more than the limit of {most} (--max-messages)",
                raw.messages.len()
            ),
        ));
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || derive(raw))).map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        FieldError::new(
            "turns",
            format!("a turn rule failed on this record ({msg}); please report it with this reject"),
        )
    })
}

pub fn derive(mut raw: RawTrajectory) -> TrajectoryRows {
    let traj_sha = raw
        .messages_sha
        .take()
        .unwrap_or_else(|| messages_sha(&raw.messages));
    debug_assert_eq!(traj_sha, messages_sha(&raw.messages));
    let mut content_shas = Vec::with_capacity(raw.messages.len());
    let mut chain = Sha256::new();
    let mut turn_shas = Vec::new();
    for m in &raw.messages {
        // The chain runs over each content digest's full hex.
        let mut content_sha = [0u8; 64];
        hex::encode_to_slice(Sha256::digest(m.content.as_bytes()), &mut content_sha)
            .expect("32 bytes are 64 hex digits");
        // A recovered response keys its turn like any other but stays out of
        // the chain: the turns after it keep the key of the messages sent.
        let turn_chain = if m.recovered {
            let mut own = chain.clone();
            own.update(content_sha);
            own
        } else {
            chain.update(content_sha);
            chain.clone()
        };
        if m.role == "assistant" {
            turn_shas.push(stored_hex(&turn_chain.finalize()));
        }
        content_shas.push(stored_hex_digits(&content_sha));
    }

    // The first observation: the first user/tool message that answers an assistant.
    let obs_format = raw
        .messages
        .windows(2)
        .find(|w| w[0].role == "assistant" && !w[0].recovered && is_observation_role(&w[1].role))
        .map(|w| detect_obs_format(&w[1].content));

    let marker = raw.submit_marker.as_deref();
    let mut turns = Vec::with_capacity(turn_shas.len());
    let mut candidate = 0;
    for (idx, m) in raw
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == "assistant")
    {
        // A tool-call response's actions are its calls' commands, never its prose.
        let blocks: Vec<String> = if m.actions.is_empty() && m.tool_calls_complete.is_none() {
            extract_bash_blocks(action_text(&m.content, m.reasoning_content.as_deref()))
                .into_iter()
                .map(str::to_string)
                .collect()
        } else {
            m.actions.clone()
        };
        // What the agent executed: nothing of a response it rejected
        // (`n_bash_blocks` still counts what that response proposed).
        let proposed = blocks.len();
        let blocks = if m.recovered { Vec::new() } else { blocks };
        let command = blocks.first().cloned();
        let next = raw
            .messages
            .get(idx + 1)
            .filter(|n| is_observation_role(&n.role));
        // A rejected response ran nothing: it cannot submit, and what came
        // back is the agent's complaint, a failure with no return code.
        let signal = if m.recovered {
            None
        } else {
            submit_signal(
                command.as_deref(),
                next.map(|n| n.content.as_str()),
                exit_status_after(&raw, idx),
                marker,
            )
        };
        let kind = turn_kind(command.as_deref(), signal.is_some(), marker);
        let outcome = if m.recovered {
            Some(ObsOutcome {
                failed: true,
                returncode: None,
            })
        } else {
            next.map(|n| {
                observation_outcome(obs_format.unwrap_or(ObsFormat::OpenHands), &n.content)
            })
        };
        let unclosed = think_unclosed(&m.content);
        let parsed = m.format_error.is_none()
            && !m.recovered
            && !unclosed
            && match m.tool_calls_complete {
                Some(complete) => complete && !blocks.is_empty(),
                None => proposed == 1,
            };
        let candidate_n = if m.score_target {
            candidate += 1;
            Some(candidate)
        } else {
            None
        };
        let t = turns.len() as i32 + 1;
        turns.push(TurnRow {
            traj_id: raw.traj_id.clone(),
            source: raw.source.to_string(),
            t,
            msg_idx: idx as i32,
            candidate_n,
            n_bash_blocks: proposed as i32,
            cmd_kind: kind.as_str().to_string(),
            obs_failed: outcome.map(|o| o.failed),
            returncode: outcome.and_then(|o| o.returncode),
            think_unclosed: unclosed,
            is_submit: signal.is_some(),
            submit_signal: signal.map(|s| s.as_str().to_string()),
            is_repeat: false,
            repeats_prev: false,
            prev_failed: false,
            after_repeat_run: false,
            prior_failures: 0,
            is_last: false,
            turn_sha: turn_shas[t as usize - 1].clone(),
            command,
            commands: blocks,
            format_error: m.format_error.clone(),
            parsed,
        });
    }
    // Loop metrics: over scored outputs for a judged side, else over every turn.
    let scored_only = turns.iter().any(|t| t.candidate_n.is_some());
    let (repeats, same_as_prev, metrics) = {
        // Each command in the form repeats compare, taken once per turn.
        let normal: Vec<Option<Cow<str>>> = turns
            .iter()
            .map(|t| t.command.as_deref().map(normalize_command))
            .collect();
        let repeats = repeat_flags(
            turns
                .iter()
                .zip(&normal)
                .map(|(t, n)| n.as_deref().filter(|_| !t.is_submit)),
        );
        let same_as_prev: Vec<bool> = (0..normal.len())
            .map(|i| i > 0 && normal[i].is_some() && normal[i - 1] == normal[i])
            .collect();
        let metrics = loop_metrics_normalized(
            turns
                .iter()
                .zip(&normal)
                .filter(|(t, _)| !t.is_submit && (!scored_only || t.candidate_n.is_some()))
                .filter_map(|(_, n)| n.as_deref()),
        );
        (repeats, same_as_prev, metrics)
    };
    for (turn, rep) in turns.iter_mut().zip(repeats) {
        turn.is_repeat = rep;
    }
    link_neighbours(&mut turns, &same_as_prev);
    let n_scored = if scored_only {
        candidate
    } else {
        turns.len() as i32
    };
    let first_own = raw
        .messages
        .iter()
        .position(|m| m.score_target || m.environment_observation);
    let source = raw.source.to_string();
    // The recorded text moves into the rows: it is the bulk of an ingest's bytes.
    let messages = raw
        .messages
        .into_iter()
        .zip(content_shas)
        .enumerate()
        .map(|(idx, (m, content_sha))| MessageRow {
            fields_sha: Some(m.fields_sha()),
            traj_id: raw.traj_id.clone(),
            source: source.clone(),
            idx: idx as i32,
            role: m.role,
            content: m.content,
            reasoning_content: m.reasoning_content,
            tool_calls: m.tool_calls,
            score_target: m.score_target,
            environment_observation: m.environment_observation,
            is_context: first_own.is_some_and(|f| idx < f),
            content_sha,
            tool_call_id: m.tool_call_id,
            recovered: m.recovered.then_some(true),
            extra: m.extra,
        })
        .collect();
    let trajectory = TrajectoryRow {
        traj_id: raw.traj_id,
        source,
        eval_run_id: raw.eval_run_id,
        sample_id: raw.sample_id,
        side: raw.side,
        model: raw.model,
        instance_id: raw.instance_id,
        score: raw.score,
        verified: raw.verified,
        judged: raw.judged,
        n_turns: turns.len() as i32,
        n_scored,
        obs_format: obs_format.map(|f| f.as_str().to_string()),
        dup_cmd_ratio: metrics.dup_cmd_ratio,
        max_cmd_run: metrics.max_cmd_run as i32,
        looped: raw.judge_looped || metrics.validator_looped(),
        exit_status: raw.exit_status,
        submit_marker: raw.submit_marker,
        error: raw.error,
        traj_sha,
        input_file: raw.input_file,
        input_row: raw.input_row,
        tools: raw.tools,
        prompt_text: raw.prompt_text,
    };
    TrajectoryRows {
        trajectory,
        messages,
        turns,
    }
}

/// What each turn inherits from the ones before it: the previous observation's
/// failure (and how many failed in a row, over the whole trajectory, shared
/// context included), whether the two commands before it are one repeat run,
/// whether this command equals the previous one (`same_as_prev`, as repeats
/// compare them); and which turn is last.
fn link_neighbours(turns: &mut [TurnRow], same_as_prev: &[bool]) {
    let mut failures = 0;
    for i in 0..turns.len() {
        if i > 0 {
            let (before, rest) = turns.split_at_mut(i);
            let (prev, cur) = (&before[i - 1], &mut rest[0]);
            let failed = prev.obs_failed == Some(true);
            failures = if failed { failures + 1 } else { 0 };
            cur.prev_failed = failed;
            cur.prior_failures = failures;
            cur.after_repeat_run = prev.repeats_prev;
            cur.repeats_prev = same_as_prev[i];
        }
    }
    if let Some(last) = turns.last_mut() {
        last.is_last = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{sha256_hex, STORED_SHA_HEX};

    fn msg(role: &str, content: &str) -> RawMessage {
        RawMessage {
            role: role.into(),
            content: content.into(),
            ..Default::default()
        }
    }

    #[test]
    fn turns_numbering_observations_and_repeats() {
        let mut raw = RawTrajectory {
            traj_id: "x".into(),
            source: "mswea",
            ..Default::default()
        };
        raw.messages = vec![
            msg("system", "sys"),
            msg("user", "task"),
            msg("assistant", "THOUGHT: a\n\n```bash\nls -la\n```"),
            msg("user", "<returncode>0</returncode>\n<output>\n</output>"),
            msg("assistant", "THOUGHT: b\n\n```bash\ncat x.py\n```"),
            msg("user", "<returncode>1</returncode>\n<output>\ncat: x.py: No such file or directory\n</output>"),
            msg("assistant", "<think>\nhmm ```bash\nls -la\n```"),
            msg("user", "<returncode>0</returncode>\n<output>\n</output>"),
            msg("assistant", "done\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"),
        ];
        let rows = derive(raw);
        assert_eq!(rows.messages.len(), 9);
        let t = &rows.turns;
        assert_eq!(t.len(), 4);
        assert_eq!(t.iter().map(|t| t.t).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        assert_eq!(t[0].cmd_kind, "find/ls");
        assert_eq!(t[1].obs_failed, Some(true));
        assert_eq!(t[1].returncode, Some(1));
        assert!(t[2].is_repeat && t[2].think_unclosed);
        assert!(t[3].is_submit && t[3].obs_failed.is_none());
        assert!(
            t[2].prev_failed
                && t[2].prior_failures == 1
                && !t[3].prev_failed
                && !t[3].after_repeat_run
        );
        assert_eq!(t[3].submit_signal.as_deref(), Some("command"));
        assert_eq!(t[3].cmd_kind, "submit");
        assert!(t[3].is_last && !t[2].is_last && !t[2].repeats_prev);
        assert_eq!(rows.trajectory.obs_format.as_deref(), Some("RETURNCODE"));
        assert!((rows.trajectory.dup_cmd_ratio - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(rows.trajectory.max_cmd_run, 1);
        // a chained hash tells identical commands at different positions apart
        assert_ne!(t[0].turn_sha, t[2].turn_sha);
        // stored digests are the sha256's first 64 bits
        for m in &rows.messages {
            assert_eq!(m.content_sha.len(), STORED_SHA_HEX);
            assert!(sha256_hex(m.content.as_bytes()).starts_with(&m.content_sha));
        }
        assert!(t.iter().all(|t| t.turn_sha.len() == STORED_SHA_HEX));
    }

    #[test]
    fn repeat_runs_and_submit_signals() {
        let obs = |s: &str| {
            msg(
                "tool",
                &format!("<returncode>0</returncode>\n<output>\n{s}\n</output>"),
            )
        };
        let cmd = |c: &str| msg("assistant", &format!("```bash\n{c}\n```"));
        let mut raw = RawTrajectory {
            traj_id: "r".into(),
            source: "mswea",
            exit_status: Some("Submitted".into()),
            ..Default::default()
        };
        raw.messages = vec![
            msg("system", "s"),
            msg("user", "u"),
            cmd("ls"),
            obs("a"),
            cmd("ls "),
            obs("a"),
            cmd("cat -n a.py"),
            obs("1"),
            cmd("bash submit.sh"),
            obs("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff"),
            cmd("git diff --cached"),
            msg("exit", ""),
        ];
        let t = derive(raw.clone()).turns;
        let run: Vec<_> = t
            .iter()
            .map(|t| (t.repeats_prev, t.after_repeat_run))
            .collect();
        assert_eq!(
            run,
            vec![
                (false, false),
                (true, false),
                (false, true),
                (false, false),
                (false, false)
            ]
        );
        let sig: Vec<_> = t.iter().map(|t| t.submit_signal.as_deref()).collect();
        assert_eq!(
            sig,
            vec![None, None, None, Some("observation"), Some("exit")]
        );
        assert!(t[3].is_submit && t[3].cmd_kind == "submit" && t[4].cmd_kind == "submit");
        raw.exit_status = Some("LimitsExceeded".into());
        assert!(!derive(raw).turns[4].is_submit);
    }

    #[test]
    fn scored_turns_are_numbered_per_side() {
        let mut raw = RawTrajectory {
            traj_id: "s".into(),
            source: "albedo",
            ..Default::default()
        };
        let own = |role: &str, c: &str, st: bool, eo: bool| RawMessage {
            score_target: st,
            environment_observation: eo,
            ..msg(role, c)
        };
        raw.messages = vec![
            msg("system", "s"),
            msg("user", "u"),
            msg("assistant", "```bash\nls\n```"),
            msg("user", "a\n[The command completed with exit code 0.]"),
            own("assistant", "```bash\ncat -n a\n```", true, false),
            own(
                "user",
                "x\n[The command completed with exit code 2.]",
                false,
                true,
            ),
            own("assistant", "```bash\ncat -n a\n```", true, false),
        ];
        let rows = derive(raw);
        let c: Vec<_> = rows.turns.iter().map(|t| t.candidate_n).collect();
        assert_eq!(c, vec![None, Some(1), Some(2)]);
        assert_eq!(rows.trajectory.n_scored, 2);
        assert_eq!(rows.trajectory.max_cmd_run, 2);
        assert!(rows.messages[..4].iter().all(|m| m.is_context));
        assert!(!rows.messages[4].is_context);
        assert_eq!(rows.turns[1].obs_failed, Some(true));
    }
}
