-- What the composition report of sft_mix (turnlake mix) counts, found in
-- one pass over the lake. `turnlake mix` writes the report_* views below
-- into chunks by a hash of traj_id (Parquet in a scratch folder) and counts
-- each chunk on its own (sql/mix_report.sql over sql/train_turns.sql, the
-- chunk's report_rows, report_lake_turns and report_credit standing for
-- rows_in, turns and turn_credit), so that no join holds the whole mix and
-- no chunk reads the lake again.
-- Reads: rows_in = sft_mix, turns, turn_credit, credit_citations.

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
-- train_turns_v (sql/train_turns.sql) joins. The lake's tables are narrowed
-- to the mix's trajectories by a join on hash_key(traj_id), 8 bytes a
-- trajectory, so what a join holds stays small as the mix grows (the
-- traj_ids themselves, 12 MB at 4x the reference corpus, were most of the
-- report's peak). A key two trajectories share only lets the other's rows
-- through: each chunk joins on traj_id itself. `turnlake mix` runs this
-- file with join reordering off, so that each join builds on its left side
-- as written, and every join collecting that side once, not repartitioning
-- the lake's rows by key.
CREATE VIEW report_rows AS SELECT mix, row_id, traj_id, train_turns FROM rows_in;

CREATE VIEW mix_keys AS SELECT DISTINCT hash_key(traj_id) AS traj_key FROM rows_in;

CREATE VIEW credit_keys AS
SELECT DISTINCT hash_key(traj_id) AS traj_key FROM rows_in WHERE mix = 'credit';

CREATE VIEW report_lake_turns AS
SELECT u.traj_id, u.t, u.msg_idx, u.cmd_kind, u.prev_failed
FROM mix_keys k
JOIN turns u ON hash_key(u.traj_id) = k.traj_key;

CREATE VIEW report_credit AS
SELECT c.traj_id, c.t, c.credit, c.tags
FROM mix_keys k
JOIN turn_credit c ON hash_key(c.traj_id) = k.traj_key;

-- The question category of each valid yes-citation of the credit set's
-- trajectories, at its turn (credit_citations carries its question's
-- category: a join with questions here built on the citations, 25 MB at 4x).
CREATE VIEW report_citations AS
SELECT c.traj_id, c.t, c.category
FROM credit_keys k
JOIN credit_citations c ON hash_key(c.traj_id) = k.traj_key
WHERE c.valid AND c.answer = 1 AND c.category IS NOT NULL;
