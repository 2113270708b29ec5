#!/usr/bin/env python3
"""Re-run the `$ wqtool ...` transcripts of README.md and docs/*.md (the ones tests/test_readme.py checks) and write
what the tool prints now in place of each one's old output — after an intended change of output; review the diff.

    python scripts/refresh_transcripts.py [FILE ...]     # default: README.md and docs/*.md
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def refresh(path: str) -> int:
    lines = open(path, encoding="utf-8").read().split("\n")
    out: list[str] = []
    fence = None
    changed = 0
    i = 0
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            out.append(line)
            i += 1
            continue
        if fence == "" and line.startswith("$ wqtool"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and not lines[j].startswith("```"):
                j += 1
            r = subprocess.run(["bash", "-c", line[2:]], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120)
            new = [ln.rstrip() for ln in re.sub(r"time: \d+\.\d+ s", "time: N s", r.stdout).rstrip("\n").split("\n")]
            if r.stdout == "":
                new = []
            old = lines[i + 1:j]
            blank = 0                 # the blank lines that part this transcript from the next stay
            while blank < len(old) and old[len(old) - 1 - blank] == "":
                blank += 1
            if new != old[:len(old) - blank]:
                changed += 1
            out.append(line)
            out.extend(new + [""] * blank)
            i = j
            continue
        out.append(line)
        i += 1
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
    return changed


def main(argv: list[str]) -> int:
    paths = argv or [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
    for p in paths:
        n = refresh(p)
        if n:
            print(f"{os.path.relpath(p, ROOT)}: {n} transcript(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
