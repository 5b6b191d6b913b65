#!/usr/bin/env bash
# Runs a program with the emulated GPU's NVTX tool and API report (PARBENCH_EMU_REPORT), then checks the report.
# Usage: counted.sh NVTX_TOOL CHECKER "CHECK ARGS" command args...   (CHECK ARGS: see check_report.cpp)
set -eu
tool=$1 checker=$2 check=$3
shift 3
report=$(mktemp)
trap 'rm -f "$report"' EXIT
NVTX_INJECTION64_PATH=$tool PARBENCH_EMU_REPORT=$report "$@" > /dev/null
# shellcheck disable=SC2086  # CHECK ARGS are several words
"$checker" "$report" $check
