#!/usr/bin/env bash
# Approximate gradient coding at CPU size (issue 41, item 4): the decode error
# against the number of stragglers at equal load (configs/paper/agc-error.toml,
# swept with `gradcode sweep`), and logistic regression on one-hot data trained
# under mpirun by exact, ignoring and approximate schemes
# (configs/paper/agc-train.toml); then scripts/approximate.py draws
# results/paper/approximate-error.png and approximate-train.png and writes
# results/paper/approximate.json and approximate.md (what reproduces, what
# differs, with the numbers). About 5 minutes on 2 cores.
#
#   scripts/approximate.sh            run and draw
#   scripts/approximate.sh --replot   draw from the last run (results/paper/approximate/)
set -euo pipefail
usage="usage: scripts/approximate.sh [--replot]"
replot=0
case ${1:-} in
  "") ;;
  --replot) replot=1 ;;
  -h | --help) echo "$usage"; exit 0 ;;
  *) echo "approximate.sh: unknown argument \`$1'; $usage" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
out=results/paper/approximate
if [ "$replot" = 0 ]; then
  source scripts/lib.sh
  build_release
  mpi_env
  mkdir -p "$out"
  rm -f "$out"/*.h5 "$out"/*.json
  echo "approximate.sh: the decode error against the stragglers (sweep)"
  "$bin" sweep --config configs/paper/agc-error.toml \
    --grid 'scheme.kind="agc-expander","agc-frc","agc-bgc","agc-graph"' \
    --grid 'scheme.decoder="optimal","one-step"' \
    --grid scheme.degree=3 --grid scheme.load=3 \
    --grid scheme.wait_for=24,22,20,18,16,14,12,10,8,6,4 \
    --trials 10 --iterations 200 --json > "$out/error-sweep.json"
  train() { # NAME [--set ...]
    local name=$1
    shift
    echo "approximate.sh: train $name"
    launch_ranks 9 "$bin" train --config configs/paper/agc-train.toml "$@" \
      --out "$out/$name.h5" --force --json --quiet > "$out/$name.json" 2> "$out/$name.log"
  }
  train uncoded --set 'scheme.kind="uncoded"'
  train gc-cyclic --set 'scheme.kind="gc-cyclic"' --set scheme.load=3
  train ignore-stragglers --set 'scheme.kind="ignore-stragglers"'
  train agc-frc
  train agc-expander --set 'scheme.kind="agc-expander"' --set scheme.degree=2
  train agc-graph --set 'scheme.kind="agc-graph"' --set scheme.degree=2
  train erasurehead --set 'scheme.kind="erasurehead"'
fi
source scripts/python-env.sh
python_env
"$PYTHON" scripts/approximate.py "$out" results/paper
