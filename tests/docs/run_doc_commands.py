#!/usr/bin/env python3
"""Runs the command blocks of README.md and docs/ so that the docs cannot rot.

Conventions (docs/dev/testing.md):
- a ```console block: its lines starting with "$ " are commands (" \\" continues a line), the rest their output;
  each command runs from a scratch folder that mirrors the repository root, with build/bin/ pointing at --bin and
  message sizes, iterations and steps made small here, also a collective benchmark's iterations the command
  leaves at their default (the docs keep the commands a user types);
- `<!-- docs: parse-only -->` above a block: only its parbench programs' option parsing is checked
  (PARBENCH_PARSE_ONLY=1), for commands that need a GPU, a cluster or a tool CI lacks;
- `<!-- docs: not-run: REASON -->` above a block: counted and reported, not run;
- `<!-- options: PROGRAM [SUBCOMMAND] -->` above a table: its first column's options must equal the ones
  `PROGRAM [SUBCOMMAND] --help` lists (--help itself aside).
Exit status 1 when any command fails, any table disagrees or a block is malformed.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FENCE = re.compile(r"^(\s*)```\s*(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(docs|options):\s*(.*?)\s*-->\s*$")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9_-]*)")
HELP_LINE = re.compile(r"^\s{1,8}(-[^\s].*?)(?:\s{2,}|\s+[A-Z]{2,}|$)")
SHELL_OPS = {"|", "||", "&&", ";", ">", ">>", "<", "2>", "2>&1", "&"}

# Small enough for a 2-core CI machine: the largest message, iterations and training steps a doc command gets.
MAX_BYTES = 64 * 1024
CAPS = {"-n": 3, "--iters": 3, "-w": 1, "--warmup_iters": 1, "--steps": 2, "--warmup": 1, "-N": 1,
        "--run_cycles": 1, "--cycles": 1, "--repeat": 1}
SIZE_OPTIONS = {"-e", "--maxbytes"}


def parse_bytes(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2)]


def shrink_sizes(value):
    """--sizes MIN:MAX:STEP or a list: every size above MAX_BYTES is dropped or capped."""
    parts = value.split(":")
    if len(parts) == 3:
        lo, hi = parse_bytes(parts[0]), parse_bytes(parts[1])
        if lo is not None and hi is not None and hi > MAX_BYTES:
            hi = max(MAX_BYTES, lo)
            step = parts[2]
            if step.startswith("+"):
                inc = parse_bytes(step[1:]) or 1
                step = "+" + str(max(1, min(inc, (hi - lo) or 1)))
            return f"{parts[0]}:{hi}:{step}"
        return value
    kept = [s for s in value.split(",") if (parse_bytes(s) or 0) <= MAX_BYTES]
    return ",".join(kept) if kept else str(MAX_BYTES)


def shrink(tokens):
    out = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else None)
        new = None
        if name == "--sizes" and value is not None:
            new = shrink_sizes(value)
        elif name in SIZE_OPTIONS and value is not None and (parse_bytes(value) or 0) > MAX_BYTES:
            new = str(MAX_BYTES)
        elif name in CAPS and value is not None and value.isdigit():
            new = str(min(int(value), CAPS[name]))
        if new is None:
            out.append(tok)
        elif eq:
            out.append(f"{name}={new}")
        else:
            out += [name, new]
            i += 1
        i += 1
    return out


class Block:
    def __init__(self, path, line, info, marker, body):
        self.path, self.line, self.info, self.marker, self.body = path, line, info, marker, body

    def where(self):
        return f"{self.path}:{self.line}"

    def commands(self):
        cmds, cur = [], None
        for raw in self.body:
            text = raw.rstrip()
            if cur is not None:
                cur += " " + text.strip()
            elif text.startswith("$ "):
                cur = text[2:].strip()
            else:
                continue
            if cur.endswith("\\"):
                cur = cur[:-1].rstrip()
            else:
                cmds.append(cur)
                cur = None
        if cur is not None:
            cmds.append(cur)
        return cmds


def read_page(path):
    """Yields the page's fenced blocks and option tables, each with the marker comment just above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, tables = [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            marker = previous_marker(lines, i)
            start = i
            body = []
            i += 1
            while i < len(lines) and not FENCE.match(lines[i]):
                body.append(lines[i])
                i += 1
            blocks.append(Block(path, start + 1, m.group(2), marker, body))
        else:
            mk = MARKER.match(lines[i].strip())
            if mk and mk.group(1) == "options":
                rows = []
                j = i + 1
                while j < len(lines) and not lines[j].strip():
                    j += 1
                while j < len(lines) and lines[j].lstrip().startswith("|"):
                    rows.append(lines[j])
                    j += 1
                tables.append((path, i + 1, mk.group(2), rows))
        i += 1
    return blocks, tables


def previous_marker(lines, i):
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j >= 0:
        m = MARKER.match(lines[j].strip())
        if m and m.group(1) == "docs":
            return m.group(2)
    return None


def scratch_root(repo):
    """A folder whose entries link to the repository's, so that doc commands read its files and write their own."""
    root = Path(tempfile.mkdtemp(prefix="parbench-docs-"))
    for entry in repo.iterdir():
        if entry.name.startswith("build") or entry.name in {"results", ".git"}:
            continue
        (root / entry.name).symlink_to(entry)
    return root


def split_programs(command, programs):
    """(program, args) for each parbench program a command starts, its launcher (mpirun, nsys, ...) left out."""
    found = []
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError:
        return None
    i = 0
    while i < len(tokens):
        name = os.path.basename(tokens[i])
        if name in programs:
            j = i + 1
            while j < len(tokens) and tokens[j] not in SHELL_OPS:
                j += 1
            found.append((name, tokens[i + 1:j]))
            i = j
        i += 1
    return found


def help_options(binary, sub):
    argv = [str(binary)] + ([sub] if sub else []) + ["--help"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    opts = set()
    for line in out.splitlines():
        m = HELP_LINE.match(line)
        if m:
            opts.update(OPTION.findall(m.group(1)))
    return opts - {"-h", "--help", "--help-all"}


class Runner:
    def __init__(self, repo, bindir, timeout, verbose):
        self.repo, self.bin, self.timeout, self.verbose = repo, bindir, timeout, verbose
        self.programs = {p.name for p in bindir.iterdir() if os.access(p, os.X_OK)}
        # The pages' commands run beside a compile (scripts/test.sh): ranks that spin while they wait for each
        # other then share the cores with it, and a loop of small MPI calls took over 180 s instead of under 1 s;
        # yielding when idle keeps it to seconds.
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
        self.failures = []
        self.counts = {"run": 0, "commands": 0, "parsed": 0, "not-run": 0, "tables": 0}
        self.not_run = []
        self.durations = []  # (seconds, where, command): the slowest are printed at the end, to keep the check short
        self.scratch = []  # the pages' scratch folders, removed at the end
        self.lock = threading.Lock()  # pages run side by side (--jobs): the tallies above are shared
        self.iterating = {}  # program -> whether its --help lists --iters

    def fail(self, where, what):
        with self.lock:
            self.failures.append(f"{where}: {what}")
            print(f"docs: FAIL {where}: {what}", file=sys.stderr, flush=True)

    def count(self, what):
        with self.lock:
            self.counts[what] += 1

    def rewrite(self, command):
        """The command as the shell will run it: build/bin/ made --bin, option values shrunk in place (the rest of
        the line, globs and redirections included, stays as written)."""
        line = re.sub(r"(?<![\w/.-])build/bin/", str(self.bin) + "/", command)

        def one(m):
            name, sep, value = m.group(1), m.group(2), m.group(3)
            new = shrink([name, value])
            return f"{name}{sep}{new[1]}" if len(new) == 2 else m.group(0)

        line = re.sub(r"(?<![\w-])(--?[A-Za-z][\w-]*)(=| +)([^\s|;&<>]+)", one, line)
        return re.sub(r"(?<![\w./-])(\S*?\b(bench_\w+))(?![\w.-])([^|;&<>]*)", self.cap_default_iterations, line)

    def cap_default_iterations(self, m):
        """A program that takes -n/--iters (nccl-tests' form) and was given neither gets the cap: its default of
        20 timed iterations is most of a docs run (8 ranks sharing 2 cores)."""
        path, name, rest = m.group(1), m.group(2), m.group(3)
        if name not in self.programs or re.search(r"(?<![\w-])(-n|--iters)(?![\w-])", rest):
            return m.group(0)
        with self.lock:
            if name not in self.iterating:
                self.iterating[name] = "--iters" in help_options(self.bin / name, None)
        return f"{path} -n {CAPS['-n']}{rest}" if self.iterating[name] else m.group(0)

    def run_block(self, block, cwd):
        cmds = block.commands()
        if not cmds:
            self.fail(block.where(), "a console block without a '$ ' command")
            return
        self.count("run")
        for cmd in cmds:
            self.count("commands")
            try:
                line = self.rewrite(cmd)
            except ValueError as e:
                self.fail(block.where(), f"cannot split '{cmd}': {e}")
                continue
            if self.verbose:
                print(f"docs: {block.where()}: {line}")
            start = time.monotonic()
            try:
                r = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=cwd, env=self.env,
                                   capture_output=True, text=True, timeout=self.timeout)
                rc, out = r.returncode, (r.stdout + r.stderr)
            except subprocess.TimeoutExpired:
                rc, out = "timeout", f"no end within {self.timeout} s"
            with self.lock:
                self.durations.append((time.monotonic() - start, block.where(), cmd))
            if rc not in (0, 141):  # 141: a reader such as head closed the pipe early
                tail = "\n    ".join(out.strip().splitlines()[-8:])
                self.fail(block.where(), f"'{cmd}' exited {rc} (ran as: {line})\n    {tail}")

    def parse_block(self, block):
        cmds = block.commands()
        if not cmds:
            self.fail(block.where(), "a parse-only block without a '$ ' command")
            return
        self.count("parsed")
        env = dict(self.env, PARBENCH_PARSE_ONLY="1")
        for cmd in cmds:
            progs = split_programs(cmd, self.programs)
            if progs is None:
                self.fail(block.where(), f"cannot split '{cmd}'")
                continue
            for prog, args in progs:
                r = subprocess.run([str(self.bin / prog)] + args, env=env, capture_output=True, text=True,
                                   timeout=60)
                if r.returncode != 0:
                    self.fail(block.where(), f"'{prog} {' '.join(args)}' does not parse (exit {r.returncode}): "
                                             f"{(r.stdout + r.stderr).strip()[-400:]}")

    def check_table(self, path, line, spec, rows):
        self.count("tables")
        where = f"{path}:{line}"
        words = spec.split()
        if not words or words[0] not in self.programs:
            self.fail(where, f"options table for '{spec}': no such program in {self.bin}")
            return
        documented = set()
        for row in rows[2:]:  # the header and its rule
            cells = row.strip().strip("|").split("|")
            documented.update(OPTION.findall(cells[0]))
        documented -= {"-h", "--help", "--help-all"}
        listed = help_options(self.bin / words[0], words[1] if len(words) > 1 else None)
        if not listed:
            self.fail(where, f"'{spec} --help' lists no options")
        for opt in sorted(documented - listed):
            self.fail(where, f"the table documents {opt}, which '{spec} --help' does not list")
        for opt in sorted(listed - documented):
            self.fail(where, f"'{spec} --help' lists {opt}, which the table leaves out")

    def page(self, path):
        blocks, tables = read_page(path)
        cwd = None
        for block in blocks:
            marker = block.marker
            if block.info != "console":
                if marker is not None:
                    self.fail(block.where(), f"a docs marker above a '{block.info or 'plain'}' block")
                continue
            if marker is None:
                if cwd is None:
                    cwd = scratch_root(self.repo)
                    with self.lock:
                        self.scratch.append(cwd)
                self.run_block(block, cwd)
            elif marker == "parse-only":
                self.parse_block(block)
            elif marker.startswith("not-run:") and marker[len("not-run:"):].strip():
                self.count("not-run")
                with self.lock:
                    self.not_run.append(f"{block.where()}: {marker[len('not-run:'):].strip()}")
            else:
                self.fail(block.where(), f"unknown marker '{marker}': use parse-only or not-run: REASON")
        for table in tables:
            self.check_table(*table)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the build's bin folder (stands for build/bin/ in the docs)")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[2]), help="the repository root")
    ap.add_argument("--timeout", type=int, default=180, help="seconds one command may take")
    ap.add_argument("-j", "--jobs", type=int, default=2,
                    help="pages checked side by side (their commands wait much of the time: mpirun's start, "
                         "timeouts); commands of one page always run in order")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each command as it runs")
    ap.add_argument("pages", nargs="*", help="pages to check (default: README.md and docs/**/*.md but "
                                             "docs/results/)")
    a = ap.parse_args()
    repo, bindir = Path(a.repo).resolve(), Path(a.bin).resolve()
    if not bindir.is_dir():
        print(f"docs: --bin {bindir}: not a folder; expected the build's bin/ (e.g. build/bin)", file=sys.stderr)
        return 2
    pages = [Path(p) for p in a.pages] or [repo / "README.md"] + sorted(
        p for p in (repo / "docs").rglob("*.md") if "results" not in p.relative_to(repo / "docs").parts)
    if a.jobs < 1:
        print(f"docs: --jobs {a.jobs}: expected a whole number >= 1", file=sys.stderr)
        return 2
    runner = Runner(repo, bindir, a.timeout, a.verbose)
    try:
        with ThreadPoolExecutor(max_workers=a.jobs) as pool:
            for done in [pool.submit(runner.page, page) for page in pages]:
                done.result()  # a page that raised (not a failed command: a bug here) stops the run
    finally:
        for folder in runner.scratch:
            shutil.rmtree(folder, ignore_errors=True)
    c = runner.counts
    for item in sorted(runner.not_run):
        print(f"docs: not run: {item}")
    for seconds, where, cmd in sorted(runner.durations, reverse=True)[:5]:
        print(f"docs: slowest: {seconds:5.1f} s {where}: {cmd[:90]}")
    print(f"docs: {len(pages)} pages: {c['run']} command blocks run ({c['commands']} commands), {c['parsed']} "
          f"parsed only, {c['not-run']} not run, {c['tables']} option tables checked; "
          f"{len(runner.failures)} failures")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
