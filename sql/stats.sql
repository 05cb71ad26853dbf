-- Where credit lives (turnlake stats). Reads: turns, turn_credit, credit_citations, judgments.

-- Every scored turn with its credit, whether its own observation failed (null when none
-- follows) and whether the observation before it failed (the previous turn may be a
-- context turn).
CREATE VIEW stats_scored AS
SELECT s.traj_id, s.t, s.cmd_kind, s.obs_failed AS own_failed, s.prev_failed AS after_failure,
       c.credit, c.credit > 0 AS earned
FROM turns s
JOIN turn_credit c ON c.traj_id = s.traj_id AND c.t = s.t
WHERE s.source = 'albedo';

CREATE VIEW stats_by_kind AS
SELECT cmd_kind,
       count(*) AS turns,
       CAST(count(*) AS DOUBLE) / (SELECT count(*) FROM stats_scored) AS share,
       avg(credit) AS mean_credit,
       100.0 * avg(CAST(earned AS DOUBLE)) AS pct_earning
FROM stats_scored
GROUP BY cmd_kind;

CREATE VIEW stats_by_turn AS
SELECT t, count(*) AS turns, avg(credit) AS mean_credit, 100.0 * avg(CAST(earned AS DOUBLE)) AS pct_earning
FROM stats_scored
WHERE t BETWEEN 1 AND 16
GROUP BY t;

-- The failure share counts a turn's own observation, over scored turns an observation
-- follows; "after a failure" compares turns whose previous observation failed with all.
CREATE VIEW stats_exposure AS
SELECT avg(CAST(own_failed AS DOUBLE)) AS share_failed_own,
       avg(CAST(after_failure AS DOUBLE)) AS share_after_failure,
       100.0 * avg(CASE WHEN after_failure THEN CAST(earned AS DOUBLE) END) AS pct_earning_after_failure,
       100.0 * avg(CASE WHEN NOT after_failure THEN CAST(earned AS DOUBLE) END) AS pct_earning_otherwise,
       100.0 * avg(CAST(earned AS DOUBLE)) AS pct_earning_baseline,
       1.0 - avg(CASE WHEN after_failure THEN CAST(earned AS DOUBLE) END) / avg(CAST(earned AS DOUBLE)) AS relative_cost
FROM stats_scored;

CREATE VIEW stats_by_tag AS
SELECT coalesce(tag, '(none)') AS tag,
       sum(weight) AS credit,
       sum(weight) / (SELECT sum(weight) AS total FROM credit_citations WHERE valid AND answer = 1) AS share
FROM credit_citations
WHERE valid AND answer = 1
GROUP BY coalesce(tag, '(none)');

CREATE VIEW stats_citing AS
SELECT CAST(count(*) FILTER (WHERE cardinality(cited_outputs) > 0) AS DOUBLE) / count(*) AS share_citing,
       CAST(count(*) FILTER (WHERE answer = 1 AND cardinality(cited_outputs) = 0) AS DOUBLE)
         / count(*) FILTER (WHERE answer = 1) AS share_yes_uncited,
       count(*) AS explanations
FROM judgments
WHERE traj_id IN (SELECT traj_id FROM turn_credit);

-- The Albedo corpus the figures come from.
CREATE VIEW stats_corpus AS
SELECT (SELECT count(*) FROM (SELECT DISTINCT eval_run_id, sample_id FROM trajectories WHERE source = 'albedo' AND judged)) AS samples,
       (SELECT count(*) FROM trajectories WHERE source = 'albedo' AND judged) AS sides,
       (SELECT count(*) FROM turns u JOIN trajectories s ON s.traj_id = u.traj_id
        WHERE s.source = 'albedo' AND s.judged) AS albedo_turns,
       (SELECT count(*) FROM trajectories WHERE source = 'mini_coder') AS mini_coder_trajectories,
       (SELECT avg(CAST(n_turns AS DOUBLE)) FROM trajectories WHERE source = 'mini_coder') AS mini_coder_mean_turns,
       (SELECT avg(CASE WHEN u.is_submit THEN 1.0 ELSE 0.0 END) FROM turns u
        WHERE u.source = 'mini_coder' AND u.is_last) AS mini_coder_submit_share;

-- What `other` holds, by the program that decided it, per source: where the
-- command-kind taxonomy could grow.
CREATE VIEW stats_other_heads AS
SELECT o.source, o.head, o.turns,
       CAST(o.turns AS DOUBLE) / a.other_turns AS share_of_other,
       CAST(a.other_turns AS DOUBLE) / a.all_turns AS other_share_of_source
FROM (SELECT source, coalesce(cmd_head(command), '(no bash block)') AS head, count(*) AS turns
      FROM turns WHERE cmd_kind = 'other' GROUP BY 1, 2) o
JOIN (SELECT source, count(*) AS all_turns, count(*) FILTER (WHERE cmd_kind = 'other') AS other_turns
      FROM turns GROUP BY source) a ON a.source = o.source;
