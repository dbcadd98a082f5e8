#!/usr/bin/env bash
# 004 §VIII's deep-learning experiments at CPU size (configs/paper/isgc-fig12-*.toml
# and isgc-fig13-*.toml): train each point under mpirun with N seeds (--set seed=S,
# S = 1..N; the IS schemes at w = 1, 2, 3 for Fig. 12, w = 2 for Fig. 13), one
# trace per point and seed (results/paper/isgc-nn/POINT-sS.h5, e.g.
# fig12-is-cr-w2-s3.h5), then draw results/paper/isgc-nn-fig12.png and
# isgc-nn-fig13.png and write results/paper/isgc-nn.json and isgc-nn.md
# (scripts/isgc_nn.py: per point the mean and 95% interval over the seeds of the
# steps and time to the smoothed batch loss's threshold; the paper's statements,
# each with a verdict from the intervals). Needs Fashion-MNIST (scripts/setup.sh
# installs Debian's dataset-fashion-mnist). About 6 minutes per seed on 2 cores
# (28 minutes for the default 5 seeds, measured).
#
#   scripts/isgc-nn.sh              train 5 seeds per point and draw
#   scripts/isgc-nn.sh --seeds N    train N seeds per point (the paper: 10) and draw
#   scripts/isgc-nn.sh --replot     draw from the traces of the last run (results/paper/isgc-nn/)
#
# Training first removes the traces of an earlier run (results/paper/isgc-nn/fig12-*
# and fig13-*), so that the figures are this run's N seeds alone.
set -euo pipefail
usage="usage: scripts/isgc-nn.sh [--seeds N] | --replot"
seeds=5 seeds_given=0 replot=0
while [ $# -gt 0 ]; do
  case $1 in
    --seeds)
      [ $# -ge 2 ] || { echo "isgc-nn.sh: --seeds needs a number; $usage" >&2; exit 2; }
      seeds=$2 seeds_given=1
      shift 2
      ;;
    --seeds=*) seeds=${1#--seeds=} seeds_given=1; shift ;;
    --replot) replot=1; shift ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "isgc-nn.sh: unknown argument \`$1'; $usage" >&2; exit 2 ;;
  esac
done
if ! [[ $seeds =~ ^[1-9][0-9]*$ ]]; then
  echo "isgc-nn.sh: --seeds \`$seeds' is not a positive whole number; $usage" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
out=results/paper/isgc-nn
if [ "$replot" = 0 ]; then
  source scripts/lib.sh
  build_release
  mpi_env
  run() { # CONFIG NAME [--set ...]: every seed
    local config=configs/paper/$1.toml name=$2 ranks s
    shift 2
    ranks=$("$bin" check --config "$config" "$@" --ranks)
    for s in $(seq 1 "$seeds"); do
      echo "isgc-nn.sh: $name seed $s of $seeds ($ranks ranks)"
      launch_ranks "$ranks" "$bin" train --config "$config" "$@" --set "seed=$s" \
        --out "$out/$name-s$s.h5" --force --json --quiet > "$out/$name-s$s.json"
    done
  }
  mkdir -p "$out"
  rm -f "$out"/fig12-* "$out"/fig13-*
  run isgc-fig12-sgd fig12-sgd
  run isgc-fig12-gc-fr fig12-gc-fr
  run isgc-fig12-gc-cr fig12-gc-cr
  for w in 1 2 3; do
    for s in is-sgd is-fr is-cr; do
      run "isgc-fig12-$s" "fig12-$s-w$w" --set "scheme.wait_for=$w"
    done
  done
  for c1 in 0 1 2 3; do
    run "isgc-fig13-hr-c1-$c1" "fig13-hr-c1-$c1"
  done
elif [ "$seeds_given" = 1 ]; then
  echo "isgc-nn.sh: --seeds does not go with --replot (it draws every trace of $out); $usage" >&2
  exit 2
fi
source scripts/python-env.sh
python_env
"$PYTHON" scripts/isgc_nn.py "$out" results/paper
