-- Command kinds x failure share over every turn of the lake, per source (the issue's
-- measured `sql` query: a scan of all 13.1M turns at reference scale).
SELECT source,
       cmd_kind,
       count(*) AS turns,
       avg(CAST(obs_failed AS DOUBLE)) AS share_failed,
       avg(CAST(is_repeat AS DOUBLE)) AS share_repeat
FROM {turns}
GROUP BY source, cmd_kind
ORDER BY source, cmd_kind
