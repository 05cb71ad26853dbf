-- The credit gates of each judged Albedo side (turnlake select): not looped (the judge's
-- verdict or the loop metrics), score, duplicate-command ratio and command run. Run over
-- the whole lake (for credit_keep.sql) and over each bucket (for select_sides.sql).
-- Reads: trajectories, judgments, select_params. Defines: side_gates.

CREATE OR REPLACE VIEW side_gates AS
SELECT s.traj_id, s.eval_run_id, s.sample_id, s.score,
       NOT (coalesce(j.judge_looped, false)
            OR s.dup_cmd_ratio >= p.loop_dup_ratio OR s.max_cmd_run >= p.loop_max_run)
       AND coalesce(s.score, 0.0) >= p.min_score
       AND s.dup_cmd_ratio <= p.max_dup_cmd_ratio
       AND s.max_cmd_run <= p.max_cmd_run AS passed
FROM select_params p
CROSS JOIN trajectories s
LEFT JOIN (SELECT traj_id, bool_or(looped) AS judge_looped FROM judgments GROUP BY traj_id) j ON j.traj_id = s.traj_id
WHERE s.source = 'albedo' AND s.judged;
