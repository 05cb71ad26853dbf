-- What sql/select_runs.sql reads of the runs (turnlake select): those of the sources
-- select_run_sources lists (select.toml's runs.sources; mini_coder by default).
-- Reads: trajectories, turns, select_params, select_run_sources.
-- Builds: run_trajectories and run_turns. To run sql/select_runs.sql once per part of the
-- runs, turnlake select writes these rows to a folder per part (one pass over the lake) and
-- reads each part's in place of these views.

CREATE VIEW run_trajectories AS
SELECT traj_id, source, instance_id, verified
FROM trajectories
WHERE source IN (SELECT source FROM select_run_sources);

-- Only the turns a product can use: a run's closing submit, the escape_mini candidates and
-- the turns a finish_mini pick may take (sql/select_runs.sql applies each rule in full).
CREATE VIEW run_turns AS
SELECT x.traj_id, x.t, x.msg_idx, x.n_bash_blocks, x.think_unclosed, x.is_submit, x.is_last,
       x.command IS NOT NULL AS has_command, x.is_repeat, x.obs_failed, x.after_repeat_run,
       x.repeats_prev, x.prior_failures, x.format_error
FROM select_params p
CROSS JOIN turns x
WHERE x.source IN (SELECT source FROM select_run_sources)
  AND ((x.is_last AND x.is_submit)
       OR (x.after_repeat_run AND NOT x.repeats_prev AND x.command IS NOT NULL
           AND x.t BETWEEN p.escape_t_min AND p.escape_t_max)
       OR (x.command IS NOT NULL AND NOT x.is_repeat AND NOT x.is_submit AND x.obs_failed = false
           AND x.t BETWEEN p.finish_t_min AND p.finish_t_max));
