#!/usr/bin/env bash
# Set up gradcode and run the demo on configs/demo.toml (the embedded default):
# print the plan of GC with static clustering (K = 12, P = 4, r = 2), explain
# one arrival set, then train it for real under mpirun (13 ranks, emulated
# stragglers, a few seconds) and say where the trace is (a new name per run:
# results/gc-sc-<UTC time stamp>.h5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
source scripts/lib.sh
build_release
echo
echo "== gradcode check --config configs/demo.toml"
"$bin" check --config configs/demo.toml
echo
echo "== gradcode explain --config configs/demo.toml --received 1,6,2,7,3,8,4,5"
"$bin" explain --config configs/demo.toml --received 1,6,2,7,3,8,4,5
echo
ranks=$("$bin" check --config configs/demo.toml --ranks)
echo "== mpirun -n $ranks gradcode train --config configs/demo.toml"
# mpirun (OpenMPI, with --oversubscribe: more ranks than cores) or MPICH's mpiexec.
mpi_env
launch_ranks "$ranks" "$bin" train --config configs/demo.toml
