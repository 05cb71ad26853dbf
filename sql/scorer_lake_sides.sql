-- The lake's judged Albedo sides as the scorer's SQL reads them (turnlake scorer features,
-- fit, score): each side with its scored outputs (the turns with a CANDIDATE OUTPUT number)
-- first..last, its turns and its messages. Albedo artifacts do not name a side's model; each
-- eval run duels one challenger against its king, so a side stands for `SIDE of RUN`.
-- Reads: trajectories, turns, messages.
-- Defines: scorer_sides, scorer_turns_src, scorer_messages_src (a user's own runs are
-- registered under the same names by turnlake scorer score).

CREATE VIEW scorer_sides AS
SELECT tr.traj_id, tr.eval_run_id, tr.sample_id, tr.side,
       coalesce(tr.model, tr.side || ' of ' || tr.eval_run_id) AS model,
       min(u.t) AS first_t, max(u.t) AS last_t
FROM trajectories tr
JOIN turns u ON u.traj_id = tr.traj_id AND u.candidate_n IS NOT NULL
WHERE tr.judged
GROUP BY tr.traj_id, tr.eval_run_id, tr.sample_id, tr.side, tr.model;

CREATE VIEW scorer_turns_src AS SELECT * FROM turns;

CREATE VIEW scorer_messages_src AS SELECT * FROM messages;
