"""Every concrete node name the README shows (layers[N]...) is a name some
stdlib model really has: `mixc names` output for all of them on stdin."""
import re
import sys

readme = open(sys.argv[1]).read()
listed = set()
for line in sys.stdin:
    parts = line.split()
    if len(parts) >= 2:
        listed.add(parts[1])
shown = set(re.findall(r"layers\[\d+\](?:\.[A-Za-z_][A-Za-z_0-9]*)+", readme))
missing = sorted(shown - listed)
if not shown or missing:
    sys.exit(f"README names no stdlib model has: {missing} (of {sorted(shown)})")
print(f"{len(shown)} README names found")
