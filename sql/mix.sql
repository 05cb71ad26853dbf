-- The composition report of sft_mix (turnlake mix). Reads: train_turns_v over rows_in = sft_mix.

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

CREATE VIEW mix_tags AS
SELECT tag, count(*) AS turns, CAST(count(*) AS DOUBLE) / (SELECT count(*) FROM train_turns_v) AS share_of_train_turns
FROM (SELECT unnest(tags) AS tag FROM train_turns_v WHERE tags IS NOT NULL)
GROUP BY tag;
