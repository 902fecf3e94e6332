#!/usr/bin/env python3
"""Sums a LibTorch Chrome trace (train_throughput --profile DIR) by op name.

  python3 bench/profile_table.py DIR/h3-d64-libtorch.json [--top 25]

Times are inclusive (an op's children count in it too) and summed over all
profiled steps; the share is of the sum of top-level ops' time.
"""
import json
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 25
    events = json.load(open(path))
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e]
    total = defaultdict(float)
    count = defaultdict(int)
    for e in spans:
        total[e["name"]] += e["dur"]
        count[e["name"]] += 1
    # Top level: spans not inside another span of the same thread.
    spans.sort(key=lambda e: (e.get("tid"), e["ts"], -e["dur"]))
    outer, end = 0.0, {}
    for e in spans:
        tid = e.get("tid")
        if e["ts"] >= end.get(tid, -1):
            outer += e["dur"]
            end[tid] = e["ts"] + e["dur"]
    print(f"{'op':48s} {'calls':>7s} {'ms':>10s} {'share':>7s}")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{name[:48]:48s} {count[name]:7d} {us / 1e3:10.2f} {100 * us / max(outer, 1e-9):6.1f}%")


if __name__ == "__main__":
    main()
