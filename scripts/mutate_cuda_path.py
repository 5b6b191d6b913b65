#!/usr/bin/env python3
"""Mutation testing of the cuda path's ordering: each ordering call (event record and wait, stream, event and device
synchronizations, current-device calls; the device-side kernels' flag waits and fence, where an exchange that only
signals has no wait to remove) in parallel/, collectives/ and benchmarks/ is removed in a copy of the tree, the
emulated GPU build rebuilt incrementally and the `gpu` label run until its first failure, the tests likeliest to
catch it first. Each site is caught (a test failed: the first
one is named), missed (every test passed), equivalent (the list in scripts/mutate_cuda_path.equivalent gives why
removing it changes nothing a test could see), not compiled (that list says the emulated build leaves its code
out: not run) or not built (the mutant does not compile).

  scripts/mutate_cuda_path.py --list                 the sites, one a line
  scripts/mutate_cuda_path.py [--only REGEX] [--work DIR] [--jobs N] [--report FILE]

Long (minutes per site): not part of scripts/test.sh. Its last report is docs/results/mutation-cuda-path.md."""
import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("parallel", "collectives", "benchmarks")
EQUIVALENT = os.path.join(ROOT, "scripts", "mutate_cuda_path.equivalent")
# A reason in that list that starts so: the emulated build leaves the site's code out, no run here can judge it, and
# it is neither run nor scored.
NOT_COMPILED = "not compiled:"

# CUDA calls whose removal leaves a cudaError_t: the call becomes cudaSuccess wherever it stands.
CUDA_CALLS = ("cudaEventRecord", "cudaStreamWaitEvent", "cudaStreamSynchronize", "cudaDeviceSynchronize",
              "cudaEventSynchronize", "cudaSetDevice")
# parbench's void wrappers: the statement holding the call goes.
VOID_CALLS = r"(\.record\(|\.wait_on\(|->wait_on\(|\.synchronize\(\)|\bsynchronize_stream\(|\bmake_device_current\(|" \
             r"\bdevice_synchronize\()"
# The device-side kernels' waits (their `wait` argument false) and the fence before a flag's release.
DEVICE_WAITS = ("symm_barrier", "symm_exchange", "symm_step")


# The tests likeliest to catch a site's mutant, by the site's path: they run first, the rest of the label only when
# they pass, so a caught mutant costs seconds and the verdict is still the whole label's.
FIRST_TESTS = (("collectives/device_side/", r"_dev_|dev-|device_collectives"),
               ("parallel/pipeline", r"pp|pipe|CudaTrain|cuda_path"),
               ("parallel/", r"train|ddp|zero|session|cuda_path"),
               ("benchmarks/bench_memcpy", r"memcpy"),
               ("benchmarks/bench_kernels", r"kernels"),
               ("benchmarks/train", r"train|session"),
               ("", r"nccl|cuda_path|bench_"))


def first_tests(rel):
    return next(regex for prefix, regex in FIRST_TESTS if rel.startswith(prefix))


def call_span(line, start):
    """The end (exclusive) of the call whose name starts at `start`: its balanced parentheses, on this line."""
    i = line.index("(", start)
    depth = 0
    for j in range(i, len(line)):
        depth += {"(": 1, ")": -1}.get(line[j], 0)
        if depth == 0:
            return j + 1
    return None


def statement_mutant(line):
    """`line` without its one statement (a call on one line, maybe after `if (...)`, `else` or `return`)."""
    m = re.match(r"^(\s*)((?:if \(.*\) |else )?)(return )?(.*);(\s*//.*)?$", line)
    if not m or m.group(4).count("(") != m.group(4).count(")"):
        return None
    indent, guard, ret = m.group(1), m.group(2), m.group(3)
    return indent + guard + ("return;" if ret else "(void)0;") + (m.group(5) or "")


def call_args(line, name):
    """The top-level arguments of the call of `name` on `line` and the call's end; None when it spans lines."""
    at = line.find(name + "(")
    end = call_span(line, at) if at >= 0 else None
    if end is None:
        return None
    args = line[line.index("(", at) + 1:end - 1]
    parts, depth, cur = [], 0, ""
    for ch in args:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return parts, at, end


def signals_only(line):
    """A symm_exchange whose `from` mask is 0: it waits for no rank, so it has no wait to remove."""
    found = call_args(line, "symm_exchange")
    return found is not None and len(found[0]) >= 3 and found[0][2].strip() == "0"


def device_wait_mutant(line, name):
    """`line` with the device-side wait's `wait` argument false (the planted form of the tests)."""
    found = call_args(line, name)
    if found is None:
        return None
    parts, at, end = found
    full = 6 if name == "symm_exchange" or name == "symm_step" else 4  # with `wait`, the last parameter
    if len(parts) == full:
        parts[-1] = " false"
    elif len(parts) == full - 1:
        parts.append(" false")
    else:
        return None
    return line[:line.index("(", at) + 1] + ",".join(parts) + line[end - 1:]


def sites():
    """Every (path, line number, original line, mutant line, operator) of the tree."""
    out = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                with open(path) as fh:
                    lines = fh.read().split("\n")
                for n, line in enumerate(lines, 1):
                    code = line.split("//")[0]
                    if not code.strip() or code.lstrip().startswith("*"):
                        continue
                    for name in CUDA_CALLS:
                        at = code.find(name + "(")
                        end = call_span(line, at) if at >= 0 else None
                        if end:
                            out.append((rel, n, line, line[:at] + "cudaSuccess" + line[end:], "remove " + name))
                    if re.search(VOID_CALLS, code):
                        mutant = statement_mutant(line)
                        op = "remove " + re.search(VOID_CALLS, code).group(1).strip(".>-(")
                        out.append((rel, n, line, mutant, op))
                    if rel.startswith("collectives/device_side/"):
                        for name in DEVICE_WAITS:
                            if re.search(r"\b" + name + r"\(p,", code) and not (name == "symm_exchange" and
                                                                                 signals_only(code)):
                                out.append((rel, n, line, device_wait_mutant(line, name), name + " without its wait"))
                        if "__threadfence_system();" in code:
                            out.append((rel, n, line, line.replace("__threadfence_system();", ""), "remove fence"))
    # The same line may stand twice in a file (two kernels alike): the occurrence tells them apart.
    seen = {}
    numbered = []
    for rel, n, line, mutant, op in out:
        key = (rel, line.strip(), op)
        seen[key] = seen.get(key, 0) + 1
        numbered.append((rel, n, line, mutant, op, seen[key]))
    return numbered


def site_id(site):
    rel, _, line, _, op, nth = site
    return rel + ": " + line.strip() + " [" + op + (", occurrence %d" % nth if nth > 1 else "") + "]"


def equivalents():
    """site id -> why its mutant is equivalent (lines `id<TAB>reason`)."""
    out = {}
    if os.path.exists(EQUIVALENT):
        with open(EQUIVALENT) as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    key, _, reason = line.rstrip("\n").partition("\t")
                    out[key] = reason
    return out


def run(cmd, cwd, log, timeout=None):
    with open(log, "w") as fh:
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return 124


def first_failure(log, last_test):
    """The first failing test, and whether the hazard checker named the mutant (its first report's kind)."""
    name = "ctest failed (see " + log + ")"
    with open(log, errors="replace") as fh:
        for line in fh:
            m = re.search(r"Test +#\d+: (\S+) .*(\*\*\*|Failed)", line)
            if m:
                name = m.group(1)
                break
    if os.path.exists(last_test):
        with open(last_test, errors="replace") as fh:
            for line in fh:
                if "stream-ordering hazard:" in line:
                    return name + ": stream-ordering hazard"
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the sites and stop")
    ap.add_argument("--only", default="", help="sites whose id matches this regular expression")
    ap.add_argument("--work", default=os.path.join(ROOT, "build-mutate"), help="the copy and its build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build and test jobs")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for one mutant's tests")
    ap.add_argument("--report", default="", help="also write the table as Markdown to this file")
    a = ap.parse_args()
    # Stopped (kill -TERM), the running mutant's `finally` still puts its file back, and subprocess.run kills the
    # build or ctest it waits for.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("mutate_cuda_path: stopped by SIGTERM"))
    try:
        only = re.compile(a.only)
    except re.error as e:
        sys.exit("mutate_cuda_path: --only %r is not a regular expression (%s)" % (a.only, e))
    chosen = [s for s in sites() if only.search(site_id(s))]
    if a.list:
        for s in chosen:
            print(site_id(s))
        print("%d sites" % len(chosen))
        return
    if not chosen:
        sys.exit("mutate_cuda_path: no site matches --only %r (--list shows them)" % a.only)
    src, build = os.path.join(a.work, "src"), os.path.join(a.work, "build")
    os.makedirs(a.work, exist_ok=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    for f in filter(None, files):
        dst = os.path.join(src, f)
        if os.path.isfile(os.path.join(ROOT, f)) and (not os.path.exists(dst) or
                                                      open(os.path.join(ROOT, f), "rb").read() != open(dst, "rb").read()):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            # The copy's time is now: a file a stopped run left mutated is older than its mutant's objects in the
            # tree, and ninja would keep those objects if the copy kept the original's time.
            shutil.copy(os.path.join(ROOT, f), dst)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.update(env)
    logs = os.path.join(a.work, "logs")
    os.makedirs(logs, exist_ok=True)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        if run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DPARBENCH_CUDA=EMULATED",
                "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g0"], ROOT,
               os.path.join(logs, "configure.log")):
            sys.exit("mutate_cuda_path: configuring %s failed (%s)" % (build, os.path.join(logs, "configure.log")))
    ctest = ["ctest", "-L", "gpu", "--no-tests=ignore", "--stop-on-failure", "-j", str(a.jobs), "--timeout", "600"]
    if run(["cmake", "--build", build, "-j", str(a.jobs)], ROOT, os.path.join(logs, "baseline-build.log")):
        sys.exit("mutate_cuda_path: the unmutated tree does not build (%s)" % os.path.join(logs, "baseline-build.log"))
    # The unmutated tree's label runs once per content of the copy: a later run over other sites skips it.
    digest = hashlib.sha256()
    for f in sorted(filter(None, files)):
        if os.path.isfile(os.path.join(src, f)) and not f.startswith("scripts/mutate_cuda_path"):  # untested
            digest.update(f.encode() + b"\0" + open(os.path.join(src, f), "rb").read())
    stamp = os.path.join(logs, "baseline-passed")
    if not os.path.exists(stamp) or open(stamp).read() != digest.hexdigest():
        if run(ctest, build, os.path.join(logs, "baseline-ctest.log"), a.timeout):
            sys.exit("mutate_cuda_path: the unmutated tree fails its gpu label (%s)" %
                     os.path.join(logs, "baseline-ctest.log"))
        open(stamp, "w").write(digest.hexdigest())
    known = equivalents()
    rows = []
    for i, s in enumerate(chosen):
        rel, n, line, mutant, op, _ = s
        sid = site_id(s)
        t0 = time.time()
        if mutant is None or mutant == line:
            verdict, detail = "not mutated", "the call spans lines or stands in an expression"
        elif known.get(sid, "").startswith(NOT_COMPILED):
            verdict, detail = "not compiled", known[sid][len(NOT_COMPILED):].strip()
        else:
            path = os.path.join(src, rel)
            original = open(path).read()
            lines = original.split("\n")
            lines[n - 1] = mutant
            open(path, "w").write("\n".join(lines))
            log = os.path.join(logs, "mutant-%03d" % i)
            try:
                if run(["cmake", "--build", build, "-j", str(a.jobs)], ROOT, log + "-build.log"):
                    verdict, detail = "not built", "see " + log + "-build.log"
                elif (run(ctest + ["-R", first_tests(rel)], build, log + "-ctest.log", a.timeout) != 0 or
                      run(ctest + ["-E", first_tests(rel)], build, log + "-ctest.log", a.timeout) != 0):
                    kept = log + "-lasttest.log"
                    shutil.copy(os.path.join(build, "Testing", "Temporary", "LastTest.log"), kept)
                    verdict, detail = "caught", first_failure(log + "-ctest.log", kept)
                elif sid in known:
                    verdict, detail = "equivalent", known[sid]
                else:
                    verdict, detail = "missed", "every gpu test passed"
            finally:
                open(path, "w").write(original)
        rows.append((sid, verdict, detail))
        print("%-11s %s  (%s, %.0f s)" % (verdict, sid, detail, time.time() - t0), flush=True)
    kinds = ("caught", "missed", "equivalent", "not compiled", "not built", "not mutated")
    count = {v: sum(1 for r in rows if r[1] == v) for v in kinds}
    scored = count["caught"] + count["missed"]
    summary = ", ".join("%s %d" % (v, count[v]) for v in kinds) + ": %s of the non-equivalent caught" % (
        ("%.0f%%" % (100.0 * count["caught"] / scored)) if scored else "none")
    print(summary)
    if a.report:
        with open(a.report, "w") as fh:
            fh.write("| site | verdict | first failing test, or why |\n|---|---|---|\n")
            for sid, verdict, detail in rows:
                fh.write("| `%s` | %s | %s |\n" % (sid.replace("|", "\\|"), verdict, detail.replace("|", "\\|")))
            fh.write("\n" + summary + "\n")
    sys.exit(1 if count["missed"] else 0)


if __name__ == "__main__":
    main()
