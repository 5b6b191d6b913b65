#!/usr/bin/env bash
# The structure checks, test.sh's "structure checks" stage on its own: no cycle between top-level folders in
# include lines or CMake's link graph (default, emulated GPU and CPU-only configurations, the last without
# parbench-plot, as a GPU machine without Boost builds), no include of a header from a library the including target
# does not link, the code-size limits, and user pages free of dates, commit hashes and load stories
# (scripts/check_docs_text.py). Fails on a violation not in
# scripts/structure_allowlist.txt. Configures into STRUCTURE_BUILD_DIR (default build-structure/), builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
build_root=${STRUCTURE_BUILD_DIR:-build-structure}
allowlist=scripts/structure_allowlist.txt
status=0
python3 scripts/check_structure.py --build-root "$build_root" --allowlist "$allowlist" \
  --config default= --config emu=-DPARBENCH_CUDA=EMULATED \
  --config "off=-DPARBENCH_CUDA=OFF -DPARBENCH_MPI=OFF -DPARBENCH_PLOTS=OFF" ||
  status=1
python3 scripts/check_code_size.py --allowlist "$allowlist" || status=1
python3 scripts/check_docs_text.py || status=1
exit $status
