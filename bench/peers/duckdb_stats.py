"""The DuckDB peer of `turnlake sql` over the lake's own Parquet (bench/reference.sh).

Usage: python duckdb_stats.py LAKE QUERY_FILE OUT_CSV

QUERY_FILE (bench/peers/stats/*.sql) names each table as {table}; turnlake's
side substitutes the bare name, this one a read_parquet over the files the
table's current version holds (lake_files.py), hive partitioning on. Runs on
2 threads, writes the result as CSV and prints the in-engine time.
"""
import re
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from lake_files import live_files  # noqa: E402


def main():
    lake, query_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
    sql = "\n".join(l for l in Path(query_file).read_text().splitlines() if not l.lstrip().startswith("--"))
    for table in sorted(set(re.findall(r"\{(\w+)\}", sql))):
        files = ", ".join(f"'{f}'" for f in live_files(lake, table))
        sql = sql.replace(f"{{{table}}}", f"read_parquet([{files}], hive_partitioning = true)")
    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET threads = 2").fetchall()
    con.execute(f"COPY ({sql.strip().rstrip(';')}) TO '{out}' (HEADER)").fetchall()
    print(f"duckdb {duckdb.__version__}: {Path(query_file).stem} in {time.perf_counter() - t0:.3f} s (in engine)")


if __name__ == "__main__":
    main()
