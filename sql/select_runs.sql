-- The mini-coder products of one part of the mini-coder runs (turnlake select).
-- The runs are split into parts by a hash of traj_id, and this file runs once per part,
-- so its joins, which hold an entry per run, hold one part's runs, not the lake's.
-- Reads: run_turns and run_trajectories (sql/select_runs_input.sql: the turns a product can
-- use and the trajectories, of the part's runs of select.toml's runs.sources), select_params.
-- Builds: part_gated (the part's escape_mini and finish_mini candidates through the format
-- gate), part_finish_rows (its finish_mini rows that train, with their seeded hash) and
-- part_tally (its finish_mini counts). sql/finish_keep.sql then keeps finish_mini's rows.

-- escape_mini: a row per escape candidate (sql/select_runs_input.sql), ending at the escape.
CREATE VIEW cand_escape_mini AS
SELECT 'escape_mini' AS mix, 'escape_mini/' || x.traj_id || '/' || CAST(x.t AS VARCHAR) AS row_id, x.traj_id,
       s.source, CAST(NULL AS VARCHAR) AS sample_id, s.instance_id, x.msg_idx AS upto_msg,
       CAST(NULL AS DOUBLE) AS score, CAST(NULL AS BOOLEAN) AS passed_credit_gates, x.prior_failures, x.t,
       x.n_bash_blocks, x.think_unclosed, x.is_submit, x.format_error
FROM run_turns x
JOIN run_trajectories s ON s.traj_id = x.traj_id
WHERE x.escape_candidate;

-- finish_mini: verified mini-coder runs that end in a submit, one candidate turn each. The
-- closing submit trains when it lies in turns finish_t_min..finish_t_max; otherwise one
-- finish candidate (sql/select_runs_input.sql), chosen by the seeded hash (the lowest). The row ends at that turn. The lowest hash per
-- run is found by an aggregate, which holds one hash per run (a window would hold every
-- eligible turn).
CREATE VIEW finish_runs AS
SELECT s.traj_id, s.source, s.instance_id, e.t AS submit_t
FROM run_trajectories s
JOIN run_turns e ON e.traj_id = s.traj_id AND e.closing_submit
WHERE s.verified;

CREATE VIEW finish_eligible AS
SELECT r.traj_id, r.source, r.instance_id, x.t, x.msg_idx, x.n_bash_blocks, x.think_unclosed, x.is_submit,
       x.format_error,
       digest(CAST(p.finish_seed AS VARCHAR) || r.traj_id || '/' || CAST(x.t AS VARCHAR), 'md5') AS h
FROM select_params p
CROSS JOIN finish_runs r
JOIN run_turns x ON x.traj_id = r.traj_id
WHERE CASE WHEN r.submit_t BETWEEN p.finish_t_min AND p.finish_t_max
           THEN x.t = r.submit_t
           ELSE x.finish_candidate
      END;

-- The chosen turn per run: its hash is the lowest (the hash names the turn, so it is unique,
-- and the turns are found by it alone: the join holds one 16-byte digest per run).
CREATE VIEW finish_pick AS
SELECT min(h) AS h FROM finish_eligible GROUP BY traj_id;

CREATE VIEW cand_finish_mini AS
SELECT 'finish_mini' AS mix, 'finish_mini/' || e.traj_id AS row_id, e.traj_id, e.source,
       CAST(NULL AS VARCHAR) AS sample_id, e.instance_id, e.msg_idx AS upto_msg, CAST(NULL AS DOUBLE) AS score,
       CAST(NULL AS BOOLEAN) AS passed_credit_gates, CAST(NULL AS INT) AS prior_failures, e.t,
       e.n_bash_blocks, e.think_unclosed, e.is_submit, e.format_error
FROM finish_pick k
JOIN finish_eligible e ON e.h = k.h;

-- The candidates through the format gate. Each of their rows holds one turn, which cannot
-- repeat another train turn's command.
CREATE TABLE part_gated AS
SELECT mix, row_id, traj_id, source, sample_id, instance_id, upto_msg, score,
       passed_credit_gates, prior_failures, t, is_submit,
       format_gate(n_bash_blocks, think_unclosed, false, format_error) AS demoted
FROM (SELECT * FROM cand_escape_mini UNION ALL SELECT * FROM cand_finish_mini);

-- finish_mini's rows that train, each with the seeded hash that ranks it.
CREATE VIEW part_finish_rows AS
SELECT r.*, md5(CAST(p.finish_seed AS VARCHAR) || r.row_id) AS h
FROM select_params p CROSS JOIN part_gated r
WHERE r.mix = 'finish_mini' AND r.demoted IS NULL;

CREATE VIEW part_tally AS
SELECT count(*) AS finish_before_gate,
       count(*) FILTER (WHERE demoted IS NULL) AS finish_passing,
       count(*) FILTER (WHERE demoted IS NULL AND is_submit) AS finish_passing_submit
FROM part_gated
WHERE mix = 'finish_mini';
