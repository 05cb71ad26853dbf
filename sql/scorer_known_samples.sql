-- The Albedo samples the lake knows, which turnlake scorer score matches a user's own runs
-- against. Reads: scorer_sides (sql/scorer_lake_sides.sql), messages, trajectories, evals.
-- Defines: scorer_known_samples.

-- Each Albedo sample the lake knows (per eval run): where its scored outputs start, how many
-- there are, the king's judge score, the task (the first user message) and the run's
-- required win margin; what a user's own runs are matched and compared against.
CREATE VIEW scorer_known_samples AS
WITH tasks AS (
  SELECT traj_id, content FROM (
    SELECT m.traj_id, m.content, row_number() OVER (PARTITION BY m.traj_id ORDER BY m.idx) AS k
    FROM messages m JOIN scorer_sides s ON s.traj_id = m.traj_id
    WHERE m.role = 'user') x
  WHERE k = 1)
SELECT s.eval_run_id, s.sample_id, min(s.first_t) AS first_t,
       max(s.last_t - s.first_t + 1) AS n_scored,
       max(tr.score) FILTER (WHERE s.side = 'previous_king') AS king_score,
       min(t.content) AS task, max(e.required_win_margin) AS required_win_margin
FROM scorer_sides s
JOIN trajectories tr ON tr.traj_id = s.traj_id
LEFT JOIN tasks t ON t.traj_id = s.traj_id
LEFT JOIN evals e ON e.eval_run_id = s.eval_run_id
GROUP BY s.eval_run_id, s.sample_id;
