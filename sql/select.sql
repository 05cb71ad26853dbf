-- Selection products and the format gate (turnlake select).
-- Reads: sides_gated, credit_rows, credit_demotions and sides_tally, the Albedo products that
-- sql/select_sides.sql built bucket by bucket; runs_gated and runs_tally, the mini-coder
-- products that sql/select_runs.sql and sql/finish_keep.sql built part by part (see `gated`
-- and `candidate_accounting`).
-- Writes: sft_credit, escape_duel, escape_mini, finish_mini, gate_demotions; defines the
-- summaries the step reports: select_mined, select_kept, select_escape_duel_rejected and
-- select_figures.
-- Every candidate here was built per bucket or part; this file only streams them (no join
-- or grouping holds every candidate), so its memory does not grow with the lake.

-- Every candidate through the format gate (`format_gate`: exactly one bash block, no
-- unclosed <think>, no command that repeats another train turn's command in the same row;
-- a violation is demoted). Each carries its turn's gate columns and is_submit, so neither
-- the gate nor the figures read the turns again. The Albedo products come gated from
-- sql/select_sides.sql (sides_gated), the mini-coder ones from sql/select_runs.sql
-- (runs_gated: every escape_mini candidate, and of finish_mini's those demoted and those
-- kept). A view of the two tables: a table would hold every candidate twice.
CREATE VIEW gated AS
SELECT * FROM sides_gated
UNION ALL
SELECT * FROM runs_gated;

-- One row per candidate row. A credit row gathers its turns (sql/select_sides.sql grouped
-- them, per bucket); a row of another product is its one turn.
CREATE VIEW gated_rows AS
SELECT row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures,
       train_turns, n_train, n_demoted
FROM credit_rows
UNION ALL
SELECT row_id, mix, source, traj_id, sample_id, instance_id, upto_msg, score, passed_credit_gates, prior_failures,
       CASE WHEN demoted IS NULL THEN make_array(t) ELSE CAST([] AS INT[]) END AS train_turns,
       CAST(CASE WHEN demoted IS NULL THEN 1 ELSE 0 END AS INT) AS n_train,
       CAST(CASE WHEN demoted IS NULL THEN 0 ELSE 1 END AS INT) AS n_demoted
FROM gated
WHERE mix <> 'credit';

-- The products: every gated row with a train turn (finish_mini's rows that are not kept
-- came no further than sql/select_runs.sql).
CREATE TABLE products AS
SELECT * FROM gated_rows WHERE n_train > 0;

-- Demoted turns, and whether their row has no train turn left: a row of one turn has none.
CREATE VIEW demotions AS
SELECT mix, row_id, traj_id, t, reason, row_dropped FROM credit_demotions
UNION ALL
SELECT mix, row_id, traj_id, t, demoted AS reason, true AS row_dropped
FROM gated
WHERE mix <> 'credit' AND demoted IS NOT NULL;

-- Accounting: every candidate turn is trained, demoted (with reason) or not selected. Only
-- finish_mini's rows can go unselected, and those never reached `gated`: runs_tally counts
-- them (each holds one turn).
CREATE VIEW candidate_accounting AS
SELECT mix, CASE WHEN demoted IS NOT NULL THEN 'demoted: ' || demoted ELSE 'trained' END AS outcome,
       count(*) AS turns
FROM gated
GROUP BY 1, 2
UNION ALL
SELECT 'finish_mini', 'not selected (row over the cap or a second row of its instance)', t.finish_passing - k.n
FROM runs_tally t
CROSS JOIN (SELECT count(*) AS n FROM products WHERE mix = 'finish_mini') k
WHERE t.finish_passing > k.n;

-- The figures the reference publishes for the selection, from what was just built. A row
-- of a product other than credit is its one train turn: its turn in `gated`, undemoted.
CREATE VIEW select_figures AS
SELECT
  (SELECT sides_judged FROM sides_tally) AS sides_judged,
  (SELECT sides_passing FROM sides_tally) AS sides_passing,
  (SELECT credit_samples_recurring FROM sides_tally) AS credit_samples_recurring,
  (SELECT credit_runs_dropped FROM sides_tally) AS credit_runs_dropped,
  (SELECT escape_duel_samples FROM sides_tally) AS escape_duel_samples,
  (SELECT CAST(escape_duel_after_failure AS DOUBLE) / nullif(escape_duel_failure_known, 0) FROM sides_tally)
    AS escape_duel_after_failure,
  (SELECT CAST(escape_duel_after_repeat_run AS DOUBLE) / nullif(escape_duel_repeat_known, 0) FROM sides_tally)
    AS escape_duel_after_repeat_run,
  (SELECT avg(CAST(prior_failures AS DOUBLE)) FROM products WHERE mix = 'escape_duel') AS escape_duel_prior_failures_mean,
  (SELECT max(prior_failures) FROM products WHERE mix = 'escape_duel') AS escape_duel_prior_failures_max,
  (SELECT avg(CASE WHEN t > 16 THEN 1.0 ELSE 0.0 END) FROM gated WHERE mix = 'escape_mini' AND demoted IS NULL)
    AS escape_mini_past_16,
  (SELECT finish_passing_submit FROM runs_tally) AS finish_submit_candidates,
  (SELECT finish_before_gate FROM runs_tally) AS finish_candidates_before_gate,
  (SELECT count(*) FROM gated WHERE mix = 'finish_mini' AND demoted IS NULL AND is_submit) AS finish_submit_rows,
  (SELECT recovery_available FROM sides_tally) AS recovery_available,
  (SELECT recovery_passing FROM sides_tally) AS recovery_passing,
  (SELECT count(*) FROM gated WHERE demoted IS NOT NULL) AS demotions;

-- Per product: the rows with a train turn before any cap (mined) and those the format gate
-- left without one (dropped). gated_rows is a view: one pass gives both.
CREATE VIEW select_mined AS
SELECT mix, count(*) FILTER (WHERE n_train > 0) AS mined, count(*) FILTER (WHERE n_train = 0) AS dropped
FROM gated_rows
GROUP BY mix;

-- Per product: the rows kept and their train turns.
CREATE VIEW select_kept AS
SELECT mix, count(*) AS n, sum(n_train) AS train FROM products GROUP BY mix;

-- The share of escape_duel rows whose side the credit gates rejected.
CREATE VIEW select_escape_duel_rejected AS
SELECT CAST(count(*) FILTER (WHERE NOT passed_credit_gates) AS DOUBLE) / greatest(count(*), 1) AS share
FROM products
WHERE mix = 'escape_duel';
