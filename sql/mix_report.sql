-- The composition report of sft_mix (turnlake mix), as counts over rows_in:
-- the report runs this once per chunk of sft_mix (the rows of a share of its
-- trajectories, by a hash of traj_id, so that no join holds the whole mix),
-- adds the chunks' counts up and makes the shares. Over rows_in = sft_mix it
-- counts the whole mix at once.
-- Reads: train_turns_v over rows_in (sql/train_turns.sql), credit_citations, questions.
-- `turnlake mix` queries the views below with join reordering off, so that
-- every join builds on its left side, the rows' turns: the planner's size
-- estimates would build on the valid citations of the whole lake.

-- The train turns of the rows, found once for every count below.
CREATE TABLE report_turns AS SELECT * FROM train_turns_v;

-- Per mix: rows, train turns, recovery turns, and the sum and count of the rows' source scores.
CREATE VIEW mix_counts AS
SELECT r.mix,
       count(*) AS rows,
       sum(r.n_train) AS train_turns,
       (SELECT count(*) FROM report_turns v WHERE v.mix = r.mix AND v.is_recovery) AS recovery_turns,
       sum(r.score) AS score_sum,
       count(r.score) AS scored_rows
FROM rows_in r
GROUP BY r.mix;

CREATE VIEW mix_cmd AS
SELECT cmd_kind, count(*) AS turns FROM report_turns GROUP BY cmd_kind;

-- Tags earned by the train turns: each (turn, tag) pair once.
CREATE VIEW mix_tags AS
SELECT tag, count(*) AS turns
FROM (SELECT unnest(tags) AS tag FROM report_turns WHERE tags IS NOT NULL)
GROUP BY tag;

-- The credit set (mix = 'credit'), which the reference describes on its own.
CREATE VIEW credit_set_turns AS SELECT * FROM report_turns WHERE mix = 'credit';

CREATE VIEW credit_set_cmd AS
SELECT cmd_kind, count(*) AS turns FROM credit_set_turns GROUP BY cmd_kind;

CREATE VIEW credit_set_tags AS
SELECT tag, count(*) AS turns
FROM (SELECT unnest(tags) AS tag FROM credit_set_turns WHERE tags IS NOT NULL)
GROUP BY tag;

-- Question categories earned, as tags are: each (turn, category) of a valid yes-citation once.
CREATE VIEW credit_set_categories AS
SELECT category, count(*) AS turns
FROM (SELECT DISTINCT v.traj_id, v.t, q.category
      FROM credit_set_turns v
      JOIN credit_citations c ON c.traj_id = v.traj_id AND c.t = v.t AND c.valid AND c.answer = 1
      JOIN questions q ON q.eval_run_id = c.eval_run_id AND q.sample_id = c.sample_id AND q.question_id = c.question_id
      WHERE q.category IS NOT NULL)
GROUP BY category;

-- Rows of the credit set with a train turn, and those with a recovery turn.
CREATE VIEW credit_set_figures AS
SELECT count(DISTINCT row_id) AS rows_with_train_turns,
       count(DISTINCT row_id) FILTER (WHERE is_recovery) AS rows_with_recovery
FROM credit_set_turns;
