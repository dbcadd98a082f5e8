#!/usr/bin/env bash
# 004 §VIII's deep-learning experiments at CPU size (configs/paper/isgc-fig12-*.toml
# and isgc-fig13-*.toml): train each under mpirun (the IS schemes at w = 1, 2, 3
# for Fig. 12, w = 2 for Fig. 13), then draw results/paper/isgc-nn-fig12.png and
# isgc-nn-fig13.png and write results/paper/isgc-nn.json and isgc-nn.md (what
# reproduces, what differs, with the numbers). Needs Fashion-MNIST
# (scripts/setup.sh installs Debian's dataset-fashion-mnist). About 10 minutes
# on 2 cores.
#
#   scripts/isgc-nn.sh            train and draw
#   scripts/isgc-nn.sh --replot   draw from the traces of the last run (results/paper/isgc-nn/)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --quiet --bin gradcode
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
out=results/paper/isgc-nn
bin=target/release/gradcode
run() { # CONFIG NAME [--set ...]
  local config=configs/paper/$1.toml name=$2
  shift 2
  local ranks
  ranks=$("$bin" check --config "$config" "$@" --ranks)
  echo "isgc-nn.sh: $name ($ranks ranks)"
  mpirun --oversubscribe -n "$ranks" "$bin" train --config "$config" "$@" \
    --out "$out/$name.h5" --force --json --quiet > "$out/$name.json"
}
if [ "${1:-}" != --replot ]; then
  mkdir -p "$out"
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
fi
source scripts/python-env.sh
python_env
"$PYTHON" scripts/isgc_nn.py "$out" results/paper
