-- The train turns of a set of product rows, with what train_meta reports for each.
-- A recovery turn earned credit and the observation right before it failed.
-- Reads: rows_in (the rows being described: a product table or sft_mix), turns, turn_credit.

CREATE VIEW train_turns_v AS
SELECT x.mix, x.row_id, x.traj_id, x.t, u.msg_idx, u.cmd_kind,
       u.prev_failed AND coalesce(c.credit, 0.0) > 0 AS is_recovery,
       coalesce(c.credit, 0.0) AS weight,
       c.tags
FROM (SELECT mix, row_id, traj_id, unnest(train_turns) AS t FROM rows_in) x
JOIN turns u ON u.traj_id = x.traj_id AND u.t = x.t
LEFT JOIN turn_credit c ON c.traj_id = x.traj_id AND c.t = x.t;
