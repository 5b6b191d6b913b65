#!/usr/bin/env python3
"""User pages say what the product does, not when or on which loaded machine it was measured: README.md and docs/
(docs/results/ aside, where dated records live; history is CHANGELOG.md's) carry no date, commit hash or
machine-load story, and README.md stays a short guide. Prints each violation as FILE:LINE: what; exit 1 if any."""
import re
import sys
from pathlib import Path

README_MAX_LINES = 200
RULES = [
    ("a date", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|\b(January|February|March|April|May|June|July|August|"
                          r"September|October|November|December) (\d{1,2}, )?20\d\d\b")),
    # 7 to 40 hex digits with at least one letter and one digit: a commit, not a word ("defaced") or a number.
    ("a commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")),
    ("a machine-load figure", re.compile(r"\bload average\b|\bloaded (VM|machine)\b|\bmachine was loaded\b|"
                                         r"\b(under|at) (a )?load (of )?\d|\bload \d+ (to|-) \d+", re.I)),
]


def user_pages(root):
    pages = [root / "README.md"]
    docs = root / "docs"
    if docs.is_dir():
        pages += sorted(p for p in docs.rglob("*.md") if "results" not in p.relative_to(docs).parts)
    return [p for p in pages if p.is_file()]


def check(root):
    found = []
    for page in user_pages(root):
        rel = page.relative_to(root)
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            for what, rule in RULES:
                m = rule.search(line)
                if m:
                    found.append(f"{rel}:{n}: {what} ('{m.group(0)}'): dated measurements go to docs/results/, "
                                 "history to CHANGELOG.md")
        if rel.as_posix() == "README.md" and len(lines) > README_MAX_LINES:
            found.append(f"README.md: {len(lines)} lines; at most {README_MAX_LINES} (a short guide leading to docs/)")
    return found


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    found = check(root)
    for f in found:
        print(f"docs text: {f}")
    print(f"docs text: {len(user_pages(root))} pages, {len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
