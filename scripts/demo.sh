#!/usr/bin/env bash
# Set up gradcode and run the demo on configs/demo.toml (the embedded default):
# print the plan of GC with static clustering (K = 12, P = 4, r = 2), then
# explain a set of arrivals with one straggler in every cluster.
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
