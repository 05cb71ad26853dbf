-- Exposure bias (stats_exposure in sql/stats.sql): how often scored Albedo turns follow a
-- failed observation, and what that costs their chance of earning credit.
SELECT avg(CAST(s.obs_failed AS DOUBLE)) AS share_failed_own,
       avg(CAST(s.prev_failed AS DOUBLE)) AS share_after_failure,
       100.0 * avg(CASE WHEN s.prev_failed THEN (CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) END) AS pct_earning_after_failure,
       100.0 * avg(CASE WHEN NOT s.prev_failed THEN (CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) END) AS pct_earning_otherwise,
       100.0 * avg(CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) AS pct_earning_baseline,
       1.0 - avg(CASE WHEN s.prev_failed THEN (CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) END)
           / avg(CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) AS relative_cost
FROM {turns} s
JOIN {turn_credit} c ON c.traj_id = s.traj_id AND c.t = s.t
WHERE s.source = 'albedo'
