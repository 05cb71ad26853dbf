-- Credit by turn index 1..16 over scored Albedo turns (stats_by_turn in sql/stats.sql),
-- with each index's share of all side credit (side_credit).
SELECT s.t,
       count(*) AS turns,
       avg(c.credit) AS mean_credit,
       100.0 * avg(CASE WHEN c.credit > 0 THEN 1.0 ELSE 0.0 END) AS pct_earning,
       sum(c.credit) / (SELECT sum(credit) FROM {side_credit}) AS share_of_side_credit
FROM {turns} s
JOIN {turn_credit} c ON c.traj_id = s.traj_id AND c.t = s.t
WHERE s.source = 'albedo' AND s.t BETWEEN 1 AND 16
GROUP BY s.t
ORDER BY s.t
