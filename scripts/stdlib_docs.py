#!/usr/bin/env python3
"""Writes docs/stdlib.md from the stdlib's .mix files: each file's header
comment, and each mixer, block and model with its parameters, their defaults
and the comment written above it. `--check` compares instead of writing and
fails (exit 1, with a diff) when the committed page differs: CI runs it, so
the page cannot fall behind the files.

Usage: stdlib_docs.py [--check] [--root DIR]
"""
import argparse
import difflib
import re
import sys
from pathlib import Path

DEFINITION = re.compile(r"^(mixer|block|model)\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")
KIND_NAMES = {"mixer": "mixer", "block": "block", "model": "model"}


def split_params(text):
    """The parameters of a signature, split at top-level commas."""
    params, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current.strip())
    return params


def signature(lines, start):
    """The text between the definition's parentheses (it may span lines)."""
    text = "\n".join(lines[start:])
    open_at = text.index("(")
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return " ".join(text[open_at + 1:i].split())
    raise ValueError(f"unclosed parameter list at line {start + 1}")


def comment_above(lines, index):
    """The // lines directly above line `index`, joined."""
    out = []
    i = index - 1
    while i >= 0 and lines[i].strip().startswith("//"):
        out.insert(0, lines[i].strip()[2:].strip())
        i -= 1
    return " ".join(out)


def header(lines):
    """The file's leading comment (until the first line that is not one)."""
    out = []
    for line in lines:
        if not line.strip().startswith("//"):
            break
        text = line.strip()[2:].rstrip()
        out.append(text[1:] if text.startswith(" ") else text)
    return out


def escape(cell):
    return cell.replace("|", "\\|")


def document(root):
    files = sorted((root / "stdlib").glob("*.mix"))
    out = ["# The standard library (`stdlib/`)", "",
           "Generated from the files by `scripts/stdlib_docs.py` (CI checks it is current: edit the",
           "`.mix` files, then run the script). Each file's header comment, then its mixers, blocks and",
           "models with their parameters (`name: type = default`; a parameter without a default must",
           "be given) and the comment written above each. A model's `vocab` is set from the task, and",
           "`-c KEY=VALUE` (or `[model.config]`) sets any model parameter.", ""]
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        out.append(f"## `{f.name}`")
        out.append("")
        head = header(lines)
        if head:
            out.append("```text")
            out.extend(head)
            out.append("```")
            out.append("")
        rows = []
        for i, line in enumerate(lines):
            m = DEFINITION.match(line)
            if not m:
                continue
            kind, name = m.group(1), m.group(2)
            params = split_params(signature(lines, i))
            shown = "<br>".join(f"`{escape(p)}`" for p in params) or "(none)"
            rows.append(f"| {kind} | `{name}` | {shown} | {escape(comment_above(lines, i))} |")
        if rows:
            out.append("| kind | name | parameters | notes |")
            out.append("|---|---|---|---|")
            out.extend(rows)
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/stdlib.md instead of writing it")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    args = parser.parse_args()
    root = Path(args.root)
    page = root / "docs" / "stdlib.md"
    text = document(root)
    if not args.check:
        page.write_text(text, encoding="utf-8")
        return 0
    committed = page.read_text(encoding="utf-8") if page.exists() else ""
    if committed == text:
        return 0
    sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                               "docs/stdlib.md (committed)", "docs/stdlib.md (from stdlib/)"))
    sys.stdout.flush()
    print("docs/stdlib.md is not what stdlib/ says: run python3 scripts/stdlib_docs.py", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
