-- Credit by command kind over scored Albedo turns (turnlake stats: stats_by_kind in sql/stats.sql).
SELECT s.cmd_kind,
       count(*) AS turns,
       CAST(count(*) AS DOUBLE) / sum(count(*)) OVER () AS share,
       avg(c.credit) AS mean_credit,
       100.0 * avg(CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) AS pct_earning,
       avg(CAST(s.obs_failed AS DOUBLE)) AS share_failed
FROM {turns} s
JOIN {turn_credit} c ON c.traj_id = s.traj_id AND c.t = s.t
WHERE s.source = 'albedo'
GROUP BY s.cmd_kind
ORDER BY s.cmd_kind
