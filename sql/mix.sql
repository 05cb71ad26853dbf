-- Mixture composition (turnlake mix). Reads: the four products, and mix_quota(mix, take,
-- seed) registered from the [mix] config: each mix's quota is all of its rows
-- (mode = "all"), or its share of the largest mixture every share can fill.
-- Writes: sft_mix (the rows of mix_rows, in row_id order).

CREATE VIEW mix_candidates AS
SELECT * FROM sft_credit
UNION ALL SELECT * FROM escape_duel
UNION ALL SELECT * FROM escape_mini
UNION ALL SELECT * FROM finish_mini;

-- Each mix sampled to its quota by a seeded hash of row_id (a mix without a quota is left out).
CREATE VIEW mix_rows AS
SELECT p.*
FROM (SELECT u.*, q.take,
             row_number() OVER (PARTITION BY u.mix ORDER BY md5(CAST(q.seed AS VARCHAR) || u.row_id), u.row_id) AS rk
      FROM mix_candidates u
      JOIN mix_quota q ON q.mix = u.mix) p
WHERE p.rk <= p.take;
