"""The ops of a LibTorch profiler trace (chrome format, as bench/packed_step
--profile writes) by self time: each event's duration less that of the
events nested in it on its thread; with --parents OP, what OP is called
from (its three enclosing events), by count. The profiler adds a few
microseconds to every op, so ops called very often (select, as_strided)
read larger than they run.
Usage: profile_top.py TRACE.json [N] [--parents OP]"""
import collections
import json
import sys

args = [a for a in sys.argv[1:]]
parents_of = None
if "--parents" in args:
    i = args.index("--parents")
    parents_of = args[i + 1]
    del args[i:i + 2]
trace = json.load(open(args[0]))
top = int(args[1]) if len(args) > 1 else 12
events = trace["traceEvents"] if isinstance(trace, dict) else trace
by_thread = collections.defaultdict(list)
for e in events:
    if e.get("ph") == "X" and "dur" in e:
        by_thread[e.get("tid")].append((float(e["ts"]), float(e["dur"]), e["name"]))
self_us, calls, parents = collections.Counter(), collections.Counter(), collections.Counter()
for spans in by_thread.values():
    spans.sort(key=lambda s: (s[0], -s[1]))
    stack = []  # [end, name, own time]

    def close(until):
        while stack and stack[-1][0] <= until:
            end, name, own = stack.pop()
            self_us[name] += own

    for ts, dur, name in spans:
        close(ts)
        if name == parents_of:
            parents[" < ".join(s[1] for s in stack[-3:])] += 1
        if stack:
            stack[-1][2] -= dur  # nested: not the parent's own time
        stack.append([ts + dur, name, dur])
        calls[name] += 1
    close(float("inf"))
if parents_of:
    for where, n in parents.most_common(top):
        print(f"{n:8d}  {where}")
    sys.exit(0)
total = sum(self_us.values())
print(f"{'op':44s} {'self ms':>9s} {'share':>6s} {'calls':>6s}")
for name, us in self_us.most_common(top):
    print(f"{name[:44]:44s} {us / 1e3:9.2f} {100 * us / total:5.1f}% {calls[name]:6d}")
print(f"{'all ops':44s} {total / 1e3:9.2f}")
