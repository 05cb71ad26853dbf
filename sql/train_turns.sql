-- The train turns of a set of product rows, with what train_meta reports for each.
-- A recovery turn earned credit right after a failed observation (the is_recovery UDF).
-- Reads: rows_in (the rows being described: a product table or sft_mix), turns, turn_credit.
-- A row's train turns are its trajectory's turns listed in train_turns (a
-- sorted list without repeats), found by a join on the rows, which the
-- planner builds on (they have statistics; an unnested list has none); credit
-- is narrowed to the rows' trajectories first, so no join builds on a table.

CREATE VIEW train_turns_v AS
SELECT x.mix, x.row_id, x.traj_id, u.t, u.msg_idx, u.cmd_kind,
       is_recovery(u.prev_failed, c.credit) AS is_recovery,
       coalesce(c.credit, 0.0) AS weight,
       c.tags
FROM rows_in x
JOIN turns u ON u.traj_id = x.traj_id AND array_has(x.train_turns, u.t)
LEFT JOIN (SELECT * FROM turn_credit WHERE traj_id IN (SELECT traj_id FROM rows_in)) c
       ON c.traj_id = x.traj_id AND c.t = u.t;
