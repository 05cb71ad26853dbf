-- finish_mini keeps one row per instance_id, then at most `finish_cap` rows, both by a seeded
-- hash of the row (lowest first): the rows kept are those whose hash is among the
-- `finish_cap` lowest of the per-instance lowest (ranking instances, not rows, keeps the
-- sort small). turnlake select applies this after each part of the runs to the rows kept so
-- far and the part's rows: a row that falls out cannot come back, since later parts only
-- add rows, and so only lower the bar.
-- Reads: finish_rows (candidate rows with their hash h), select_params.
-- Builds: finish_best (the rows kept).

CREATE TABLE finish_best AS
SELECT f.*
FROM (SELECT k.h
      FROM select_params p
      CROSS JOIN (SELECT h, row_number() OVER (ORDER BY h) AS rk
                  FROM (SELECT min(h) AS h FROM finish_rows GROUP BY instance_id)) k
      WHERE k.rk <= p.finish_cap) kept
JOIN finish_rows f ON f.h = kept.h;
