-- What the composition report of sft_mix (turnlake mix) counts, found in
-- one pass over the lake. `turnlake mix` writes the report_* views below
-- into chunks by a hash of traj_id (Parquet in a scratch folder) and counts
-- each chunk on its own (sql/mix_report.sql over sql/train_turns.sql, the
-- chunk's report_rows, report_lake_turns and report_credit standing for
-- rows_in, turns and turn_credit), so that no join holds the whole mix and
-- no chunk reads the lake again.
-- Reads: rows_in = sft_mix, turns, turn_credit, credit_citations, questions.

-- Per mix: rows, train turns, and the sum and count of the rows' source
-- scores (a group per mix: counted whole).
CREATE VIEW mix_row_counts AS
SELECT mix,
       count(*) AS rows,
       sum(n_train) AS train_turns,
       sum(score) AS score_sum,
       count(score) AS scored_rows
FROM rows_in
GROUP BY mix;

-- The rows, and the turns and credit of their trajectories: what
-- train_turns_v (sql/train_turns.sql) joins. `turnlake mix` runs this file
-- with join reordering off, so that each join builds on its left side as
-- written: the mix's distinct traj_ids, never a table of the lake (the
-- planner's estimates built on all of the lake's valid citations, 300 MB
-- at 4x the reference corpus; a join of the rows with the turns, over the
-- whole mix, held the rows' every train turn).
CREATE VIEW report_rows AS SELECT mix, row_id, traj_id, train_turns FROM rows_in;

CREATE VIEW report_lake_turns AS
SELECT u.traj_id, u.t, u.msg_idx, u.cmd_kind, u.prev_failed
FROM (SELECT DISTINCT traj_id FROM rows_in) k
JOIN turns u ON u.traj_id = k.traj_id;

CREATE VIEW report_credit AS
SELECT c.traj_id, c.t, c.credit, c.tags
FROM (SELECT DISTINCT traj_id FROM rows_in) k
JOIN turn_credit c ON c.traj_id = k.traj_id;

-- The question category of each valid yes-citation of the credit set's
-- trajectories, at its turn: the join with questions builds on those
-- citations alone.
CREATE VIEW report_citations AS
SELECT c.traj_id, c.t, q.category
FROM (SELECT DISTINCT traj_id FROM rows_in WHERE mix = 'credit') k
JOIN credit_citations c ON c.traj_id = k.traj_id AND c.valid AND c.answer = 1
JOIN questions q ON q.eval_run_id = c.eval_run_id AND q.sample_id = c.sample_id AND q.question_id = c.question_id
WHERE q.category IS NOT NULL;
