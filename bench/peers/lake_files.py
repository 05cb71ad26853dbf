"""The Parquet files of a lake table as turnlake reads it (bench/reference.sh).

Usage: python lake_files.py LAKE TABLE   (prints one path a line)

A table's folder also holds files that later versions removed, so a glob over
it can count rows twice: this takes the table's version from the latest lake
commit (LAKE/_turnlake/log/*.json) and replays the table's Delta log
(_delta_log: the newest checkpoint at or before that version, then the JSON
commits after it) to list the files that version holds.
"""
import json
import sys
from pathlib import Path
from urllib.parse import unquote


def table_version(lake, table):
    log = sorted((Path(lake) / "_turnlake" / "log").glob("*.json"))
    if not log:
        raise SystemExit(f"{lake}: no lake commit")
    tables = json.loads(log[-1].read_text())["tables"]
    if table not in tables:
        raise SystemExit(f"{lake}: no table {table}")
    return tables[table]


def live_files(lake, table):
    root = Path(lake).resolve() / table
    log = root / "_delta_log"
    version = table_version(lake, table)
    files, start = set(), 0
    checkpoints = sorted(
        (int(p.name.split(".")[0]), p) for p in log.glob("*.checkpoint.parquet")
        if int(p.name.split(".")[0]) <= version)
    if checkpoints:
        import duckdb  # only for the checkpoint's Parquet

        v, path = checkpoints[-1]
        rows = duckdb.connect().execute(
            f"SELECT add.path FROM read_parquet('{path}') WHERE add IS NOT NULL").fetchall()
        files = {unquote(r[0]) for r in rows}
        start = v + 1
    for v in range(start, version + 1):
        for line in (log / f"{v:020}.json").read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                files.add(unquote(action["add"]["path"]))
            elif "remove" in action:
                files.discard(unquote(action["remove"]["path"]))
    return sorted(str(root / f) for f in files)


if __name__ == "__main__":
    print("\n".join(live_files(sys.argv[1], sys.argv[2])))
