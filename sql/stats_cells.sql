-- Where credit lives, counted over one bucket of sides (turnlake stats). Reads: turns,
-- turn_credit, judgments, trajectories, each holding only the bucket's sides. The figures
-- of sql/stats.sql over scored turns, explanations and judged turns are ratios of sums of
-- these counts over the buckets, so no join holds more than one bucket.

-- Scored turns counted by command kind, turn index, whether the turn's own observation
-- failed (null when none follows) and whether the observation before it failed (the
-- previous turn may be a context turn).
CREATE VIEW bucket_cells AS
SELECT s.cmd_kind, s.t, s.obs_failed AS own_failed, s.prev_failed AS after_failure,
       count(*) AS turns,
       sum(c.credit) AS credit,
       count(*) FILTER (WHERE c.credit > 0) AS earning
FROM turns s
JOIN turn_credit c ON c.traj_id = s.traj_id AND c.t = s.t
WHERE s.source = 'albedo'
GROUP BY s.cmd_kind, s.t, s.obs_failed, s.prev_failed;

-- The explanations of credited sides: how many cite an output, how many say yes.
CREATE VIEW bucket_citing AS
SELECT count(*) AS explanations,
       count(*) FILTER (WHERE cardinality(cited_outputs) > 0) AS citing,
       count(*) FILTER (WHERE answer = 1) AS yes,
       count(*) FILTER (WHERE answer = 1 AND cardinality(cited_outputs) = 0) AS yes_uncited
FROM judgments
WHERE traj_id IN (SELECT traj_id FROM turn_credit);

-- The turns of judged Albedo sides.
CREATE VIEW bucket_judged_turns AS
SELECT count(*) AS albedo_turns
FROM turns u JOIN trajectories s ON s.traj_id = u.traj_id
WHERE s.source = 'albedo' AND s.judged;
