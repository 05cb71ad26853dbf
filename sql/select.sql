-- Selection products and the format gate (turnlake select).
-- Reads: trajectories, turns, turn_credit, judgments.
-- Registered from the select config (data/select.toml): select_params (one row).
-- Writes: sft_credit, escape_duel, escape_mini, finish_mini, gate_demotions.

-- Albedo sides and the credit gates (the loop rule: the judge's verdict or the metrics).
CREATE VIEW side_gates AS
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

-- credit: one passing side per sample (eval run and sample_id; highest score, then
-- traj_id); its credited, non-repeated turns train.
CREATE VIEW cand_credit AS
SELECT 'credit' AS mix, 'credit/' || g.traj_id AS row_id, g.traj_id, 'albedo' AS source, g.sample_id,
       CAST(NULL AS VARCHAR) AS instance_id, CAST(NULL AS INT) AS upto_msg, g.score,
       true AS passed_credit_gates, CAST(NULL AS INT) AS prior_failures, c.t,
       u.n_bash_blocks, u.think_unclosed, u.command, u.is_submit
FROM (SELECT *, row_number() OVER (PARTITION BY eval_run_id, sample_id ORDER BY score DESC, traj_id) AS rk
      FROM side_gates WHERE passed) g
JOIN turn_credit c ON c.traj_id = g.traj_id AND c.credit > 0
JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t AND u.source = 'albedo' AND NOT u.is_repeat
WHERE g.rk = 1;

-- escape_duel: a credited turn whose previous observation failed or that follows a repeat
-- run (the two commands before it are the same normalized command) and breaks out of it;
-- the prefix up to it is context, only the escape trains.
CREATE VIEW cand_escape_duel AS
SELECT 'escape_duel' AS mix, 'escape_duel/' || x.traj_id || '/' || CAST(x.t AS VARCHAR) AS row_id, x.traj_id,
       'albedo' AS source, g.sample_id, CAST(NULL AS VARCHAR) AS instance_id, x.msg_idx AS upto_msg, g.score,
       g.passed AS passed_credit_gates, x.prior_failures, x.t,
       x.n_bash_blocks, x.think_unclosed, x.command, x.is_submit
FROM turns x
JOIN turn_credit c ON c.traj_id = x.traj_id AND c.t = x.t AND c.credit > 0
JOIN side_gates g ON g.traj_id = x.traj_id
WHERE x.source = 'albedo' AND (x.prev_failed OR x.after_repeat_run) AND NOT x.repeats_prev;

-- escape_mini: in turns escape_t_min..escape_t_max, the two commands before the turn are one
-- repeat run and the turn's own command differs from it; the row ends at the escape.
CREATE VIEW cand_escape_mini AS
SELECT 'escape_mini' AS mix, 'escape_mini/' || x.traj_id || '/' || CAST(x.t AS VARCHAR) AS row_id, x.traj_id,
       x.source, CAST(NULL AS VARCHAR) AS sample_id, s.instance_id, x.msg_idx AS upto_msg, CAST(NULL AS DOUBLE) AS score,
       CAST(NULL AS BOOLEAN) AS passed_credit_gates, x.prior_failures, x.t,
       x.n_bash_blocks, x.think_unclosed, x.command, x.is_submit
FROM select_params p
CROSS JOIN turns x
JOIN trajectories s ON s.traj_id = x.traj_id
WHERE x.source = 'mini_coder' AND x.after_repeat_run AND NOT x.repeats_prev AND x.command IS NOT NULL
  AND x.t BETWEEN p.escape_t_min AND p.escape_t_max;

-- finish_mini: verified mini-coder runs that end in a submit, one candidate turn each. The
-- closing submit trains when it lies in turns finish_t_min..finish_t_max; otherwise one
-- command turn there that repeats no earlier command and whose observation did not fail,
-- chosen by the seeded hash (the lowest). The row ends at that turn. The lowest hash per
-- run is found by an aggregate, which holds one hash per run (a window would hold every
-- eligible turn).
CREATE VIEW finish_runs AS
SELECT s.traj_id, s.instance_id, e.t AS submit_t
FROM trajectories s
JOIN turns e ON e.traj_id = s.traj_id AND e.is_last AND e.is_submit AND e.source = 'mini_coder'
WHERE s.source = 'mini_coder' AND s.verified;

CREATE VIEW finish_eligible AS
SELECT r.traj_id, r.instance_id, x.t, x.msg_idx, x.n_bash_blocks, x.think_unclosed, x.command, x.is_submit,
       digest(CAST(p.finish_seed AS VARCHAR) || r.traj_id || '/' || CAST(x.t AS VARCHAR), 'md5') AS h
FROM select_params p
CROSS JOIN finish_runs r
JOIN turns x ON x.traj_id = r.traj_id AND x.source = 'mini_coder'
WHERE x.t BETWEEN p.finish_t_min AND p.finish_t_max
  AND CASE WHEN r.submit_t BETWEEN p.finish_t_min AND p.finish_t_max
           THEN x.t = r.submit_t
           ELSE x.command IS NOT NULL AND NOT x.is_repeat AND NOT x.is_submit AND x.obs_failed = false
      END;

-- The chosen turn per run: its hash is the lowest (the hash names the turn, so it is unique,
-- and the turns are found by it alone: the join holds one 16-byte digest per run).
CREATE VIEW finish_pick AS
SELECT min(h) AS h FROM finish_eligible GROUP BY traj_id;

CREATE VIEW cand_finish_mini AS
SELECT 'finish_mini' AS mix, 'finish_mini/' || e.traj_id AS row_id, e.traj_id, 'mini_coder' AS source,
       CAST(NULL AS VARCHAR) AS sample_id, e.instance_id, e.msg_idx AS upto_msg, CAST(NULL AS DOUBLE) AS score,
       CAST(NULL AS BOOLEAN) AS passed_credit_gates, CAST(NULL AS INT) AS prior_failures, e.t,
       e.n_bash_blocks, e.think_unclosed, e.command, e.is_submit
FROM finish_pick k
JOIN finish_eligible e ON e.h = k.h;

-- The format gate: exactly one bash block, no unclosed <think>, no command that
-- repeats another train turn's command in the same row. A violation is demoted.
-- Each candidate carries its turn's gate columns and is_submit, so neither the gate nor
-- the finish_mini figures read the turns again. Only a credit row holds several turns:
-- the rows of the other products hold one, which cannot repeat another.
-- A table, not a view: later statements read `gated` several times.
CREATE TABLE gated AS
SELECT mix, row_id, traj_id, source, sample_id, instance_id, upto_msg, score,
       passed_credit_gates, prior_failures, t, is_submit,
       CASE
         WHEN n_bash_blocks <> 1 THEN 'not exactly one bash block'
         WHEN think_unclosed THEN 'unclosed <think>'
         WHEN repeats_in_row THEN 'repeats another train turn''s command'
       END AS demoted
FROM (SELECT *, row_number() OVER (PARTITION BY row_id, normalize_command(command) ORDER BY t) > 1 AS repeats_in_row
      FROM cand_credit
      UNION ALL SELECT *, false FROM cand_escape_duel
      UNION ALL SELECT *, false FROM cand_escape_mini
      UNION ALL SELECT *, false FROM cand_finish_mini);

-- One row per candidate row. A credit row gathers its turns; a row of another product is
-- its one turn, so it needs no grouping.
CREATE VIEW gated_rows AS
SELECT row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures,
       coalesce(array_sort(array_agg(t) FILTER (WHERE demoted IS NULL)), CAST([] AS INT[])) AS train_turns,
       CAST(count(*) FILTER (WHERE demoted IS NULL) AS INT) AS n_train,
       CAST(count(*) FILTER (WHERE demoted IS NOT NULL) AS INT) AS n_demoted
FROM gated
WHERE mix = 'credit'
GROUP BY row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures
UNION ALL
SELECT row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures,
       CASE WHEN demoted IS NULL THEN make_array(t) ELSE CAST([] AS INT[]) END AS train_turns,
       CAST(CASE WHEN demoted IS NULL THEN 1 ELSE 0 END AS INT) AS n_train,
       CAST(CASE WHEN demoted IS NULL THEN 0 ELSE 1 END AS INT) AS n_demoted
FROM gated
WHERE mix <> 'credit';

-- finish_mini keeps one row per instance_id, then at most `finish_cap` rows, both by a seeded
-- hash of the row (lowest first). The hash names its row, so the rows kept are those whose
-- hash is among the `finish_cap` lowest of the per-instance lowest: ranking instances, not
-- rows, keeps the sort small.
CREATE VIEW finish_hashed AS
SELECT r.row_id, r.instance_id, md5(CAST(p.finish_seed AS VARCHAR) || r.row_id) AS h
FROM select_params p CROSS JOIN gated_rows r
WHERE r.mix = 'finish_mini' AND r.n_train > 0;

CREATE TABLE finish_kept AS
SELECT f.row_id
FROM (SELECT k.h
      FROM select_params p
      CROSS JOIN (SELECT h, row_number() OVER (ORDER BY h) AS rk
                  FROM (SELECT min(h) AS h FROM finish_hashed GROUP BY instance_id)) k
      WHERE k.rk <= p.finish_cap) kept
JOIN finish_hashed f ON f.h = kept.h;

-- The products: every gated row with a train turn, and of finish_mini's only those kept.
-- The kept rows are a table, so the join builds on them (a filter `mix <> ... OR row_id IN
-- (...)` built a join on every gated row: 0.36 GB at 4x the reference corpus).
CREATE TABLE products AS
SELECT * FROM gated_rows WHERE n_train > 0 AND mix <> 'finish_mini'
UNION ALL
SELECT r.* FROM finish_kept k JOIN gated_rows r ON r.row_id = k.row_id;

CREATE VIEW demotions AS
SELECT g.mix, g.row_id, g.traj_id, g.t, g.demoted AS reason, r.n_train = 0 AS row_dropped
FROM gated g JOIN gated_rows r ON r.row_id = g.row_id
WHERE g.demoted IS NOT NULL;

-- Accounting: every candidate turn is trained, demoted (with reason) or not selected.
CREATE VIEW candidate_accounting AS
SELECT g.mix,
       CASE
         WHEN g.demoted IS NOT NULL THEN 'demoted: ' || g.demoted
         WHEN p.row_id IS NOT NULL THEN 'trained'
         ELSE 'not selected (row over the cap or a second row of its instance)'
       END AS outcome,
       count(*) AS turns
FROM gated g
LEFT JOIN (SELECT row_id FROM products) p ON p.row_id = g.row_id
GROUP BY 1, 2;

-- The figures the reference publishes for the selection, from what was just built.
CREATE VIEW select_figures AS
SELECT
  (SELECT count(*) FROM side_gates) AS sides_judged,
  (SELECT count(*) FROM side_gates WHERE passed) AS sides_passing,
  (SELECT count(*) FROM (SELECT DISTINCT s.eval_run_id, s.sample_id FROM products p
     JOIN trajectories s ON s.traj_id = p.traj_id WHERE p.mix = 'escape_duel')) AS escape_duel_samples,
  (SELECT avg(CAST(u.prev_failed AS DOUBLE)) FROM products p JOIN gated g ON g.row_id = p.row_id AND g.demoted IS NULL
     JOIN turns u ON u.traj_id = g.traj_id AND u.t = g.t AND u.source = 'albedo' WHERE p.mix = 'escape_duel') AS escape_duel_after_failure,
  (SELECT avg(CAST(u.after_repeat_run AS DOUBLE)) FROM products p JOIN gated g ON g.row_id = p.row_id AND g.demoted IS NULL
     JOIN turns u ON u.traj_id = g.traj_id AND u.t = g.t AND u.source = 'albedo' WHERE p.mix = 'escape_duel') AS escape_duel_after_repeat_run,
  (SELECT avg(CAST(prior_failures AS DOUBLE)) FROM products WHERE mix = 'escape_duel') AS escape_duel_prior_failures_mean,
  (SELECT max(prior_failures) FROM products WHERE mix = 'escape_duel') AS escape_duel_prior_failures_max,
  (SELECT avg(CASE WHEN g.t > 16 THEN 1.0 ELSE 0.0 END) FROM products p JOIN gated g ON g.row_id = p.row_id AND g.demoted IS NULL
     WHERE p.mix = 'escape_mini') AS escape_mini_past_16,
  (SELECT count(*) FROM gated WHERE mix = 'finish_mini' AND demoted IS NULL AND is_submit) AS finish_submit_candidates,
  (SELECT count(*) FROM gated WHERE mix = 'finish_mini') AS finish_candidates_before_gate,
  (SELECT count(*) FROM products p JOIN gated g ON g.row_id = p.row_id AND g.demoted IS NULL
     WHERE p.mix = 'finish_mini' AND g.is_submit) AS finish_submit_rows,
  (SELECT count(*) FROM turn_credit c JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t AND u.source = 'albedo'
     WHERE c.credit > 0 AND u.prev_failed) AS recovery_available,
  (SELECT count(*) FROM turn_credit c JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t AND u.source = 'albedo'
     JOIN side_gates s ON s.traj_id = c.traj_id AND s.passed
     WHERE c.credit > 0 AND u.prev_failed) AS recovery_passing,
  (SELECT count(*) FROM gated WHERE demoted IS NOT NULL) AS demotions;
