#!/usr/bin/env bash
# Runs a program that writes a one-row CSV (bench_train --csv FILE) and checks that column COLUMN of the row lies
# in [MIN, MAX]; prints the value. Usage: check_csv_column.sh COLUMN MIN MAX command args... (the script adds --csv)
set -eu
column=$1 min=$2 max=$3
shift 3
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
"$@" --csv "$csv" > /dev/null
awk -F, -v want="$column" -v min="$min" -v max="$max" '
  NR == 1 { for (i = 1; i <= NF; i++) if ($i == want) col = i
            if (!col) { print "no column " want " in the CSV"; exit 2 } }
  NR == 2 { v = $col + 0
            printf "%s = %s (expected in [%s, %s])\n", want, $col, min, max
            ok = v >= min + 0 && v <= max + 0; seen = 1; exit }
  END { if (!seen) { print "the CSV has no row"; exit 2 }
        exit ok ? 0 : 1 }' "$csv"
