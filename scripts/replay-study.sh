#!/usr/bin/env bash
# The replay study of issue 16, item 6: uncoded, GC, GC-SC, GC-DC and IS-GC on
# the AWS Lambda round trips (data/traces/aws-lambda/), written to
# results/replay/ (README.md, the tables; *.json, the numbers behind them).
#
#   scripts/replay-study.sh               every configs/replay/*.toml
#   scripts/replay-study.sh est-desktop   only the named configs (the README covers those run)
#
# Steps:
#  1. scripts/estimate_compute_share.py -> results/replay/compute-share.json:
#     the computation share s of each campaign's round trips (a fit over the
#     campaign's files measured at several loads).
#  2. For each config (one campaign, K = 24 workers) and each of the
#     COLUMN_SETS disjoint sets of 24 of the file's 256 columns
#     (straggler.trace_columns = 24j+1 .. 24j+24), `gradcode simulate --out`:
#       share in {1 (the old model: the whole value scales with the load),
#                 the config's estimated s}
#       x variant in {base: the config as it is (every scheme of
#                        simulate.compare, gc-dc with imperfect state
#                        information, trace_threshold 2),
#                     perfect: gc-dc with state_info = perfect (an oracle),
#                     thr1.1: gc-dc with trace_threshold = 1.1}.
#     The variants run gc-dc alone: the replay draws nothing and the static
#     schemes read neither key, so their times are those of the base run.
#  3. scripts/replay_study.py reads iteration 2 of every trial from the HDF5
#     files (.venv: h5py), aggregates, measures how often a straggler stays
#     one from the trace CSVs, checks that each config's
#     trace_compute_share is its estimate rounded to 3 decimals (fails
#     otherwise) and writes results/replay/.
#
# Runs sequentially (about 240 small simulations; a few minutes on a loaded
# 2-core machine). The HDF5 files go to a temporary folder, removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=results/replay
COLUMN_SETS=${COLUMN_SETS:-10} # 10 x 24 = 240 of the 256 columns, disjoint (fewer: a quick check only)
K=24
source scripts/lib.sh
build_release
BIN=$bin

source scripts/python-env.sh
python_env

mkdir -p "$OUT"
"$PYTHON" scripts/estimate_compute_share.py --json "$OUT/compute-share.json" --bootstrap 1000 --seed 1

if [ $# -gt 0 ]; then
  configs=()
  for name in "$@"; do configs+=("configs/replay/${name%.toml}.toml"); done
else
  configs=(configs/replay/*.toml)
fi

RUNS=$(mktemp -d "${TMPDIR:-/tmp}/replay-study.XXXXXX")
trap 'rm -rf "$RUNS"' EXIT

columns() { # the 1-based columns of set $1 (0-based) as a TOML array
  local j=$1 first=$(($1 * K + 1)) c list=""
  for ((c = first; c < first + K; c++)); do list+="${list:+, }$c"; done
  echo "[$list]"
}

sim() { # sim DIR NAME ARGS...: simulate --json --out DIR/NAME.h5 > DIR/NAME.json, stderr kept in DIR/NAME.err
  local dir=$1 run=$2
  shift 2
  if ! "$BIN" simulate "$@" --json --out "$dir/$run.h5" --force >"$dir/$run.json" 2>"$dir/$run.err"; then
    cat "$dir/$run.err" >&2
    echo "replay-study.sh: gradcode simulate $* failed" >&2
    exit 1
  fi
}

for config in "${configs[@]}"; do
  name=$(basename "$config" .toml)
  est=$(sed -n 's/^trace_compute_share *= *\([0-9.]*\).*/\1/p' "$config")
  [ -n "$est" ] || { echo "$config: no trace_compute_share" >&2; exit 1; }
  echo "== $name (estimated s = $est)" >&2
  for ((j = 0; j < COLUMN_SETS; j++)); do
    cols=$(columns "$j")
    for share in 1 "$est"; do
      [ "$share" = 1 ] && tag=s1 || tag=sest
      base=(--config "$config" --set "straggler.trace_columns=$cols" --set "straggler.trace_compute_share=$share")
      gcdc=(--set 'simulate.compare=["gc-dc"]' --set 'simulate.baseline="gc-dc"')
      dir="$RUNS/$name/set$((j + 1))"
      mkdir -p "$dir"
      sim "$dir" "$tag-base" "${base[@]}"
      sim "$dir" "$tag-perfect" "${base[@]}" "${gcdc[@]}" --set straggler.state_info=perfect
      sim "$dir" "$tag-thr1.1" "${base[@]}" "${gcdc[@]}" --set straggler.trace_threshold=1.1
    done
  done
done

"$PYTHON" scripts/replay_study.py --runs "$RUNS" --out "$OUT" --column-sets "$COLUMN_SETS" \
  --workers "$K" "${configs[@]}"
