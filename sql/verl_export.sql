-- The verl export's relational part (turnlake export verl): the exported
-- trajectories and each one's own turns with its label, joined by turn_sha
-- (a content hash), never by position.
-- Reads: trajectories, turns, turn_credit (judged turns), turn_labels (the
-- turn-credit model's labels of unjudged turns), verl_sources(source).
-- Defines: verl_trajectories, verl_turns, verl_messages.

-- Albedo sides the judge scored, and every run of the other sources.
CREATE VIEW verl_trajectories AS
SELECT tr.traj_id, tr.source, tr.sample_id, tr.side, tr.instance_id, tr.judged, tr.tools, tr.prompt_text,
       CASE WHEN tr.judged THEN tr.score END AS r_judge,
       CASE WHEN tr.verified IS NULL THEN NULL WHEN tr.verified THEN 1.0 ELSE 0.0 END AS r_outcome
FROM trajectories tr
WHERE tr.source IN (SELECT source FROM verl_sources)
  AND (tr.source <> 'albedo' OR tr.judged);

-- A trajectory's own turns: an Albedo side's scored outputs, every turn of
-- the others. parsed: the agent could execute the response (turns.parsed: text with
-- exactly one bash block or tool calls each with a command, no format error, no unclosed
-- <think>; lakes written before it: exactly one bash block and no unclosed <think>).
-- exits: the recorded exit (the submit command, its observation, or the exit record).
CREATE VIEW verl_turns AS
SELECT u.traj_id, u.t, u.msg_idx, u.turn_sha,
       coalesce(u.parsed, u.n_bash_blocks = 1 AND NOT coalesce(u.think_unclosed, false), false) AS parsed,
       u.submit_signal IS NOT NULL AS exits,
       CASE WHEN tr.judged THEN c.credit > 0 ELSE l.earns_credit END AS label,
       CASE WHEN tr.judged THEN 'judge' ELSE 'scorer' END AS label_source,
       CASE WHEN tr.judged THEN NULL ELSE l.model_id END AS label_model
FROM verl_trajectories tr
JOIN turns u ON u.traj_id = tr.traj_id AND (NOT tr.judged OR u.candidate_n IS NOT NULL)
LEFT JOIN turn_credit c ON c.traj_id = u.traj_id AND c.turn_sha = u.turn_sha
LEFT JOIN turn_labels l ON l.traj_id = u.traj_id AND l.turn_sha = u.turn_sha;

-- The exported trajectories' recorded messages in order, each with whether it was sent to
-- the model (a response the agent rejected was not) and still has the digests ingest stored.
CREATE VIEW verl_messages AS
SELECT m.traj_id, m.idx, m.role, m.content, m.reasoning_content, m.tool_calls, m.tool_call_id,
       coalesce(m.recovered, false) AS recovered,
       content_intact(m.content, m.content_sha, m.reasoning_content, m.tool_calls,
                      m.tool_call_id, m.fields_sha) AS intact
FROM messages m
WHERE m.traj_id IN (SELECT traj_id FROM verl_trajectories)
ORDER BY m.traj_id, m.idx;
