-- The local scorer's features (turnlake scorer features / fit / eval / score):
-- one row per (side, checklist question) with the question's attributes, how
-- the side's scored outputs meet the question's kinds and quoted targets, the
-- side's own facts, and the judge's answer as the label where there is one.
-- Reads: scorer_sides(traj_id, eval_run_id, sample_id, side, model, first_t, last_t),
--        scorer_turns_src and scorer_messages_src (the lake's turns and messages,
--        or a user's runs), questions, judgments, and loop_params(dup_cmd_ratio,
--        max_cmd_run): the validator's loop_check thresholds.
-- Defines: the view scorer_features.

-- The side's scored outputs: turns first_t..last_t, with the assistant text.
CREATE VIEW scored_turns AS
SELECT s.traj_id, u.t, u.t - s.first_t + 1 AS pos, u.command, u.cmd_kind,
       coalesce(u.obs_failed, false) AS obs_failed, coalesce(u.prev_failed, false) AS prev_failed,
       coalesce(u.is_repeat, false) AS is_repeat, u.n_bash_blocks,
       CASE WHEN u.cmd_kind <> 'submit' THEN normalize_command(u.command) END AS cmd_norm,
       coalesce(m.content, '') AS content
FROM scorer_sides s
JOIN scorer_turns_src u ON u.traj_id = s.traj_id AND u.t BETWEEN s.first_t AND s.last_t
LEFT JOIN scorer_messages_src m ON m.traj_id = u.traj_id AND m.idx = u.msg_idx;

-- Trajectory-level facts of a side's scored outputs. The loop metrics are the validator's
-- (turn/loops.rs), over the commands other than submits in turn order.
CREATE VIEW side_facts AS
SELECT st.traj_id,
       count(*) AS n_outputs,
       count(*) FILTER (WHERE cmd_kind = 'cat -n') AS n_cat_n,
       count(*) FILTER (WHERE cmd_kind = 'sed -n') AS n_sed_n,
       count(*) FILTER (WHERE cmd_kind = 'cat') AS n_cat,
       count(*) FILTER (WHERE cmd_kind = 'edit') AS n_edit,
       count(*) FILTER (WHERE cmd_kind = 'grep -r') AS n_grep_r,
       count(*) FILTER (WHERE cmd_kind = 'grep') AS n_grep,
       count(*) FILTER (WHERE cmd_kind = 'pytest/python') AS n_python,
       count(*) FILTER (WHERE cmd_kind = 'find/ls') AS n_find_ls,
       count(*) FILTER (WHERE cmd_kind = 'submit') AS n_submit,
       count(*) FILTER (WHERE cmd_kind = 'other') AS n_other,
       count(*) FILTER (WHERE obs_failed) AS n_failed,
       count(*) FILTER (WHERE prev_failed) AS n_after_failure,
       count(*) FILTER (WHERE is_repeat) AS n_repeats,
       count(*) FILTER (WHERE n_bash_blocks IS DISTINCT FROM 1) AS n_malformed,
       dup_cmd_ratio(array_agg(command ORDER BY t) FILTER (WHERE cmd_norm IS NOT NULL)) AS dup_cmd_ratio,
       max_cmd_run(array_agg(command ORDER BY t) FILTER (WHERE cmd_norm IS NOT NULL)) AS max_cmd_run,
       sum(word_count(content)) AS total_words,
       max(word_count(content)) AS max_words,
       avg(word_count(content)) AS avg_words,
       sum(prose_word_count(content)) AS prose_words,
       sum(character_length(content)) AS total_chars,
       max(character_length(content)) AS max_chars,
       avg(character_length(content)) AS avg_chars
FROM scored_turns st
GROUP BY st.traj_id;

-- Checklist questions with what their text says.
CREATE VIEW question_facts AS
SELECT eval_run_id, sample_id, question_id, tag, requires, category, sample_phase,
       character_length(text) AS q_chars, word_count(text) AS q_words,
       economy_measure(text) AS econ_measure, economy_limit(text) AS econ_limit,
       question_kinds(text) AS q_kinds, question_targets(text) AS q_targets
FROM questions;

-- Scored outputs of the kinds a question is about.
CREATE VIEW kind_hits AS
SELECT s.traj_id, q.question_id,
       count(*) AS n_kind,
       min(st.pos) AS first_kind_pos,
       count(*) FILTER (WHERE st.obs_failed) AS n_kind_failed,
       count(*) FILTER (WHERE st.prev_failed) AS n_kind_after_failure,
       count(*) FILTER (WHERE st.is_repeat) AS n_kind_repeats
FROM (SELECT eval_run_id, sample_id, question_id, unnest(q_kinds) AS kind FROM question_facts) q
JOIN scorer_sides s ON s.eval_run_id = q.eval_run_id AND s.sample_id = q.sample_id
JOIN scored_turns st ON st.traj_id = s.traj_id AND st.cmd_kind = q.kind
GROUP BY s.traj_id, q.question_id;

-- Scored outputs that name a question's quoted targets, and what they do with them.
CREATE VIEW target_hits AS
SELECT s.traj_id, q.question_id,
       count(DISTINCT q.target) AS n_targets_hit,
       count(*) FILTER (WHERE st.cmd_kind IN ('cat -n', 'sed -n', 'cat', 'grep', 'grep -r')) AS n_target_reads,
       count(*) FILTER (WHERE st.cmd_kind = 'sed -n') AS n_target_ranged,
       count(*) FILTER (WHERE st.cmd_kind = 'edit') AS n_target_edits,
       count(*) FILTER (WHERE st.cmd_kind = 'pytest/python') AS n_target_runs,
       min(st.pos) AS first_target_pos,
       count(*) FILTER (WHERE st.prev_failed) AS n_target_after_failure
FROM (SELECT eval_run_id, sample_id, question_id, unnest(q_targets) AS target FROM question_facts) q
JOIN scorer_sides s ON s.eval_run_id = q.eval_run_id AND s.sample_id = q.sample_id
JOIN scored_turns st ON st.traj_id = s.traj_id AND strpos(st.content, q.target) > 0
GROUP BY s.traj_id, q.question_id;

-- The judge's answers and loop verdict per side.
CREATE VIEW side_labels AS
SELECT traj_id, question_id, max(answer) AS label, bool_or(coalesce(looped, false)) AS judge_looped,
       bool_or(explanation LIKE 'Trajectory is looped%') AS judge_loop_answer
FROM judgments
GROUP BY traj_id, question_id;

CREATE VIEW scorer_features_base AS
SELECT s.traj_id, s.eval_run_id, s.sample_id, s.side, s.model, q.question_id,
       q.tag, q.requires, q.category, q.sample_phase, q.econ_measure,
       CAST(q.q_chars AS DOUBLE) AS q_chars,
       CAST(q.q_words AS DOUBLE) AS q_words,
       CAST(cardinality(q.q_kinds) AS DOUBLE) AS q_n_kinds,
       CAST(cardinality(q.q_targets) AS DOUBLE) AS q_n_targets,
       q.econ_limit,
       CASE q.econ_measure
         WHEN 'total_words' THEN CAST(f.total_words AS DOUBLE)
         WHEN 'max_words' THEN CAST(f.max_words AS DOUBLE)
         WHEN 'avg_words' THEN f.avg_words
         WHEN 'prose_words' THEN CAST(f.prose_words AS DOUBLE)
         WHEN 'total_chars' THEN CAST(f.total_chars AS DOUBLE)
         WHEN 'max_chars' THEN CAST(f.max_chars AS DOUBLE)
         WHEN 'avg_chars' THEN f.avg_chars
       END AS econ_value,
       CAST(coalesce(k.n_kind, 0) AS DOUBLE) AS n_kind,
       CAST(k.first_kind_pos AS DOUBLE) AS first_kind_pos,
       CAST(coalesce(k.n_kind_failed, 0) AS DOUBLE) AS n_kind_failed,
       CAST(coalesce(k.n_kind_after_failure, 0) AS DOUBLE) AS n_kind_after_failure,
       CAST(coalesce(k.n_kind_repeats, 0) AS DOUBLE) AS n_kind_repeats,
       CAST(coalesce(h.n_targets_hit, 0) AS DOUBLE) AS n_targets_hit,
       CAST(coalesce(h.n_target_reads, 0) AS DOUBLE) AS n_target_reads,
       CAST(coalesce(h.n_target_ranged, 0) AS DOUBLE) AS n_target_ranged,
       CAST(coalesce(h.n_target_edits, 0) AS DOUBLE) AS n_target_edits,
       CAST(coalesce(h.n_target_runs, 0) AS DOUBLE) AS n_target_runs,
       CAST(h.first_target_pos AS DOUBLE) AS first_target_pos,
       CAST(coalesce(h.n_target_after_failure, 0) AS DOUBLE) AS n_target_after_failure,
       CAST(f.n_outputs AS DOUBLE) AS n_outputs,
       CAST(f.n_cat_n AS DOUBLE) AS n_cat_n,
       CAST(f.n_sed_n AS DOUBLE) AS n_sed_n,
       CAST(f.n_cat AS DOUBLE) AS n_cat,
       CAST(f.n_edit AS DOUBLE) AS n_edit,
       CAST(f.n_grep_r AS DOUBLE) AS n_grep_r,
       CAST(f.n_grep AS DOUBLE) AS n_grep,
       CAST(f.n_python AS DOUBLE) AS n_python,
       CAST(f.n_find_ls AS DOUBLE) AS n_find_ls,
       CAST(f.n_submit AS DOUBLE) AS n_submit,
       CAST(f.n_other AS DOUBLE) AS n_other,
       CAST(f.n_failed AS DOUBLE) AS n_failed,
       CAST(f.n_after_failure AS DOUBLE) AS n_after_failure,
       CAST(f.n_repeats AS DOUBLE) AS n_repeats,
       CAST(f.n_malformed AS DOUBLE) AS n_malformed,
       f.dup_cmd_ratio,
       CAST(f.max_cmd_run AS DOUBLE) AS max_cmd_run,
       CAST(f.total_words AS DOUBLE) AS total_words,
       CAST(f.max_words AS DOUBLE) AS max_words,
       f.avg_words,
       CAST(f.prose_words AS DOUBLE) AS prose_words,
       CAST(f.total_chars AS DOUBLE) AS total_chars,
       CAST(f.max_chars AS DOUBLE) AS max_chars,
       f.avg_chars,
       coalesce(f.dup_cmd_ratio >= p.dup_cmd_ratio OR f.max_cmd_run >= p.max_cmd_run, false) AS loop_verdict,
       coalesce(l.judge_looped OR l.judge_loop_answer, false) AS judge_looped,
       CAST(l.label AS INT) AS label
FROM scorer_sides s
JOIN question_facts q ON q.eval_run_id = s.eval_run_id AND q.sample_id = s.sample_id
CROSS JOIN loop_params p
LEFT JOIN side_facts f ON f.traj_id = s.traj_id
LEFT JOIN kind_hits k ON k.traj_id = s.traj_id AND k.question_id = q.question_id
LEFT JOIN target_hits h ON h.traj_id = s.traj_id AND h.question_id = q.question_id
LEFT JOIN side_labels l ON l.traj_id = s.traj_id AND l.question_id = q.question_id;

-- How far the measured value is from the economy limit (1.0 = at the limit).
CREATE VIEW scorer_features AS
SELECT *, econ_value / econ_limit AS econ_ratio
FROM scorer_features_base;
