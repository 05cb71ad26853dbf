-- Mixture composition (turnlake mix). Reads: mix_candidates, the rows of
-- the four products (sft_credit, escape_duel, escape_mini, finish_mini) with
-- each row's quality (0 for every row unless [mix] select = "ranked");
-- mix_cost(row_id, cost), what a row counts against its mix's quota (1, or
-- its trainable tokens when [mix] unit = "tokens"); and mix_quota(mix, take,
-- available, seed), all registered by the mix (src/pipeline/mix.rs) from
-- the lake and the [mix] config: each mix's quota is all of it (mode =
-- "all"), or its share of the largest mixture every share can fill.
-- Writes: sft_mix (the rows of mix_rows, in row_id order).

-- A mix that keeps less than it has keeps its rows best first by quality,
-- then in order of seeded draw (md5 of the seed and row_id, ties by row_id),
-- until their costs reach its quota: the row that reaches it is kept (as
-- `mix sweep` draws). mix_cut holds, for each such mix, the quality, draw and
-- row_id of the last row it keeps: a table, so that its sort (of a few
-- columns) runs on its own, before the sort of whole rows that writes sft_mix.
CREATE TABLE mix_cut AS
SELECT mix, quality, draw, row_id
FROM (SELECT mix, quality, draw, row_id,
             row_number() OVER (PARTITION BY mix ORDER BY quality ASC, draw DESC, row_id DESC) AS last
      FROM (SELECT u.mix, u.row_id, u.quality, q.take, c.cost,
                   md5(CAST(q.seed AS VARCHAR) || u.row_id) AS draw,
                   sum(c.cost) OVER (PARTITION BY u.mix
                                     ORDER BY u.quality DESC, md5(CAST(q.seed AS VARCHAR) || u.row_id), u.row_id
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS used
            FROM mix_candidates u
            JOIN mix_cost c ON c.row_id = u.row_id
            JOIN mix_quota q ON q.mix = u.mix AND q.take < q.available)
      WHERE used - cost < take)
WHERE last = 1;

-- Each mix's rows (the products' columns): all of them, or those up to its
-- cut (a mix without a quota is left out).
CREATE VIEW mix_rows AS
SELECT u.row_id, u.mix, u.source, u.traj_id, u.sample_id, u.instance_id, u.upto_msg, u.score,
       u.passed_credit_gates, u.prior_failures, u.train_turns, u.n_train, u.n_demoted
FROM mix_candidates u
JOIN mix_quota q ON q.mix = u.mix
LEFT JOIN mix_cut c ON c.mix = u.mix
WHERE q.take >= q.available
   OR u.quality > c.quality
   OR (u.quality = c.quality
       AND (md5(CAST(q.seed AS VARCHAR) || u.row_id) < c.draw
            OR (md5(CAST(q.seed AS VARCHAR) || u.row_id) = c.draw AND u.row_id <= c.row_id)));
