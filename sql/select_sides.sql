-- The Albedo products of one bucket of eval runs (turnlake select).
-- turnlake select runs this file once per bucket of whole eval runs (so never splitting a
-- sample), so its joins of credited turns hold one bucket's, not the lake's.
-- Reads: trajectories, turns, turn_credit, judgments (the bucket's), select_params,
-- side_gates (sql/side_gates.sql, run first) and credit_kept (sql/credit_keep.sql, over
-- the whole lake).
-- Builds: sides_gated (the bucket's credit and escape_duel candidates through the format
-- gate), credit_rows and credit_demotions (its credit rows, each gathering its turns, and
-- their demoted turns) and sides_tally (the bucket's counts that sql/select.sql reports).
-- A side lies in one bucket, so what gathers a side's turns or counts samples is done here,
-- and sql/select.sql, over every bucket's candidates, only streams them.

-- credit: the one passing side of each sample_id that credit_kept names; its credited,
-- non-repeated turns train.
CREATE VIEW cand_credit AS
SELECT 'credit' AS mix, 'credit/' || g.traj_id AS row_id, g.traj_id, 'albedo' AS source, g.sample_id,
       CAST(NULL AS VARCHAR) AS instance_id, CAST(NULL AS INT) AS upto_msg, g.score,
       true AS passed_credit_gates, CAST(NULL AS INT) AS prior_failures, c.t,
       u.n_bash_blocks, u.think_unclosed, u.command, u.is_submit
FROM side_gates g
JOIN credit_kept k ON k.traj_id = g.traj_id
JOIN turn_credit c ON c.traj_id = g.traj_id AND c.credit > 0
JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t AND u.source = 'albedo' AND NOT u.is_repeat;

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

-- The format gate (`format_gate`): only a credit row holds several turns, so only its
-- turns can repeat another train turn's command in the same row.
CREATE TABLE sides_gated AS
SELECT mix, row_id, traj_id, source, sample_id, instance_id, upto_msg, score,
       passed_credit_gates, prior_failures, t, is_submit,
       format_gate(n_bash_blocks, think_unclosed, repeats_in_row) AS demoted
FROM (SELECT *, row_number() OVER (PARTITION BY row_id, normalize_command(command) ORDER BY t) > 1 AS repeats_in_row
      FROM cand_credit
      UNION ALL SELECT *, false FROM cand_escape_duel);

-- The bucket's credit rows: each gathers its side's turns.
CREATE TABLE credit_rows AS
SELECT row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures,
       coalesce(array_sort(array_agg(t) FILTER (WHERE demoted IS NULL)), CAST([] AS INT[])) AS train_turns,
       CAST(count(*) FILTER (WHERE demoted IS NULL) AS INT) AS n_train,
       CAST(count(*) FILTER (WHERE demoted IS NOT NULL) AS INT) AS n_demoted
FROM sides_gated
WHERE mix = 'credit'
GROUP BY row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures;

-- The demoted turns of the bucket's credit rows, and whether the gate left their row no
-- train turn.
CREATE TABLE credit_demotions AS
SELECT g.mix, g.row_id, g.traj_id, g.t, g.demoted AS reason, r.n_train = 0 AS row_dropped
FROM sides_gated g
JOIN credit_rows r ON r.row_id = g.row_id
WHERE g.mix = 'credit' AND g.demoted IS NOT NULL;

-- The escape_duel rows that train (each is one turn), for the selection's figures: the
-- samples they come from, and how many follow a failed observation or a repeat run (of
-- those whose turn knows).
CREATE VIEW escape_duel_trained AS
SELECT s.eval_run_id, s.sample_id, u.prev_failed, u.after_repeat_run
FROM sides_gated g
JOIN trajectories s ON s.traj_id = g.traj_id
JOIN turns u ON u.traj_id = g.traj_id AND u.t = g.t AND u.source = 'albedo'
WHERE g.mix = 'escape_duel' AND g.demoted IS NULL;

CREATE VIEW sides_escapes AS
SELECT count(*) FILTER (WHERE prev_failed) AS escape_duel_after_failure,
       count(prev_failed) AS escape_duel_failure_known,
       count(*) FILTER (WHERE after_repeat_run) AS escape_duel_after_repeat_run,
       count(after_repeat_run) AS escape_duel_repeat_known,
       (SELECT count(*) FROM (SELECT DISTINCT eval_run_id, sample_id FROM escape_duel_trained)) AS escape_duel_samples
FROM escape_duel_trained;

-- Credited turns whose previous observation failed: all of them, and those of passing sides.
CREATE VIEW sides_recovery AS
SELECT count(*) AS recovery_available, count(*) FILTER (WHERE s.passed) AS recovery_passing
FROM turn_credit c
JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t AND u.source = 'albedo'
LEFT JOIN side_gates s ON s.traj_id = c.traj_id
WHERE is_recovery(u.prev_failed, c.credit);

CREATE VIEW sides_tally AS
SELECT g.sides_judged, g.sides_passing, r.recovery_available, r.recovery_passing, e.*
FROM (SELECT count(*) AS sides_judged, count(*) FILTER (WHERE passed) AS sides_passing FROM side_gates) g
CROSS JOIN sides_recovery r
CROSS JOIN sides_escapes e;
