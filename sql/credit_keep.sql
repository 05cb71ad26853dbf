-- credit takes one side per sample_id across eval runs, as the reference dedupes (turnlake
-- select, over the whole lake before the buckets of sql/select_sides.sql): of the sample's
-- sides that pass the credit gates, in any eval run, the highest judge score, then the
-- lowest traj_id.
-- Reads: side_gates. Defines: credit_kept, credit_recurring, credit_recurring_listed,
-- credit_recurring_tally.
CREATE VIEW credit_kept AS
SELECT traj_id, eval_run_id, sample_id, score
FROM (SELECT *, row_number() OVER (PARTITION BY sample_id ORDER BY score DESC, traj_id) AS rk
      FROM side_gates WHERE passed)
WHERE rk = 1;

-- Samples whose passing sides come from more than one eval run, and the side kept.
CREATE VIEW credit_recurring AS
SELECT g.sample_id, count(DISTINCT g.eval_run_id) AS runs, count(*) AS passing_sides,
       k.traj_id AS kept, k.score AS kept_score
FROM side_gates g
JOIN credit_kept k ON k.sample_id = g.sample_id
WHERE g.passed
GROUP BY g.sample_id, k.traj_id, k.score
HAVING count(DISTINCT g.eval_run_id) > 1;

-- The recurring samples select's summary lists: the ten seen in most runs.
CREATE VIEW credit_recurring_listed AS
SELECT sample_id, runs, kept, kept_score FROM credit_recurring
ORDER BY runs DESC, sample_id LIMIT 10;

-- How many samples recur across eval runs, and how many of their sides credit leaves out.
CREATE VIEW credit_recurring_tally AS
SELECT count(*) AS samples, coalesce(sum(runs - 1), 0) AS runs_dropped FROM credit_recurring;
