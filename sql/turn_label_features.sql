-- Per-turn features of the turn-credit model (turnlake scorer fit / eval / label):
-- one row per assistant turn of every trajectory, labelled with whether it
-- earned judge credit where a judge scored it.
-- Reads: turns, trajectories, messages, turn_credit.
-- Defines: the view turn_label_features.

CREATE VIEW turn_label_features AS
SELECT u.traj_id, u.source, u.t, u.turn_sha, tr.eval_run_id,
       u.cmd_kind,
       CAST(u.t AS DOUBLE) AS t_index,
       CAST(u.t AS DOUBLE) / greatest(tr.n_turns, 1) AS t_share,
       CAST(coalesce(u.prev_failed, false) AS DOUBLE) AS prev_failed,
       CAST(coalesce(u.obs_failed, false) AS DOUBLE) AS obs_failed,
       CAST(coalesce(u.is_repeat, false) AS DOUBLE) AS is_repeat,
       CAST(coalesce(u.repeats_prev, false) AS DOUBLE) AS repeats_prev,
       CAST(coalesce(u.after_repeat_run, false) AS DOUBLE) AS after_repeat_run,
       CAST(u.prior_failures AS DOUBLE) AS prior_failures,
       CAST(u.n_bash_blocks AS DOUBLE) AS n_bash_blocks,
       CAST(coalesce(u.think_unclosed, false) AS DOUBLE) AS think_unclosed,
       CAST(coalesce(u.is_submit, false) AS DOUBLE) AS is_submit,
       CAST(count(*) OVER (PARTITION BY u.traj_id, u.cmd_kind ORDER BY u.t
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS DOUBLE) AS prior_same_kind,
       CAST(word_count(m.content) AS DOUBLE) AS words,
       CAST(character_length(m.content) AS DOUBLE) AS chars,
       coalesce(tr.judged AND NOT tr.looped AND u.candidate_n IS NOT NULL, false) AS judged_turn,
       CASE WHEN c.traj_id IS NULL THEN NULL WHEN c.credit > 0 THEN 1 ELSE 0 END AS label
FROM turns u
JOIN trajectories tr ON tr.traj_id = u.traj_id
LEFT JOIN messages m ON m.traj_id = u.traj_id AND m.idx = u.msg_idx
LEFT JOIN turn_credit c ON c.traj_id = u.traj_id AND c.t = u.t;
