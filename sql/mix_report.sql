-- The composition report of sft_mix (turnlake mix), after sql/mix.sql composed it.
-- Reads: train_turns_v over rows_in = sft_mix (sql/train_turns.sql).

CREATE VIEW mix_summary AS
SELECT r.mix,
       count(*) AS rows,
       sum(r.n_train) AS train_turns,
       CAST(count(*) AS DOUBLE) / (SELECT count(*) FROM rows_in) AS share_rows,
       CAST(sum(r.n_train) AS DOUBLE) / (SELECT sum(n_train) FROM rows_in) AS share_train,
       (SELECT count(*) FROM train_turns_v v WHERE v.mix = r.mix AND v.is_recovery) AS recovery_turns,
       avg(r.score) AS avg_source_score
FROM rows_in r
GROUP BY r.mix;

CREATE VIEW mix_cmd AS
SELECT cmd_kind, count(*) AS turns, CAST(count(*) AS DOUBLE) / (SELECT count(*) FROM train_turns_v) AS share
FROM train_turns_v
GROUP BY cmd_kind;

-- Tags earned by the train turns: each (turn, tag) pair once, shares summing to 100%.
CREATE VIEW mix_tags AS
SELECT tag, count(*) AS turns, CAST(count(*) AS DOUBLE) / sum(count(*)) OVER () AS share
FROM (SELECT unnest(tags) AS tag FROM train_turns_v WHERE tags IS NOT NULL)
GROUP BY tag;

-- The credit set (mix = 'credit'), which the reference describes on its own.
CREATE VIEW credit_set_turns AS SELECT * FROM train_turns_v WHERE mix = 'credit';

CREATE VIEW credit_set_cmd AS
SELECT cmd_kind, count(*) AS turns, CAST(count(*) AS DOUBLE) / sum(count(*)) OVER () AS share
FROM credit_set_turns
GROUP BY cmd_kind;

CREATE VIEW credit_set_tags AS
SELECT tag, count(*) AS turns, CAST(count(*) AS DOUBLE) / sum(count(*)) OVER () AS share
FROM (SELECT unnest(tags) AS tag FROM credit_set_turns WHERE tags IS NOT NULL)
GROUP BY tag;

-- Question categories earned, as tags are: each (turn, category) of a valid yes-citation once.
CREATE VIEW credit_set_categories AS
SELECT category, count(*) AS turns, CAST(count(*) AS DOUBLE) / sum(count(*)) OVER () AS share
FROM (SELECT DISTINCT v.traj_id, v.t, q.category
      FROM credit_set_turns v
      JOIN credit_citations c ON c.traj_id = v.traj_id AND c.t = v.t AND c.valid AND c.answer = 1
      JOIN questions q ON q.eval_run_id = c.eval_run_id AND q.sample_id = c.sample_id AND q.question_id = c.question_id
      WHERE q.category IS NOT NULL)
GROUP BY category;

CREATE VIEW credit_set_figures AS
SELECT (SELECT count(*) FROM credit_set_turns WHERE is_recovery) AS recovery_turns,
       (SELECT CAST(count(DISTINCT row_id) FILTER (WHERE is_recovery) AS DOUBLE) / greatest(count(DISTINCT row_id), 1)
          FROM credit_set_turns) AS rows_with_recovery,
       (SELECT avg(score) FROM rows_in WHERE mix = 'credit') AS source_score;
