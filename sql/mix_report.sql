-- The composition report of sft_mix (turnlake mix), as counts over one
-- chunk of it (the rows of a share of its trajectories, by a hash of
-- traj_id: see sql/mix_report_input.sql); the report adds the chunks'
-- counts up and makes the shares.
-- Reads: train_turns_v over the chunk's rows (sql/train_turns.sql),
-- report_citations.

-- The train turns of the rows, found once for every count below.
CREATE TABLE report_turns AS SELECT * FROM train_turns_v;

-- Per mix: recovery turns.
CREATE VIEW mix_recovery AS
SELECT mix, count(*) AS recovery_turns FROM report_turns WHERE is_recovery GROUP BY mix;

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
FROM (SELECT DISTINCT v.traj_id, v.t, c.category
      FROM credit_set_turns v
      JOIN report_citations c ON c.traj_id = v.traj_id AND c.t = v.t)
GROUP BY category;

-- Rows of the credit set with a train turn, and those with a recovery turn.
CREATE VIEW credit_set_figures AS
SELECT count(DISTINCT row_id) AS rows_with_train_turns,
       count(DISTINCT row_id) FILTER (WHERE is_recovery) AS rows_with_recovery
FROM credit_set_turns;
