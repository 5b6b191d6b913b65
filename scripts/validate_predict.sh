#!/bin/sh
# Every published table held in the repository (predict/published/*.csv) predicted row by row by the built-in systems:
# per row published vs predicted with the range the sources' spread gives, the mean error per table, and each
# table's error with the modelling choices made while looking at it undone (leave one table out). Takes seconds.
#   scripts/validate_predict.sh [--bin DIR] [--expect TABLE=MEAN_PERCENT]... [--system NAME=FILE]...
#                               [--list-linears SYSTEMS]
# DIR holds predict_validate (default: build-dev/bin, build/bin or build-test/bin, the first that has it).
# --expect fails when a table's mean |error| moves more than 0.1 percentage point from the value given (a regression
# guard; the predictor is deterministic). --system predicts the rows of built-in NAME on FILE instead (e.g. with
# measured linears); --list-linears prints the weight matmuls of the rows on SYSTEMS instead of predicting.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=""
if [ "${1:-}" = "--bin" ]; then
  [ $# -ge 2 ] || { echo "validate_predict.sh: --bin needs a directory; accepted: --bin DIR" >&2; exit 2; }
  bin=$2
  shift 2
fi
if [ -z "$bin" ]; then
  for d in "$root/build-dev/bin" "$root/build/bin" "$root/build-test/bin"; do
    if [ -x "$d/predict_validate" ]; then bin=$d; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin/predict_validate" ]; then
  echo "validate_predict.sh: no predict_validate in '${bin:-build-dev/bin, build/bin or build-test/bin}';" \
       "build the target predict_validate, or pass --bin DIR" >&2
  exit 2
fi
exec "$bin/predict_validate" "$root"/predict/published/*.csv "$@"
