"""Checks that every table in markdown files renders on GitHub-flavoured
markdown: the header, the delimiter row and every body row have the same
number of cells. GFM splits a row at each `|` not preceded by a backslash
(inside code spans too), so an unescaped `p(y|o)` adds a cell and the table
is no longer one (header and delimiter row differ) or a row is cut short.

usage: md_tables.py FILE.md [...]   (exit 1, naming file:line, on a mismatch)
"""
import re
import sys

DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def cells(line):
    line = line.strip()
    parts = re.split(r"(?<!\\)\|", line)
    if line.startswith("|"):
        parts = parts[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        parts = parts[:-1]
    return parts


def check(path):
    errors, tables = [], 0
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and DELIMITER.match(lines[i + 1].strip()):
            tables += 1
            width = len(cells(lines[i]))
            if len(cells(lines[i + 1])) != width:
                errors.append(f"{path}:{i + 2}: delimiter row has {len(cells(lines[i + 1]))} cells, "
                              f"the header {width}: not a table")
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                if len(cells(lines[j])) != width:
                    errors.append(f"{path}:{j + 1}: {len(cells(lines[j]))} cells, the header has {width}")
                j += 1
            i = j
        else:
            i += 1
    return errors, tables


def main():
    bad, total = [], 0
    for path in sys.argv[1:]:
        errors, tables = check(path)
        bad += errors
        total += tables
    for e in bad:
        print(e)
    if total == 0:
        print("no tables found in " + " ".join(sys.argv[1:]))
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
