-- The DuckDB peer of `turnlake ingest mini-coder` (bench/reference.sh): the
-- same extraction over the same shards, written as partitioned Parquet
-- (trajectories, messages, turns, PARTITION_BY source, zstd), on 2 threads.
-- Run by bench/peers/duckdb_run.py once per batch of input files (a
-- trajectory never spans files, so batches only bound memory), filling in
-- {shards} (a read_parquet over the batch, with filename and file_row_number),
-- {out} and {batch}. Statements end with ';' at the end of a line.
--
-- It mirrors src/source/derive.rs and src/turn/* with regular expressions:
-- bash blocks, first-command kind (cmd_kind.rs, without quote-aware
-- splitting), return code and failure (observation.rs), submit by command or
-- observation marker (markers.rs), unclosed <think>, content sha256, the
-- chained turn sha (both stored as their first 16 hex digits), repeats and loop metrics. Not mirrored: rejects, the
-- `exit` submit signal (mini-coder has no exit records), re-ingest dedup.

SET threads = 2;
SET preserve_insertion_order = false;

-- Commands (src/turn/cmd_kind.rs, approximated without quote handling).
-- The line that decides: leading setup segments (cd, export, ...) and setup
-- lines skipped, then the rest of that line.
CREATE OR REPLACE TEMP MACRO decide_line(cmd) AS regexp_extract(cmd,
  '^(?:\s*(?:cd|export|source|\.|set|pushd|pwd)(?:[ \t][^\n;&|]*)?(?:&&|\|\||;|\n))*\s*([^\n]*)', 1);
-- Its first chain segment (up to &&, || or ;), pipeline stages kept.
CREATE OR REPLACE TEMP MACRO first_segment(line) AS regexp_extract(line, '^((?:[^;&|]|&[^&]|\|[^|])*)', 1);
-- A stage without its wrappers (sudo, env, timeout N, VAR=value).
CREATE OR REPLACE TEMP MACRO unwrap_stage(stage) AS regexp_replace(trim(stage),
  '^(?:(?:sudo|env|command|exec)\s+|timeout\s+(?:-\S+\s+|\d\S*\s+)*|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*', '');
CREATE OR REPLACE TEMP MACRO prog_of(stage) AS regexp_replace(regexp_replace(
  regexp_extract(unwrap_stage(stage), '^(\S+)', 1), '[''"]', '', 'g'), '^.*/', '');
CREATE OR REPLACE TEMP MACRO args_of(stage) AS regexp_replace(unwrap_stage(stage), '^\S+', '');
CREATE OR REPLACE TEMP MACRO has_flag(args, f) AS
  regexp_matches(split_part(args, ' -- ', 1), '(?:^|\s)-[A-Za-z0-9]*' || f || '[A-Za-z0-9]*(?:\s|$)');
-- An output redirect into a file other than /dev/null (not 2>&1).
CREATE OR REPLACE TEMP MACRO writes_file(s) AS
  len(list_filter(regexp_extract_all(s, '>>?[ \t]*([^ \t&>][^ \t]*)', 1), lambda x: x <> '/dev/null')) > 0;
CREATE OR REPLACE TEMP MACRO sed_n_stage(stage) AS
  prog_of(stage) = 'sed' AND has_flag(args_of(stage), 'n') AND NOT has_flag(args_of(stage), 'i');

-- The kind, from the deciding line, its segment, that segment's first stage
-- and that stage's program and arguments (columns, computed once a turn).
CREATE OR REPLACE TEMP MACRO kind_of(line, seg, stage, prog, args) AS CASE
  WHEN contains(seg, 'sed') AND len(list_filter(string_split(seg, '|'), lambda st: sed_n_stage(st))) > 0 THEN 'sed -n'
  WHEN prog = 'cat' AND (writes_file(stage) OR (contains(line, '<<') AND writes_file(line))) THEN 'edit'
  WHEN prog = 'cat' AND has_flag(args, 'n') THEN 'cat -n'
  WHEN prog = 'nl' THEN 'cat -n'
  WHEN prog IN ('cat', 'head', 'tail') THEN 'cat'
  WHEN prog IN ('echo', 'printf') AND (writes_file(stage) OR (contains(line, '<<') AND writes_file(line))) THEN 'edit'
  WHEN prog IN ('sed', 'perl') AND has_flag(args, 'i') THEN 'edit'
  WHEN prog IN ('tee', 'patch', 'ed') THEN 'edit'
  WHEN prog = 'git' AND regexp_matches(args, '^\s*apply\b') THEN 'edit'
  WHEN prog = 'git' AND regexp_matches(args, '^\s*grep\b') THEN 'grep -r'
  WHEN prog IN ('grep', 'egrep', 'fgrep') AND (has_flag(args, 'r') OR has_flag(args, 'R')
       OR regexp_matches(args, '\s--(?:dereference-)?recursive\b')) THEN 'grep -r'
  WHEN prog IN ('grep', 'egrep', 'fgrep') THEN 'grep'
  WHEN prog IN ('rg', 'ag') THEN 'grep -r'
  WHEN prog IN ('python', 'python3', 'pytest', 'py.test') OR starts_with(prog, 'python3.') THEN 'pytest/python'
  WHEN prog IN ('find', 'ls', 'tree') THEN 'find/ls'
  ELSE 'other' END;

-- Submit markers (src/turn/markers.rs).
CREATE OR REPLACE TEMP MACRO submit_command(c) AS regexp_matches(c,
  '(?:^|[\s;&|(){}`])(?:echo|printf)\s[^;&|\n]*?\b(?:COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT|COMPLETE_TASK_AND_SUBMIT_FINAL_ANSWER|FINALIZE_AND_SUBMIT_TASK_OUTPUT|ALBEDO_TASK_DONE_SUBMIT_NOW|SUBMIT_TASK_[0-9a-fA-F]{8})\b');
CREATE OR REPLACE TEMP MACRO submit_observation(o) AS regexp_matches(o,
  '^[\s''"]*(?:<returncode>(?s:.*?)<output(?:_head)?>[\r\n]*)?(?:COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT|COMPLETE_TASK_AND_SUBMIT_FINAL_ANSWER|FINALIZE_AND_SUBMIT_TASK_OUTPUT|ALBEDO_TASK_DONE_SUBMIT_NOW|SUBMIT_TASK_[0-9a-fA-F]{8})[ \t\r]*(?:\n|$)');

-- Observations (src/turn/observation.rs).
CREATE OR REPLACE TEMP MACRO obs_format_of(o) AS CASE
  WHEN o IS NULL THEN NULL
  WHEN regexp_matches(o, '^[\s''"]*<returncode>') THEN 'RETURNCODE'
  WHEN regexp_matches(o, '^[\s''"]*OBSERVATION:') THEN 'SWE_AGENT'
  ELSE 'OPENHANDS' END;
CREATE OR REPLACE TEMP MACRO returncode_of(fmt, o) AS CASE WHEN coalesce(fmt, 'OPENHANDS') = 'RETURNCODE'
  THEN TRY_CAST(regexp_extract(o, '<returncode>\s*(-?\d+)\s*</returncode>', 1) AS BIGINT)
  ELSE TRY_CAST(list_last(regexp_extract_all(o,
    '\[(?:The command completed with exit code|Command finished with exit code) (-?\d+)\.?\]', 1)) AS BIGINT) END;
CREATE OR REPLACE TEMP MACRO editor_output(o) AS regexp_matches(o,
  '^[\s''"]*(?:Here''s the result of running `cat -n`|Here''s the files and directories|File created successfully at:|The file (?s:.*) has been edited\.)');
CREATE OR REPLACE TEMP MACRO obs_failed_of(fmt, o, rc) AS CASE
  WHEN o IS NULL THEN NULL
  WHEN coalesce(fmt, 'OPENHANDS') <> 'RETURNCODE' AND editor_output(o) THEN false
  WHEN rc IS NOT NULL THEN rc <> 0
  ELSE regexp_matches(left(o, 600), 'No bash command found in assistant message|Please always provide EXACTLY ONE action|timed out and has been killed')
    OR (coalesce(fmt, 'OPENHANDS') <> 'RETURNCODE' AND regexp_matches(o,
      '(?m)(command not found|Traceback \(most recent call last\)|No such file or directory|^\w*Error: |^ERROR: |Permission denied|syntax error|cannot access|fatal: )'))
  END;
CREATE OR REPLACE TEMP MACRO norm_command(c) AS trim(regexp_replace(c, '\s+', ' ', 'g'));

-- One row per trajectory: its key (sha256 over every message's role and
-- content, as messages_sha), every message's content sha, and the format of
-- its first observation.
CREATE OR REPLACE TEMP TABLE traj AS
SELECT 'mini_coder/' || instance_id || '/' || left(traj_sha, 16) AS traj_id, *,
       obs_format_of(messages[list_filter(generate_series(1, len(messages) - 1),
         lambda i: messages[i].role = 'assistant' AND messages[i + 1].role IN ('user', 'tool'))[1] + 1].content) AS obs_format
FROM (
  SELECT instance_id, model, verified, filename AS input_file, file_row_number + 1 AS input_row, messages,
         sha256(array_to_string(list_transform(messages, lambda m:
           coalesce(m.role, '') || chr(0) || coalesce(m.content, '') || chr(0) || chr(0) || chr(1)), '')) AS traj_sha,
         list_transform(messages, lambda m: sha256(coalesce(m.content, ''))) AS shas
  FROM {shards}
  WHERE instance_id IS NOT NULL AND len(messages) > 0
);

COPY (
  SELECT traj_id, 'mini_coder' AS source, CAST(i - 1 AS INTEGER) AS idx, messages[i].role AS role,
         messages[i].content AS content, NULL::VARCHAR AS reasoning_content, NULL::VARCHAR AS tool_calls,
         false AS score_target, false AS environment_observation, false AS is_context, left(shas[i], 16) AS content_sha
  FROM (SELECT traj_id, messages, shas, unnest(generate_series(1, len(messages))) AS i FROM traj)
) TO '{out}/messages' (FORMAT parquet, PARTITION_BY (source), COMPRESSION zstd,
  OVERWRITE_OR_IGNORE, FILENAME_PATTERN 'batch{batch}_{i}');

-- One row per assistant message, with the message after it.
CREATE OR REPLACE TEMP TABLE turn_raw AS
WITH a AS (
  SELECT traj_id, obs_format, t, i, messages[i].content AS content,
         CASE WHEN messages[i + 1].role IN ('user', 'tool') THEN messages[i + 1].content END AS obs,
         left(sha256(array_to_string(shas[1:i], '')), 16) AS turn_sha
  FROM (
    SELECT traj_id, obs_format, messages, shas, unnest(asst) AS i, generate_subscripts(asst, 1) AS t
    FROM (SELECT *, list_filter(generate_series(1, len(messages)), lambda i: messages[i].role = 'assistant') AS asst FROM traj)
  )
), b AS (
  SELECT *, regexp_extract_all(content, '(?s)```(?:bash|mswea_bash_command)\s*\n(.*?)\n```', 1) AS blocks,
         returncode_of(obs_format, obs) AS returncode
  FROM a
), c AS (
  SELECT *, blocks[1] AS command, decide_line(ltrim(blocks[1])) AS line,
         CASE WHEN submit_command(blocks[1]) THEN 'command'
              WHEN submit_observation(obs) THEN 'observation' END AS submit_signal
  FROM b
), d AS (
  SELECT *, split_part(seg, '|', 1) AS stage, unwrap_stage(split_part(seg, '|', 1)) AS bare
  FROM (SELECT *, first_segment(line) AS seg FROM c)
), e AS (
  SELECT *, regexp_replace(regexp_replace(regexp_extract(bare, '^(\S+)', 1), '[''"]', '', 'g'), '^.*/', '') AS prog,
         regexp_replace(bare, '^\S+', '') AS args
  FROM d
)
SELECT traj_id, CAST(t AS INTEGER) AS t, CAST(i - 1 AS INTEGER) AS msg_idx, command,
       CAST(len(blocks) AS INTEGER) AS n_bash_blocks,
       CASE WHEN submit_signal IS NOT NULL THEN 'submit' WHEN command IS NULL THEN 'other'
            ELSE kind_of(line, seg, stage, prog, args) END AS cmd_kind,
       obs_failed_of(obs_format, obs, returncode) AS obs_failed, returncode,
       contains(content, '<think>') AND NOT contains(regexp_extract(content, '(?s).*<think>(.*)', 1), '</think>') AS think_unclosed,
       submit_signal IS NOT NULL AS is_submit, submit_signal,
       CASE WHEN submit_signal IS NULL THEN norm_command(command) END AS norm,
       turn_sha
FROM e;

-- What each turn inherits from the ones before it.
CREATE OR REPLACE TEMP TABLE turn_rows AS
SELECT *, coalesce(lag(repeats_prev) OVER w, false) AS after_repeat_run
FROM (
  SELECT *,
         coalesce(count(norm) OVER (PARTITION BY traj_id, norm ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) > 0
           AND norm IS NOT NULL AS is_repeat,
         coalesce(norm_command(command) = norm_command(lag(command) OVER w), false) AS repeats_prev,
         coalesce(lag(obs_failed) OVER w, false) AS prev_failed,
         t = count(*) OVER (PARTITION BY traj_id) AS is_last
  FROM turn_raw
  WINDOW w AS (PARTITION BY traj_id ORDER BY t)
)
WINDOW w AS (PARTITION BY traj_id ORDER BY t);

COPY (
  SELECT traj_id, 'mini_coder' AS source, t, msg_idx, NULL::INTEGER AS candidate_n, command, n_bash_blocks, cmd_kind,
         obs_failed, returncode, think_unclosed, is_submit, submit_signal, is_repeat, repeats_prev, prev_failed,
         after_repeat_run,
         -- consecutive failures right before: turns since the last non-failure
         CAST(t - 1 - coalesce(max(CASE WHEN NOT coalesce(obs_failed, false) THEN t END)
           OVER (PARTITION BY traj_id ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS INTEGER) AS prior_failures,
         is_last, turn_sha
  FROM turn_rows
) TO '{out}/turns' (FORMAT parquet, PARTITION_BY (source), COMPRESSION zstd,
  OVERWRITE_OR_IGNORE, FILENAME_PATTERN 'batch{batch}_{i}');

-- Loop metrics over the non-submit commands: repeat share and longest run.
CREATE OR REPLACE TEMP TABLE loops AS
SELECT traj_id, 1.0 - CAST(count(DISTINCT norm) AS DOUBLE) / count(*) AS dup_cmd_ratio, max(run) AS max_cmd_run
FROM (
  SELECT traj_id, norm, count(*) OVER (PARTITION BY traj_id, grp) AS run
  FROM (
    SELECT traj_id, norm, sum(CASE WHEN norm IS NOT DISTINCT FROM prev THEN 0 ELSE 1 END) OVER (PARTITION BY traj_id ORDER BY t) AS grp
    FROM (SELECT traj_id, t, norm, lag(norm) OVER (PARTITION BY traj_id ORDER BY t) AS prev FROM turn_rows WHERE norm IS NOT NULL)
  )
)
GROUP BY traj_id;

COPY (
  SELECT r.traj_id, 'mini_coder' AS source, NULL::VARCHAR AS eval_run_id, NULL::VARCHAR AS sample_id, NULL::VARCHAR AS side,
         r.model, r.instance_id, NULL::DOUBLE AS score, r.verified, false AS judged,
         CAST(len(list_filter(r.messages, lambda m: m.role = 'assistant')) AS INTEGER) AS n_turns,
         CAST(len(list_filter(r.messages, lambda m: m.role = 'assistant')) AS INTEGER) AS n_scored, r.obs_format,
         coalesce(l.dup_cmd_ratio, 0.0) AS dup_cmd_ratio, CAST(coalesce(l.max_cmd_run, 0) AS INTEGER) AS max_cmd_run,
         coalesce(l.dup_cmd_ratio >= 0.65 OR l.max_cmd_run >= 6, false) AS looped,
         NULL::VARCHAR AS exit_status, NULL::VARCHAR AS submit_marker, NULL::VARCHAR AS error,
         r.traj_sha, r.input_file, r.input_row
  FROM traj r LEFT JOIN loops l ON l.traj_id = r.traj_id
) TO '{out}/trajectories' (FORMAT parquet, PARTITION_BY (source), COMPRESSION zstd,
  OVERWRITE_OR_IGNORE, FILENAME_PATTERN 'batch{batch}_{i}');

DROP TABLE traj;
DROP TABLE turn_raw;
DROP TABLE turn_rows;
DROP TABLE loops;
