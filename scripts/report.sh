#!/usr/bin/env bash
# Render a PNG report of every trace (*.h5, training runs and simulations)
# under a results folder, e.g. the results/<job-name>-<job-id>/ folders that
# jobs/*.sbatch write: per trace one overview PNG (a simulation: one per
# scheme, and their CDFs), CDFs of all traces, and an index (index.html,
# index.md) with the key numbers and `gradcode inspect` of each trace.
#
#   scripts/report.sh RESULTS_DIR [OUT_DIR]      (OUT_DIR = RESULTS_DIR/report)
#
# Python: .venv with the pinned packages of scripts/requirements.txt
# (scripts/python-env.sh). gradcode: $GRADCODE, else target/release/gradcode,
# else `gradcode` on PATH; without one the index has no inspect summaries.
# Exit status 1 when a trace could not be rendered (the index says which).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/report.sh RESULTS_DIR [OUT_DIR]" >&2
  exit 2
fi
results=$1
out=${2:-$results/report}
if [ ! -d "$results" ]; then
  echo "error: $results: not a directory" >&2
  exit 2
fi
source "$repo/scripts/python-env.sh"
python_env
bin=${GRADCODE:-}
if [ -z "$bin" ]; then
  if [ -x "$repo/target/release/gradcode" ]; then
    bin=$repo/target/release/gradcode
  elif command -v gradcode >/dev/null 2>&1; then
    bin=$(command -v gradcode)
  fi
fi
args=()
if [ -n "$bin" ]; then args=(--gradcode "$bin"); fi
exec "$PYTHON" "$repo/scripts/plots.py" report "$results" -o "$out" "${args[@]}"
