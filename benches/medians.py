#!/usr/bin/env python3
"""Prints the median of every criterion benchmark of the last `cargo bench` run.

Usage: python3 benches/medians.py [TARGET_DIR]   (default: $CARGO_TARGET_DIR or ./target)

criterion prints means; its medians are in <target>/criterion/<bench>/new/estimates.json.
Throughput is per element (calls/s) or per byte, as each benchmark declared it.
"""
import json
import os
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target"))
root = root / "criterion"


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:8.3f} {unit}"
    return f"{ns:8.1f} ns"


rows = []
for est in sorted(root.glob("**/new/estimates.json")):
    median = json.loads(est.read_text())["median"]["point_estimate"]
    meta = json.loads((est.parent / "benchmark.json").read_text())
    bench = meta.get("full_id") or est.parent.parent.relative_to(root).as_posix()
    throughput = meta.get("throughput") or {}
    extra = ""
    if "Elements" in throughput:
        extra = f"{throughput['Elements'] / (median / 1e9):12.0f} calls/s"
    elif "Bytes" in throughput:
        extra = f"{throughput['Bytes'] / (median / 1e9) / 2**20:12.1f} MiB/s"
    rows.append((bench, fmt_time(median), extra))

width = max((len(r[0]) for r in rows), default=10)
for bench, t, extra in rows:
    print(f"{bench:<{width}}  median {t}  {extra}")
