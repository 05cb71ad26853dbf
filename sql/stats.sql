-- Where credit lives (turnlake stats). Reads: stats_cells, stats_citing and
-- stats_judged_turns (sql/stats_cells.sql summed over every bucket of sides),
-- credit_citations, trajectories and turns.

-- Every figure over scored turns is a ratio of sums of the cells, taken in the order the
-- averages over the turns themselves took it (a share times 100, not 100 times a count
-- over a count), so it rounds the same; only the sums of credit add in another order.
CREATE VIEW stats_by_kind AS
SELECT cmd_kind,
       sum(turns) AS turns,
       CAST(sum(turns) AS DOUBLE) / (SELECT sum(turns) AS scored FROM stats_cells) AS share,
       sum(credit) / CAST(sum(turns) AS DOUBLE) AS mean_credit,
       100.0 * (CAST(sum(earning) AS DOUBLE) / sum(turns)) AS pct_earning
FROM stats_cells
GROUP BY cmd_kind;

CREATE VIEW stats_by_turn AS
SELECT t,
       sum(turns) AS turns,
       sum(credit) / CAST(sum(turns) AS DOUBLE) AS mean_credit,
       100.0 * (CAST(sum(earning) AS DOUBLE) / sum(turns)) AS pct_earning
FROM stats_cells
WHERE t BETWEEN 1 AND 16
GROUP BY t;

-- The failure share counts a turn's own observation, over scored turns an observation
-- follows; "after a failure" compares turns whose previous observation failed with all.
CREATE VIEW stats_exposure_sums AS
SELECT CAST(sum(turns) FILTER (WHERE own_failed) AS DOUBLE) AS own_failed,
       CAST(sum(turns) FILTER (WHERE own_failed IS NOT NULL) AS DOUBLE) AS own_observed,
       CAST(sum(turns) FILTER (WHERE after_failure) AS DOUBLE) AS after_failure,
       CAST(sum(turns) FILTER (WHERE after_failure IS NOT NULL) AS DOUBLE) AS after_observed,
       CAST(sum(earning) FILTER (WHERE after_failure) AS DOUBLE) AS earning_after_failure,
       CAST(sum(earning) FILTER (WHERE NOT after_failure) AS DOUBLE) AS earning_otherwise,
       CAST(sum(turns) FILTER (WHERE NOT after_failure) AS DOUBLE) AS otherwise,
       CAST(sum(earning) AS DOUBLE) AS earning,
       CAST(sum(turns) AS DOUBLE) AS scored
FROM stats_cells;

CREATE VIEW stats_exposure AS
SELECT coalesce(own_failed, 0) / own_observed AS share_failed_own,
       coalesce(after_failure, 0) / after_observed AS share_after_failure,
       100.0 * (coalesce(earning_after_failure, 0) / after_failure) AS pct_earning_after_failure,
       100.0 * (coalesce(earning_otherwise, 0) / otherwise) AS pct_earning_otherwise,
       100.0 * (coalesce(earning, 0) / scored) AS pct_earning_baseline,
       1.0 - (coalesce(earning_after_failure, 0) / after_failure) / (coalesce(earning, 0) / scored) AS relative_cost
FROM stats_exposure_sums;

CREATE VIEW stats_scored AS
SELECT coalesce(sum(turns), 0) AS n FROM stats_cells;

CREATE VIEW stats_by_tag AS
SELECT coalesce(tag, '(none)') AS tag,
       sum(weight) AS credit,
       sum(weight) / (SELECT sum(weight) AS total FROM credit_citations WHERE valid AND answer = 1) AS share
FROM credit_citations
WHERE valid AND answer = 1
GROUP BY coalesce(tag, '(none)');

CREATE VIEW stats_citing_shares AS
SELECT CAST(sum(citing) AS DOUBLE) / sum(explanations) AS share_citing,
       CAST(sum(yes_uncited) AS DOUBLE) / sum(yes) AS share_yes_uncited
FROM stats_citing;

-- The Albedo corpus the figures come from.
CREATE VIEW stats_corpus AS
SELECT (SELECT count(*) FROM (SELECT DISTINCT eval_run_id, sample_id FROM trajectories WHERE source = 'albedo' AND judged)) AS samples,
       (SELECT count(*) FROM trajectories WHERE source = 'albedo' AND judged) AS sides,
       (SELECT coalesce(sum(albedo_turns), 0) FROM stats_judged_turns) AS albedo_turns,
       (SELECT count(*) FROM trajectories WHERE source = 'mini_coder') AS mini_coder_trajectories,
       (SELECT avg(CAST(n_turns AS DOUBLE)) FROM trajectories WHERE source = 'mini_coder') AS mini_coder_mean_turns,
       (SELECT avg(CASE WHEN u.is_submit THEN 1.0 ELSE 0.0 END) FROM turns u
        WHERE u.source = 'mini_coder' AND u.is_last) AS mini_coder_submit_share;

-- Who played: the judged Albedo sides by the model that played them (the
-- dashboard's model_uri; not named where no dashboard entry was ingested).
CREATE VIEW stats_by_model AS
SELECT coalesce(model, '(not named)') AS model,
       count(*) AS sides,
       count(DISTINCT eval_run_id) AS runs,
       count(*) FILTER (WHERE side = 'previous_king') AS king_sides,
       -- Summed as decimals: a float sum's last digits follow the order the
       -- partitions arrive in, and the report must not change from run to run.
       CAST(avg(CAST(score AS DECIMAL(38, 12))) AS DOUBLE) AS mean_score
FROM trajectories WHERE source = 'albedo' AND judged GROUP BY 1;

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
