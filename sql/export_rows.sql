-- The SFT rows of rows_in as four streams sorted by each row's place in row_id order (ord),
-- which export/sft_rows.rs merges a row at a time (turnlake export sft, turnlake validate).
-- Reads: rows_in (the rows: sft_mix or a product table), messages, turns, turn_credit,
-- turn_labels.
-- Defines: export_rows, export_messages, export_train_turns, export_credit, export_judged
-- (export_row_keys is what their joins build on).

-- Each row's place in row_id order (1, 2, ...), the key of its trajectory, the last message
-- it reads and its train turns: a few dozen bytes a row (with the rows' own strings there,
-- several times that: bench/README.md). A key two trajectories share lets the other's
-- messages and turns through, and the reader drops them by their traj_id. (row_id is unique
-- in the mix and in each product, so every query numbers the rows alike.)
CREATE VIEW export_row_keys AS
SELECT row_number() OVER (ORDER BY row_id) AS ord, hash_key(traj_id) AS key, upto_msg, train_turns
FROM rows_in;

-- The rows themselves by their place in row_id order (the window's sort is the only one:
-- its output is in ord order).
CREATE VIEW export_rows AS
SELECT row_number() OVER (ORDER BY row_id) AS ord,
       arrow_cast(row_id, 'Utf8') AS row_id, arrow_cast(mix, 'Utf8') AS mix,
       arrow_cast(traj_id, 'Utf8') AS traj_id
FROM rows_in
ORDER BY 1;

-- Each row's messages as the model saw them (no exit record, no response the agent
-- rejected), and whether each still has the digests ingest stored. Which of them train
-- comes from the train turns' stream (their msg_idx). Strings are plain Utf8 before the
-- sort: a joined string view keeps pointing into the whole batch it came from, which the
-- sort would count (ten times over) against its memory budget.
CREATE VIEW export_messages AS
SELECT k.ord, arrow_cast(m.traj_id, 'Utf8') AS traj_id, m.idx,
       arrow_cast(m.role, 'Utf8') AS role, arrow_cast(m.content, 'Utf8') AS content,
       arrow_cast(m.reasoning_content, 'Utf8') AS reasoning_content,
       arrow_cast(m.tool_calls, 'Utf8') AS tool_calls,
       arrow_cast(m.tool_call_id, 'Utf8') AS tool_call_id,
       content_intact(m.content, m.content_sha, m.reasoning_content, m.tool_calls,
                      m.tool_call_id, m.fields_sha) AS intact
FROM export_row_keys k
JOIN messages m ON hash_key(m.traj_id) = k.key AND (k.upto_msg IS NULL OR m.idx <= k.upto_msg)
WHERE m.role <> 'exit' AND m.recovered IS NOT TRUE
ORDER BY 1, 3;

-- Each row's train turns (its trajectory's turns listed in train_turns), with the message
-- each one is.
CREATE VIEW export_train_turns AS
SELECT k.ord, arrow_cast(u.traj_id, 'Utf8') AS traj_id, u.t, u.msg_idx,
       arrow_cast(u.cmd_kind, 'Utf8') AS cmd_kind, u.prev_failed
FROM export_row_keys k
JOIN turns u ON hash_key(u.traj_id) = k.key AND array_has(k.train_turns, u.t)
ORDER BY 1, 3;

-- The credit of each row's train turns (judged turns have it). A join of the train turns
-- with their credit would build on the train turns, with their strings; the two sorted
-- streams are merged in Rust instead.
CREATE VIEW export_credit AS
SELECT k.ord, arrow_cast(c.traj_id, 'Utf8') AS traj_id, c.t, c.credit,
       arrow_cast(c.tags, 'List(Utf8)') AS tags
FROM export_row_keys k
JOIN turn_credit c ON hash_key(c.traj_id) = k.key AND array_has(k.train_turns, c.t)
ORDER BY 1, 3;

-- Every labelled turn among each row's messages, train turn or not, with the message it is
-- and its label: the judge's credit where a judge saw the trajectory, else the local
-- scorer's turn_labels (only while its turn_sha is the turn's: a relabelled turn has no
-- stale label). The labels of `export sft --for kto`, read only for it.
CREATE VIEW export_judged AS
SELECT k.ord, arrow_cast(c.traj_id, 'Utf8') AS traj_id, c.t, u.msg_idx, c.credit,
       c.credit > 0 AS label, 'judge' AS label_source
FROM export_row_keys k
JOIN turn_credit c ON hash_key(c.traj_id) = k.key
JOIN turns u ON u.traj_id = c.traj_id AND u.t = c.t
WHERE k.upto_msg IS NULL OR u.msg_idx <= k.upto_msg
UNION ALL
SELECT k.ord, arrow_cast(l.traj_id, 'Utf8') AS traj_id, l.t, u.msg_idx,
       CAST(NULL AS DOUBLE) AS credit, l.earns_credit AS label, 'scorer' AS label_source
FROM export_row_keys k
JOIN turn_labels l ON hash_key(l.traj_id) = k.key
JOIN turns u ON u.traj_id = l.traj_id AND u.t = l.t AND u.turn_sha = l.turn_sha
WHERE (k.upto_msg IS NULL OR u.msg_idx <= k.upto_msg)
  AND l.traj_id NOT IN (SELECT DISTINCT traj_id FROM turn_credit)
ORDER BY 1, 3;
