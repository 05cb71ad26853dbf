"""How far the DuckDB peer's extraction agrees with turnlake's (bench/reference.sh).

Usage: python compare_ingest.py LAKE DUCKDB_OUT

Joins the lake's mini_coder turns and trajectories (the files their current
versions hold) with DuckDB's output (bench/peers/duckdb_mini_coder.sql) on
their keys, and prints, per column, how many rows differ. Not timed.
"""
import sys
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from lake_files import live_files  # noqa: E402

TURN_COLUMNS = ["msg_idx", "command", "n_bash_blocks", "cmd_kind", "obs_failed", "returncode", "think_unclosed",
                "is_submit", "submit_signal", "is_repeat", "repeats_prev", "prev_failed", "after_repeat_run",
                "prior_failures", "is_last", "turn_sha"]
TRAJ_COLUMNS = ["n_turns", "obs_format", "max_cmd_run", "looped", "traj_sha", "input_row"]
MESSAGE_COLUMNS = ["role", "content_sha"]


def main():
    lake, out = sys.argv[1], sys.argv[2]
    con = duckdb.connect()
    con.execute("SET threads = 2").fetchall()
    for table, key, cols in [("turns", ["traj_id", "t"], TURN_COLUMNS), ("trajectories", ["traj_id"], TRAJ_COLUMNS),
                              ("messages", ["traj_id", "idx"], MESSAGE_COLUMNS)]:
        files = ", ".join(f"'{f}'" for f in live_files(lake, table))
        lake_rel = f"(SELECT * FROM read_parquet([{files}], hive_partitioning = true) WHERE source = 'mini_coder')"
        peer_rel = f"read_parquet('{out}/{table}/**/*.parquet', hive_partitioning = true)"
        on = " AND ".join(f"l.{k} = d.{k}" for k in key)
        diffs = ", ".join(f"count(*) FILTER (WHERE l.{c} IS DISTINCT FROM d.{c})" for c in cols)
        row = con.execute(f"""
            SELECT (SELECT count(*) FROM {lake_rel}), (SELECT count(*) FROM {peer_rel}), count(*), {diffs}
            FROM {lake_rel} l JOIN {peer_rel} d ON {on}""").fetchone()
        n_lake, n_peer, matched, counts = row[0], row[1], row[2], row[3:]
        differ = [f"{c} {n} ({100 * n / max(matched, 1):.2f}%)" for c, n in zip(cols, counts) if n]
        print(f"{table}: {n_lake} in the lake, {n_peer} from DuckDB, {matched} matched by key; "
              + ("differing: " + ", ".join(differ) if differ else "every compared column agrees"))
        for c, n in zip(cols, counts):
            if n:  # one example of each difference
                ex = con.execute(f"""SELECT {', '.join('l.' + k for k in key)}, l.command, l.{c}, d.{c}
                    FROM {lake_rel} l JOIN {peer_rel} d ON {on} WHERE l.{c} IS DISTINCT FROM d.{c} LIMIT 1"""
                                 if table == "turns" else
                                 f"""SELECT {', '.join('l.' + k for k in key)}, l.{c}, d.{c}
                    FROM {lake_rel} l JOIN {peer_rel} d ON {on} WHERE l.{c} IS DISTINCT FROM d.{c} LIMIT 1""").fetchone()
                print(f"  e.g. {c}: " + " | ".join(repr(v)[:80] for v in ex) + "  (key..., lake, DuckDB)")


if __name__ == "__main__":
    main()
