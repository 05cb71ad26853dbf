"""Run a DuckDB peer SQL file over an input folder (bench/reference.sh).

Usage: python duckdb_run.py SQL_FILE INPUT_DIR OUTPUT_DIR

Empties OUTPUT_DIR, then runs the file's statements (each ends with ';' at
the end of a line) once per batch of input files, on one connection: every
*.parquet under INPUT_DIR (else every *.jsonl), DUCKDB_BATCH_FILES of them
(default 4) at a time. Batches keep memory bounded (the whole reference corpus
at once would not fit in 24 GB) while a batch of several files keeps both
threads busy (a shard is one row group). Fills in {shards} (the batch, with
filename and file_row_number), {out} (OUTPUT_DIR) and {batch} (its number).
The SQL file sets its own threads. Prints `duckdb VERSION: N.NN s wall`.
"""
import os
import shutil
import sys
import time
from pathlib import Path

import duckdb


def statements(text):
    stmt = []
    for line in text.splitlines():
        if not stmt and (not line.strip() or line.lstrip().startswith("--")):
            continue
        stmt.append(line)
        if line.rstrip().endswith(";") and not line.lstrip().startswith("--"):
            yield "\n".join(stmt)
            stmt = []
    if any(s.strip() and not s.lstrip().startswith("--") for s in stmt):
        yield "\n".join(stmt)


def reader(files):
    names = ", ".join(f"'{f}'" for f in files)
    if files[0].suffix == ".parquet":
        return f"read_parquet([{names}], filename = true, file_row_number = true)"
    # JSONL rows carry no row number: number them in file order.
    return (f"(SELECT *, row_number() OVER (PARTITION BY filename) - 1 AS file_row_number "
            f"FROM read_json([{names}], format = 'newline_delimited', filename = true))")


def main():
    sql_file, src, out = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()
    per_batch = int(os.environ.get("DUCKDB_BATCH_FILES", "4"))
    files = sorted(src.rglob("*.parquet")) or sorted(src.rglob("*.jsonl"))
    if not files:
        raise SystemExit(f"{src}: no *.parquet or *.jsonl file")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    text = Path(sql_file).read_text()
    t0 = time.perf_counter()
    con = duckdb.connect()
    batches = [files[i:i + per_batch] for i in range(0, len(files), per_batch)]
    for n, batch in enumerate(batches):
        sql = text.replace("{shards}", reader(batch)).replace("{out}", str(out)).replace("{batch}", f"{n:05}")
        for stmt in statements(sql):
            con.execute(stmt).fetchall()
    con.close()
    print(f"duckdb {duckdb.__version__}: {len(files)} files in {len(batches)} batches, "
          f"{time.perf_counter() - t0:.2f} s wall")


if __name__ == "__main__":
    main()
