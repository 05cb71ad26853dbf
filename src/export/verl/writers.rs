//! Writing the export's files: each trajectory assembled from its recorded
//! messages into its JSONL line and its RL and SFT Parquet rows.

use super::shapes::*;
use super::*;

/// The files being written, in a scratch folder.
pub(super) struct Writers {
    pub(super) jsonl: std::io::BufWriter<std::fs::File>,
    pub(super) rl: parquet::arrow::ArrowWriter<std::fs::File>,
    pub(super) sft: parquet::arrow::ArrowWriter<std::fs::File>,
    pub(super) rl_rows: Vec<u8>,
    pub(super) sft_rows: Vec<u8>,
    pub(super) pending: usize,
}

pub(super) const PARQUET_BATCH: usize = 256;

impl Writers {
    pub(super) fn create(dir: &Path) -> Result<Writers, ExportError> {
        let file = |name: &str| std::fs::File::create(dir.join(name));
        Ok(Writers {
            jsonl: std::io::BufWriter::new(file(FILES[0])?),
            rl: parquet::arrow::ArrowWriter::try_new(file(FILES[1])?, rl_schema(), None)?,
            sft: parquet::arrow::ArrowWriter::try_new(file(FILES[2])?, sft_schema(), None)?,
            rl_rows: Vec::new(),
            sft_rows: Vec::new(),
            pending: 0,
        })
    }

    pub(super) fn flush_parquet(&mut self) -> Result<(), ExportError> {
        for (rows, writer, schema) in [
            (&mut self.rl_rows, &mut self.rl, rl_schema()),
            (&mut self.sft_rows, &mut self.sft, sft_schema()),
        ] {
            if rows.is_empty() {
                continue;
            }
            let reader = arrow::json::ReaderBuilder::new(schema)
                .with_batch_size(PARQUET_BATCH)
                .build(std::io::Cursor::new(std::mem::take(rows)))?;
            for batch in reader {
                writer.write(&batch?)?;
            }
        }
        self.pending = 0;
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<(), ExportError> {
        self.flush_parquet()?;
        self.jsonl.flush()?;
        self.rl.close()?;
        self.sft.close()?;
        Ok(())
    }
}

/// Assemble one trajectory from its recorded messages and write its line and rows.
pub(super) fn write_trajectory(
    w: &mut Writers,
    summary: &mut VerlSummary,
    counter: &mut super::tokens::TokenCounter,
    opts: &VerlOptions,
    id: &str,
    tr: &Trajectory,
    recorded: &Recorded,
) -> Result<(), ExportError> {
    let messages = &recorded.messages;
    let label_source = if tr.judged { "judge" } else { "scorer" };
    let mut turns = Vec::with_capacity(tr.turns.len());
    for (i, turn) in tr.turns.iter().enumerate() {
        let label = turn.label.ok_or_else(|| ExportError::NoLabel {
            traj_id: id.to_string(),
            t: turn.t,
            hint: if tr.judged {
                "turn_credit is older than the lake's turns: run turnlake credit".into()
            } else {
                "turn_labels is older than the lake's turns: run turnlake scorer label".into()
            },
        })?;
        let at = usize::try_from(turn.msg_idx)
            .ok()
            .filter(|&i| i < messages.len())
            .ok_or_else(|| ExportError::Integrity {
                traj_id: id.to_string(),
                reason: format!("turn {} has no recorded message {}", turn.t, turn.msg_idx),
            })?;
        turns.push(TurnOut {
            t: turn.t,
            turn_sha: &turn.turn_sha,
            prompt: recorded.sent_before(at),
            prompt_text: tr.prompt_text.as_deref().filter(|_| i == 0),
            response: &messages[at],
            r_turn: if label { 1 } else { -1 },
            parsed: turn.parsed,
        });
    }
    let t_exit = tr.turns.iter().find(|t| t.exits).map(|t| t.t);
    let t_last_evidence = tr
        .turns
        .iter()
        .filter(|t| t.label == Some(true))
        .map(|t| t.t)
        .max();
    let r_format = tr.turns.iter().all(|t| t.parsed) as i64;
    let out = TrajectoryOut {
        trajectory_id: id,
        source: &tr.source,
        sample_id: tr.sample_id.as_deref(),
        side: tr.side.as_deref(),
        tools: tr.tools.as_ref().map(|(_, v)| v),
        r_exit: r_exit(t_exit, t_last_evidence),
        r_format,
        r_outcome: tr.r_outcome,
        r_judge: tr.r_judge,
        t_exit,
        t_last_evidence,
        label_source,
        turns,
    };
    serde_json::to_writer(&mut w.jsonl, &out).map_err(std::io::Error::from)?;
    w.jsonl.write_all(b"\n")?;

    let first = tr
        .turns
        .first()
        .map_or(messages.len(), |t| t.msg_idx as usize);
    let last = tr
        .turns
        .last()
        .map_or(messages.len(), |t| t.msg_idx as usize + 1);
    let tools = tr.tools.as_ref().map(|(text, _)| text.as_str());
    let for_parquet = |end: usize| {
        recorded
            .sent_before(end)
            .into_iter()
            .map(parquet_message)
            .collect::<Vec<_>>()
    };
    let r_turn: Vec<i64> = out.turns.iter().map(|t| t.r_turn).collect();
    let ground_truth = serde_json::json!({
        "r_turn": r_turn, "r_format": r_format, "r_exit": out.r_exit, "r_outcome": out.r_outcome,
        "r_judge": out.r_judge, "alpha": opts.alpha,
    });
    let rl = RlRow {
        data_source: format!("turnlake/{}", tr.source),
        agent_name: tools.map(|_| "tool_agent"),
        prompt: for_parquet(first),
        tools,
        ability: "coding-agent",
        reward_model: RewardModel {
            style: "turnlake",
            ground_truth: ground_truth.to_string(),
        },
        extra_info: ExtraInfo {
            split: "train",
            index: summary.trajectories as i64,
            trajectory_id: id,
            source: &tr.source,
            sample_id: tr.sample_id.as_deref(),
            side: tr.side.as_deref(),
            label_source,
            alpha: opts.alpha,
            turn_t: out.turns.iter().map(|t| t.t).collect(),
            r_turn,
            r_format,
            r_exit: out.r_exit,
            r_outcome: out.r_outcome,
            r_judge: out.r_judge,
            t_exit,
            t_last_evidence,
            prompt_text: tr.prompt_text.as_deref(),
            instance_id: tr.instance_id.as_deref(),
        },
    };
    serde_json::to_writer(&mut w.rl_rows, &rl).map_err(std::io::Error::from)?;
    w.rl_rows.push(b'\n');
    counter.count(
        id,
        &recorded.sent_before(first),
        &recorded.sent_before(last),
        tr.tools.as_ref().map(|(_, v)| v),
    )?;
    // The messages that are turns whose label is true train.
    let trained: std::collections::HashSet<i64> = tr
        .turns
        .iter()
        .filter(|t| t.label == Some(true))
        .map(|t| t.msg_idx)
        .collect();
    let sft = SftRow {
        trajectory_id: id,
        messages: recorded
            .sent_indexed_before(last)
            .map(|(idx, m)| SftMessage {
                message: parquet_message(m),
                train: trained.contains(&(idx as i64)),
            })
            .collect(),
        tools,
    };
    serde_json::to_writer(&mut w.sft_rows, &sft).map_err(std::io::Error::from)?;
    w.sft_rows.push(b'\n');
    w.pending += 1;
    if w.pending >= PARQUET_BATCH {
        w.flush_parquet()?;
    }

    summary.trajectories += 1;
    summary.turns += out.turns.len() as u64;
    summary.r_turn_positive += out.turns.iter().filter(|t| t.r_turn == 1).count() as u64;
    summary.r_turn_negative += out.turns.iter().filter(|t| t.r_turn == -1).count() as u64;
    summary.r_format_pass += r_format as u64;
    match t_last_evidence {
        Some(t) => *summary.t_last_evidence.entry(t).or_default() += 1,
        None => summary.t_last_evidence_null += 1,
    }
    *summary.r_exit.entry(key(out.r_exit)).or_default() += 1;
    summary.r_outcome_null += out.r_outcome.is_none() as u64;
    *summary.by_source.entry(tr.source.clone()).or_default() += 1;
    *summary
        .label_sources
        .entry(label_source.to_string())
        .or_default() += out.turns.len() as u64;
    Ok(())
}
