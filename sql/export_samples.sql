-- Known judged Albedo samples as the inputs a user's model continues (turnlake export
-- samples): one per sample_id (its first eval run by id, as `scorer score` matches a
-- run to a sample), from its king side: the rendered prompt, the context before the
-- first scored turn, the task text and the king's judged score.
-- Reads: trajectories, turns, messages, export_runs(eval_run_id) (empty: every run).
-- Defines: export_samples, export_sample_messages.
CREATE VIEW export_samples AS
SELECT k.traj_id, k.eval_run_id, k.sample_id, k.king_score, k.prompt_text, f.upto_msg
FROM (SELECT tr.traj_id, tr.eval_run_id, tr.sample_id, tr.score AS king_score, tr.prompt_text,
             row_number() OVER (PARTITION BY tr.sample_id ORDER BY tr.eval_run_id) AS k
      FROM trajectories tr
      WHERE tr.source = 'albedo' AND tr.judged AND tr.side = 'previous_king'
        AND ((SELECT count(*) FROM export_runs) = 0
             OR tr.eval_run_id IN (SELECT eval_run_id FROM export_runs))) k
JOIN (SELECT traj_id, min(msg_idx) AS upto_msg FROM turns
      WHERE source = 'albedo' AND candidate_n IS NOT NULL GROUP BY traj_id) f ON f.traj_id = k.traj_id
WHERE k.k = 1;

-- The recorded messages before each exported sample's first scored turn.
CREATE VIEW export_sample_messages AS
SELECT m.traj_id, m.idx, m.role, m.content
FROM messages m
JOIN export_samples s ON s.traj_id = m.traj_id AND m.idx < s.upto_msg
WHERE NOT coalesce(m.recovered, false);
