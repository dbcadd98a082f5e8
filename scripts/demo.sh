#!/usr/bin/env bash
# Set up gradcode and run the demo on configs/demo.toml (the embedded default):
# print the plan of GC with static clustering (K = 12, P = 4, r = 2), explain
# one arrival set, then train it for real under mpirun (13 ranks, emulated
# stragglers, a few seconds) and say where the trace is (a new name per run:
# results/gc-sc-<UTC time stamp>.h5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
bin=target/release/gradcode
echo
echo "== gradcode check --config configs/demo.toml"
"$bin" check --config configs/demo.toml
echo
echo "== gradcode explain --config configs/demo.toml --received 1,6,2,7,3,8,4,5"
"$bin" explain --config configs/demo.toml --received 1,6,2,7,3,8,4,5
echo
ranks=$("$bin" check --config configs/demo.toml --ranks)
echo "== mpirun -n $ranks gradcode train --config configs/demo.toml"
# OpenMPI refuses to run as root without these; --oversubscribe: more ranks than cores.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpirun --oversubscribe -n "$ranks" "$bin" train --config configs/demo.toml
