"""Whether two CSV results hold the same rows (bench/reference.sh).

Usage: python same_rows.py A.csv B.csv

Compares cell by cell, numbers within a relative 1e-9 (the engines sum in
different orders), empty and NULL alike, true/false in any case. Prints
`same (N rows)` or the first difference, and exits 1 on a difference.
"""
import csv
import math
import sys


def cell(v):
    v = v.strip()
    if v.upper() in ("", "NULL"):
        return None
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    try:
        return float(v)
    except ValueError:
        return v


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return a == b


def main():
    a, b = ([[cell(v) for v in r] for r in csv.reader(open(p))] for p in sys.argv[1:3])
    if len(a) != len(b):
        print(f"differ: {len(a) - 1} vs {len(b) - 1} rows")
        sys.exit(1)
    for i, (ra, rb) in enumerate(zip(a, b)):
        if len(ra) != len(rb) or not all(same(x, y) for x, y in zip(ra, rb)):
            print(f"differ at line {i + 1}: {ra} vs {rb}")
            sys.exit(1)
    print(f"same ({len(a) - 1} rows)")


if __name__ == "__main__":
    main()
