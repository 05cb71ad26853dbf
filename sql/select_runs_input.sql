-- What sql/select_runs.sql reads of the runs (turnlake select): those of the sources
-- select_run_sources lists (select.toml's runs.sources; mini_coder by default).
-- Reads: trajectories, turns, select_params, select_run_sources.
-- Builds: run_trajectories (and run_count, how many) and run_turns. To run sql/select_runs.sql once per part of the
-- runs, turnlake select writes these rows to a folder per part (one pass over the lake) and
-- reads each part's in place of these views.

CREATE VIEW run_trajectories AS
SELECT traj_id, source, instance_id, verified
FROM trajectories
WHERE source IN (SELECT source FROM select_run_sources);

CREATE VIEW run_count AS SELECT count(*) AS n FROM run_trajectories;

-- Only the turns a product can use, each with the rule it meets. This is the one home of
-- the turn rules of escape_mini and finish_mini (sql/select_runs.sql picks among them):
-- escape_candidate: in turns escape_t_min..escape_t_max, the two commands before the turn
--   are one repeat run and the turn's own command differs from it.
-- finish_candidate: in turns finish_t_min..finish_t_max, a command that repeats no earlier
--   command, is not a submit, and whose observation did not fail.
-- closing_submit: the run's last turn, a submit.
CREATE VIEW run_turns_ruled AS
SELECT x.traj_id, x.t, x.msg_idx, x.n_bash_blocks, x.think_unclosed, x.is_submit, x.prior_failures,
       x.format_error,
       coalesce(x.is_last AND x.is_submit, false) AS closing_submit,
       coalesce(x.after_repeat_run AND NOT x.repeats_prev AND x.command IS NOT NULL
                AND x.t BETWEEN p.escape_t_min AND p.escape_t_max, false) AS escape_candidate,
       coalesce(x.command IS NOT NULL AND NOT x.is_repeat AND NOT x.is_submit AND x.obs_failed = false
                AND x.t BETWEEN p.finish_t_min AND p.finish_t_max, false) AS finish_candidate
FROM select_params p
CROSS JOIN turns x
WHERE x.source IN (SELECT source FROM select_run_sources);

CREATE VIEW run_turns AS
SELECT * FROM run_turns_ruled WHERE closing_submit OR escape_candidate OR finish_candidate;
