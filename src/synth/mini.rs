//! Synthetic mini-coder Parquet shards (`data/train-000NN-of-000MM.parquet`)
//! and mini-swe-agent `*.traj.json` files (v1 text actions, v2 tool calls).

use arrow::array::{ArrayRef, BooleanBuilder, ListBuilder, StringBuilder, StructBuilder};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

use super::params::{KindTable, Params};
use super::plan::{plan_turns, PlannedTurn, Stretch};
use super::rng::Rng;
use super::text::{assistant, command, observation, Dialect, Repo};
use super::Counts;
use crate::turn::ObsFormat;

const SYSTEM: &str = "You are a helpful assistant that can interact with a computer.\n\nYour response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).\nInclude a THOUGHT section before your command where you explain your reasoning process.";
const MARKER: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
/// About one instance per this many trajectories (the reference: 396,382
/// trajectories of some 20,000 instances).
const INSTANCE_SHARE_DIVISOR: u64 = 20;
/// Rows per shard, as in the real corpus.
pub const SHARD_ROWS: u64 = 6600;
const BATCH: u64 = 256;

/// How a run's closing submit shows, so every submit signal occurs: the
/// command echoes the marker; a script prints it as the next observation's
/// first line; or only the exit record (`Submitted`) follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubmitStyle {
    Echo,
    Script,
    ExitOnly,
}

/// One planned trajectory with its rendered messages.
struct Rendered {
    instance_id: String,
    messages: Vec<(String, String)>,
    plan: Vec<PlannedTurn>,
    commands: Vec<String>,
    repo: Repo,
}

/// One of `pool` instance ids, the same for the same `which % pool`: several
/// trajectories share an instance, as in the real corpus.
fn instance_id(base: &Rng, pool: u64, which: u64) -> String {
    let mut r = base.fork(which % pool.max(1));
    let repo = Repo::new(&mut r);
    format!(
        "{}.{}.func_pm_remove_cond__{}",
        repo.root
            .trim_start_matches("/workspace/")
            .trim_end_matches("__1.0"),
        r.hex(7),
        r.hex(4)
    )
}

fn render(
    rng: &mut Rng,
    p: &Params,
    k: &KindTable,
    n_turns: (u32, u32),
    instance: String,
    malformed: bool,
    (format, submit): (ObsFormat, SubmitStyle),
) -> Rendered {
    let m = &p.model;
    let repo = Repo::new(rng);
    let n = rng.range(n_turns.0 as u64, n_turns.1 as u64) as u32;
    let last_submit = rng.chance(m.mini_submit_rate);
    let plan = plan_turns(
        rng,
        k,
        m,
        &Stretch {
            n_turns: n,
            own: true,
            judged: false,
            looped: false,
            last_submit,
            ends: true,
            malformed,
            repeat_rate: m.mini_repeat_rate,
        },
        &[],
    );
    let mut messages = vec![
        ("system".to_string(), SYSTEM.to_string()),
        (
            "user".to_string(),
            format!(
                "<pr_description>\nFix the bug in {} reported as issue #{}.\n</pr_description>",
                repo.package,
                rng.range(1, 9999)
            ),
        ),
    ];
    let plain = rng.clone();
    let (mut turns, mut commands) = render_turns(rng, &plan, &repo, None, (format, submit));
    // The planted mixture effect: a run where a command repeats the one
    // before (an escape_mini candidate) thinks in one dialect, every other
    // run in the other. The turns are rendered again from the same state, so
    // the same commands come out.
    if p.plant.mixture {
        *rng = plain;
        let dialect = match commands.windows(2).any(|w| w[0] == w[1]) {
            true => Dialect::Ledger,
            false => Dialect::Probe,
        };
        (turns, commands) = render_turns(rng, &plan, &repo, Some(dialect), (format, submit));
    }
    messages.append(&mut turns);
    Rendered {
        instance_id: instance,
        messages,
        plan,
        commands,
        repo,
    }
}

/// The messages of a run's planned turns and the command each ran.
fn render_turns(
    rng: &mut Rng,
    plan: &[PlannedTurn],
    repo: &Repo,
    dialect: Option<Dialect>,
    (format, submit): (ObsFormat, SubmitStyle),
) -> (Vec<(String, String)>, Vec<String>) {
    let mut messages = Vec::new();
    let mut commands: Vec<String> = Vec::new();
    for t in plan {
        let closing = t.kind == crate::turn::CmdKind::Submit;
        let cmd = if t.repeat {
            commands.last().cloned().unwrap_or_default()
        } else if closing && submit == SubmitStyle::Script {
            "bash /tmp/submit.sh".to_string()
        } else if closing && submit == SubmitStyle::ExitOnly {
            format!("cd {} && git add -A && git diff --cached", repo.root)
        } else {
            command(rng, repo, t.kind, MARKER)
        };
        messages.push(("assistant".into(), assistant(rng, t, &cmd, "bash", dialect)));
        if t.has_obs {
            messages.push(("user".into(), observation(rng, t, &cmd, format)));
        } else if closing && submit == SubmitStyle::Script {
            messages.push((
                "user".into(),
                format!("<returncode>0</returncode>\n<output>\n{MARKER}\ndiff --git a/{0}/core.py b/{0}/core.py\n</output>", repo.package),
            ));
        }
        commands.push(cmd);
    }
    (messages, commands)
}

fn message_fields() -> Fields {
    Fields::from(vec![
        Field::new("role", DataType::Utf8, true),
        Field::new("content", DataType::Utf8, true),
    ])
}

pub fn shard_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("instance_id", DataType::Utf8, true),
        Field::new(
            "messages",
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(message_fields()),
                true,
            ))),
            true,
        ),
        Field::new("patch", DataType::Utf8, true),
        Field::new("model", DataType::Utf8, true),
        Field::new("verified", DataType::Boolean, true),
    ]))
}

/// Write `n` mini-coder trajectories as Parquet shards under `dir/data/`.
pub fn write_mini_coder(
    dir: &Path,
    rng: &Rng,
    p: &Params,
    k: &KindTable,
    n: u64,
    counts: &mut Counts,
) -> std::io::Result<()> {
    let data = dir.join("data");
    let instances = rng.fork(4_000_000);
    std::fs::create_dir_all(&data)?;
    let shards = n.div_ceil(SHARD_ROWS).max(1);
    let per_shard = n.div_ceil(shards);
    let pool = (n / INSTANCE_SHARE_DIVISOR).max(1);
    let m = &p.model;
    for shard in 0..shards {
        let mut rng = rng.fork(1_000_000 + shard);
        let path = data.join(format!("train-{shard:05}-of-{shards:05}.parquet"));
        let file = std::fs::File::create(&path)?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, shard_schema(), Some(props))
            .map_err(std::io::Error::other)?;
        let rows = per_shard.min(n - shard * per_shard);
        let mut done = 0;
        while done < rows {
            let take = BATCH.min(rows - done);
            let mut ids = StringBuilder::new();
            let mut msgs = ListBuilder::new(StructBuilder::from_fields(message_fields(), 0));
            let mut patches = StringBuilder::new();
            let mut models = StringBuilder::new();
            let mut verified = BooleanBuilder::new();
            for _ in 0..take {
                let which = rng.next_u64();
                let inst = instance_id(&instances, pool, which);
                let r = render(
                    &mut rng,
                    p,
                    k,
                    (m.mini_turns_min, m.mini_turns_max),
                    inst,
                    true,
                    (ObsFormat::Returncode, SubmitStyle::Echo),
                );
                ids.append_value(&r.instance_id);
                for (role, content) in &r.messages {
                    let sb = msgs.values();
                    sb.field_builder::<StringBuilder>(0)
                        .unwrap()
                        .append_value(role);
                    sb.field_builder::<StringBuilder>(1)
                        .unwrap()
                        .append_value(content);
                    sb.append(true);
                }
                msgs.append(true);
                patches.append_value(format!("diff --git a/{0}/core.py b/{0}/core.py\n--- a/{0}/core.py\n+++ b/{0}/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", r.repo.package));
                models.append_value("synth/mini-coder-1");
                verified.append_value(rng.chance(m.verified_rate));
                counts.mini_coder_trajectories += 1;
                counts.escape_mini_rows += super::plan::escape_mini_rows(&r.plan, &r.commands);
                counts.mini_coder_turns += r.plan.len() as u64;
                counts.mini_coder_messages += r.messages.len() as u64;
                counts.bytes += r
                    .messages
                    .iter()
                    .map(|(a, b)| a.len() + b.len())
                    .sum::<usize>() as u64;
            }
            let cols: Vec<ArrayRef> = vec![
                Arc::new(ids.finish()),
                Arc::new(msgs.finish()),
                Arc::new(patches.finish()),
                Arc::new(models.finish()),
                Arc::new(verified.finish()),
            ];
            let batch =
                RecordBatch::try_new(shard_schema(), cols).map_err(std::io::Error::other)?;
            writer.write(&batch).map_err(std::io::Error::other)?;
            done += take;
        }
        writer.close().map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// Message texts of `n` synthetic trajectories (for training a tokenizer).
pub fn sample_texts(rng: &Rng, p: &Params, k: &KindTable, n: u64) -> Vec<String> {
    let m = &p.model;
    (0..n)
        .flat_map(|i| {
            let mut rng = rng.fork(3_000_000 + i);
            let r = render(
                &mut rng,
                p,
                k,
                (m.mini_turns_min, m.mini_turns_max),
                String::new(),
                true,
                (ObsFormat::Returncode, SubmitStyle::Echo),
            );
            r.messages.into_iter().map(|(_, c)| c)
        })
        .collect()
}

/// Write `n` mini-swe-agent runs, alternating v1 and v2, under `dir`.
pub fn write_mswea(
    dir: &Path,
    rng: &Rng,
    p: &Params,
    k: &KindTable,
    n: u64,
    counts: &mut Counts,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let m = &p.model;
    for i in 0..n {
        let mut rng = rng.fork(2_000_000 + i);
        let inst = format!("{}-{}", instance_id(&rng, n, i), i);
        // v2 actions are tool calls, which cannot be malformed the way text is.
        // Every fourth v1 run records SWE-agent observations; v1 runs may
        // submit through a script, v2 runs may show only their exit record.
        let style = match i % 4 {
            0 => (ObsFormat::SweAgent, SubmitStyle::Echo),
            1 => (ObsFormat::Returncode, SubmitStyle::Echo),
            2 => (ObsFormat::Returncode, SubmitStyle::Script),
            _ => (ObsFormat::Returncode, SubmitStyle::ExitOnly),
        };
        let r = render(
            &mut rng,
            p,
            k,
            (m.mswea_turns_min, m.mswea_turns_max),
            inst,
            i % 2 == 0,
            style,
        );
        let submitted = r
            .plan
            .last()
            .is_some_and(|t| t.kind == crate::turn::CmdKind::Submit);
        let exit_status = if submitted {
            "Submitted"
        } else {
            "LimitsExceeded"
        };
        let submission = "diff --git a/x.py b/x.py\n";
        let doc = if i % 2 == 0 {
            let messages: Vec<Value> = r
                .messages
                .iter()
                .map(|(role, content)| json!({"content": content, "role": role}))
                .collect();
            json!({"info": {"exit_status": exit_status, "submission": submission, "model_stats": {"api_calls": r.plan.len(), "instance_cost": 0.0}},
                   "messages": messages, "trajectory_format": "mini-swe-agent-1"})
        } else {
            json!({"info": {"model_stats": {"api_calls": r.plan.len(), "instance_cost": 0.0}},
                   "instance_id": r.instance_id, "messages": v2_messages(&r, exit_status, submission),
                   "trajectory_format": "mini-swe-agent-1.1"})
        };
        let bytes = serde_json::to_vec_pretty(&doc)?;
        std::fs::write(dir.join(format!("{}.traj.json", r.instance_id)), &bytes)?;
        counts.mswea_trajectories += 1;
        counts.mswea_turns += r.plan.len() as u64;
        counts.mswea_messages += r.messages.len() as u64 + i % 2;
        counts.bytes += bytes.len() as u64;
    }
    Ok(())
}

/// v2 messages: tool calls for actions, `tool` observations, a closing `exit` message.
fn v2_messages(r: &Rendered, exit_status: &str, submission: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut turn = 0;
    for (role, content) in &r.messages {
        match role.as_str() {
            "assistant" => {
                let cmd = &r.commands[turn];
                let id = format!("call_{turn:02}");
                let thought = content.split("\n\n```").next().unwrap_or("").to_string();
                let call = json!([{"function": {"arguments": json!({"command": cmd}).to_string(), "name": "bash"}, "id": id, "index": 0, "type": "function"}]);
                // Every third turn keeps its text in reasoning_content, as some providers do.
                let (c, reasoning) = if turn % 3 == 2 { (String::new(), Some(thought)) } else { (thought, None) };
                let mut msg = json!({"content": c, "extra": {"actions": [{"command": cmd, "tool_call_id": id}]}, "role": "assistant", "tool_calls": call});
                if let Some(rc) = reasoning {
                    msg["reasoning_content"] = json!(rc);
                }
                out.push(msg);
                turn += 1;
            }
            "user" if turn > 0 => out.push(json!({"content": content, "role": "tool", "tool_call_id": format!("call_{:02}", turn - 1)})),
            _ => out.push(json!({"content": content, "role": role})),
        }
    }
    out.push(json!({"content": submission, "extra": {"exit_status": exit_status, "submission": submission}, "role": "exit"}));
    out
}
