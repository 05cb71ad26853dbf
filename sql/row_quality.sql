-- Each row's quality score, by which `[mix] select = "ranked"` takes a mix's
-- rows best first (turnlake mix) and `mix sweep --select ranked` draws them
-- (turnlake mix sweep): a weighted sum of the credit its train turns earned,
-- its source side's judge score and the local scorer's predicted credit of its
-- train turns (turn_labels, for runs no judge saw), each 0 where it has none.
-- Reads: rows_in (row_id, traj_id, train_turns, score), turn_credit, turn_labels,
-- quality_weights (credit, score, scorer: one row).
-- Defines: row_quality (row_id, quality).

CREATE VIEW row_earned AS
SELECT r.row_id, sum(c.credit) AS credit
FROM rows_in r
JOIN turn_credit c ON c.traj_id = r.traj_id AND array_has(r.train_turns, c.t)
GROUP BY r.row_id;

CREATE VIEW row_predicted AS
SELECT r.row_id, sum(l.p_credit) AS p_credit
FROM rows_in r
JOIN turn_labels l ON l.traj_id = r.traj_id AND array_has(r.train_turns, l.t)
GROUP BY r.row_id;

CREATE VIEW row_quality AS
SELECT r.row_id,
       w.credit * coalesce(e.credit, 0) + w.score * coalesce(r.score, 0)
         + w.scorer * coalesce(p.p_credit, 0) AS quality
FROM rows_in r
CROSS JOIN quality_weights w
LEFT JOIN row_earned e ON e.row_id = r.row_id
LEFT JOIN row_predicted p ON p.row_id = r.row_id;
