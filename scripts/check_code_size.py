#!/usr/bin/env python3
# Code-size limits outside tests/: no source file over 500 lines, no function over 80 lines or of cyclomatic
# complexity over 25 (measured by lizard, PyPI `lizard`, installed by scripts/setup.sh).
import argparse
import csv
import importlib.util
import io
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_structure import project_files, read_allowlist, report  # noqa: E402

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_CCN = 25


def lizard_command():
    """lizard as this Python's module (pip install), else the program on PATH or where pip --user and pipx put it."""
    if importlib.util.find_spec("lizard"):
        return [sys.executable, "-m", "lizard"]
    home = os.path.expanduser("~")
    candidates = [shutil.which("lizard"),
                  os.path.join(os.environ.get("PIPX_BIN_DIR", os.path.join(home, ".local", "bin")), "lizard"),
                  os.path.join(os.environ.get("PIPX_HOME", os.path.join(home, ".local", "pipx")),
                               "venvs", "lizard", "bin", "lizard"),
                  os.path.join(home, ".local", "share", "pipx", "venvs", "lizard", "bin", "lizard")]
    for c in candidates:
        if c and os.access(c, os.X_OK) and subprocess.run([c, "--version"], capture_output=True).returncode == 0:
            return [c]
    sys.exit("check_code_size: lizard not found (pip install lizard, or run scripts/setup.sh)")


def violations(source, files):
    """[(key, lines)] as check_structure.violations: files over the line limit, then functions over theirs."""
    found = []
    for f in files:
        with open(os.path.join(source, f), encoding="utf-8", errors="replace") as text:
            count = sum(1 for _ in text)
        if count > MAX_FILE_LINES:
            found.append(("file " + f, ["  %s: %d lines (limit %d)" % (f, count, MAX_FILE_LINES)]))
    if not files:
        return found
    run = subprocess.run(lizard_command() + ["--csv", "-t", "2"] + files, cwd=source, capture_output=True, text=True)
    if run.returncode != 0 and not run.stdout:
        sys.exit("check_code_size: lizard failed:\n" + run.stderr)
    # Columns: NLOC, CCN, tokens, parameters, length, location, file, function, long name, start, end.
    for row in csv.reader(io.StringIO(run.stdout)):
        if len(row) < 11 or not row[1].isdigit():
            continue
        ccn, length, f, name, start = int(row[1]), int(row[4]), row[6], row[7], int(row[9])
        if ccn > MAX_CCN or length > MAX_FUNCTION_LINES:
            f = os.path.relpath(os.path.join(source, f), source)
            found.append(("function %s %s" % (f, name), ["  %s:%d %s CCN=%d length=%d (limits %d and %d)"
                                                       % (f, start, name, ccn, length, MAX_CCN, MAX_FUNCTION_LINES)]))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", default=".", help="the source tree (default: .)")
    parser.add_argument("--allowlist", help="known violations (one key a line, as printed after 'allowed: ')")
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    files = [f for f in project_files(source) if not f.startswith("tests/")]
    found = violations(source, files)
    allowed = read_allowlist(args.allowlist)
    new = report(found, allowed, "code size")
    for key in sorted(allowed - {k for k, _ in found}):
        if key.startswith(("file ", "function ")):
            print("note: allow-list entry no longer seen (remove it): " + key)
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
