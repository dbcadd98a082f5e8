#!/usr/bin/env bash
# Test the Python tools on real traces: the trace reader package
# (python/tests/test_traces.py), the plotting and report scripts
# (scripts/test_plots.py), the paper figures (scripts/test_figures.py) and the
# replay study's statistics against gradcode's (scripts/test_replay_study.py)
# and the maths of scripts/bench-peer.sh's mpi4py peer (scripts/test_bench_peer.py;
# its run under mpirun is skipped, saying so, without Debian's python3-mpi4py),
# and jobs/submit.sh's usage errors, without Slurm (scripts/test_submit.py),
# and the benchmark configs of configs/bench/ with scripts/lib.sh's
# write_config (scripts/test_bench_configs.py).
# Needs python3 with venv and pip access to PyPI for the pinned packages of
# scripts/requirements.txt; without them this prints SKIPPED and exits 0, so
# a machine without Python still runs the Rust tests, and says so loudly.
# GRADCODE_REQUIRE_PYTHON=1, or CI=true (the CI machine has Python and PyPI),
# turns the skip into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python-env.sh
if ! python_env; then
  if [ "${GRADCODE_REQUIRE_PYTHON:-0}" = 1 ] || [ "${CI:-}" = true ]; then
    echo "test-plots.sh: FAILED: no Python environment (see above), required here (GRADCODE_REQUIRE_PYTHON=1 or CI=true)" >&2
    exit 1
  fi
  echo "############################################################################" >&2
  echo "## SKIPPED: Python plotting tests (scripts/test_plots.py): no Python     ##" >&2
  echo "## environment with h5py/numpy/matplotlib could be set up (see above).   ##" >&2
  echo "############################################################################" >&2
  exit 0
fi
source scripts/lib.sh
build_release --example synthetic_trace
export GRADCODE=$bin SYNTHETIC_TRACE=$target/release/examples/synthetic_trace
"$PYTHON" python/tests/test_traces.py
"$PYTHON" scripts/test_plots.py
"$PYTHON" scripts/test_figures.py
"$PYTHON" scripts/test_replay_study.py
"$PYTHON" scripts/test_bench_peer.py
"$PYTHON" scripts/test_submit.py
"$PYTHON" scripts/test_bench_configs.py
