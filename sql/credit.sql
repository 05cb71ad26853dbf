-- Per-turn credit from the judge's citations (turnlake credit).
-- Reads: judgments, questions, trajectories, turns.
-- Registered from the credit config (data/credit.toml):
--   tag_weights(tag, weight), credit_params(split_multi, default_weight).
-- Writes: credit_citations, turn_credit, side_credit.

-- One row per (judgment, cited output).
CREATE VIEW cited AS
SELECT j.traj_id, j.eval_run_id, j.sample_id, j.side, j.question_id, j.answer,
       cardinality(j.cited_outputs) AS n_cited,
       unnest(j.cited_outputs) AS candidate_n
FROM judgments j
WHERE j.answer IS NOT NULL AND cardinality(j.cited_outputs) > 0;

-- Each citation's weight, whether it names a real scored turn of that side,
-- and its question's tag and category.
CREATE VIEW credit_citations_v AS
SELECT c.traj_id, c.eval_run_id, c.sample_id, c.side, c.question_id, c.answer, c.candidate_n,
       u.t, q.tag, q.category,
       coalesce(w.weight, p.default_weight)
         * CASE WHEN p.split_multi THEN 1.0 / c.n_cited ELSE 1.0 END AS weight,
       u.t IS NOT NULL AS valid,
       CASE
         WHEN s.traj_id IS NULL THEN 'no trajectory for this side'
         WHEN u.t IS NULL THEN 'cites CANDIDATE OUTPUT ' || CAST(c.candidate_n AS VARCHAR)
              || ' but the side has ' || CAST(s.n_scored AS VARCHAR) || ' scored outputs'
       END AS reason
FROM credit_params p
CROSS JOIN cited c
LEFT JOIN questions q
  ON q.eval_run_id = c.eval_run_id AND q.sample_id = c.sample_id AND q.question_id = c.question_id
LEFT JOIN tag_weights w ON w.tag = q.tag
LEFT JOIN trajectories s ON s.traj_id = c.traj_id
LEFT JOIN turns u ON u.traj_id = c.traj_id AND u.candidate_n = c.candidate_n;

-- Every scored turn of a judged side, with what its valid citations give it.
CREATE VIEW turn_credit_v AS
SELECT t.traj_id, t.t, t.candidate_n, t.turn_sha,
       coalesce(sum(c.weight) FILTER (WHERE c.answer = 1), 0.0) AS credit,
       coalesce(sum(c.weight) FILTER (WHERE c.answer = 0), 0.0) AS blame,
       count(c.question_id) FILTER (WHERE c.answer = 1) AS n_yes,
       count(c.question_id) FILTER (WHERE c.answer = 0) AS n_no,
       coalesce(array_sort(array_distinct(array_agg(c.tag) FILTER (WHERE c.answer = 1 AND c.tag IS NOT NULL))),
                CAST([] AS VARCHAR[])) AS tags
FROM turns t
JOIN trajectories s ON s.traj_id = t.traj_id AND s.judged
LEFT JOIN credit_citations_v c ON c.traj_id = t.traj_id AND c.t = t.t AND c.valid
WHERE t.candidate_n IS NOT NULL
GROUP BY t.traj_id, t.t, t.candidate_n, t.turn_sha;

-- Per side: answers, yes-answers citing nothing, totals. Judgments are counted per side
-- before the join, so the join holds one row per side, not one per judgment.
CREATE VIEW side_credit_v AS
SELECT s.traj_id, s.eval_run_id, s.sample_id, s.side, s.score, s.looped,
       j.judgments, j.yes_answers, j.yes_uncited, j.citing_explanations,
       coalesce(x.invalid, 0) AS invalid_citations,
       coalesce(tc.credit, 0.0) AS credit,
       coalesce(tc.blame, 0.0) AS blame
FROM trajectories s
JOIN (SELECT traj_id,
             count(*) AS judgments,
             count(*) FILTER (WHERE answer = 1) AS yes_answers,
             count(*) FILTER (WHERE answer = 1 AND cardinality(cited_outputs) = 0) AS yes_uncited,
             count(*) FILTER (WHERE cardinality(cited_outputs) > 0) AS citing_explanations
      FROM judgments GROUP BY traj_id) j ON j.traj_id = s.traj_id
LEFT JOIN (SELECT traj_id, sum(credit) AS credit, sum(blame) AS blame FROM turn_credit_v GROUP BY traj_id) tc
  ON tc.traj_id = s.traj_id
LEFT JOIN (SELECT traj_id, count(*) AS invalid FROM credit_citations_v WHERE NOT valid GROUP BY traj_id) x
  ON x.traj_id = s.traj_id;
