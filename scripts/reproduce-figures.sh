#!/usr/bin/env bash
# Reproduce the papers' simulation figures: build gradcode, set up the Python
# tools in .venv (h5py, numpy, matplotlib at the versions of
# scripts/requirements.txt), run every configs/paper/*.toml that has a
# [simulate] section through `gradcode simulate --json`, and write
# results/paper/<name>.json, results/paper/<name>.{png,pdf,svg} and
# results/paper/README.md (the papers' numbers beside ours, and NOTES.md).
# Adding a figure = adding a config.
#
#   scripts/reproduce-figures.sh              every config
#   scripts/reproduce-figures.sh gcdc-fig3    only the named configs (README covers all results present)
#   scripts/reproduce-figures.sh --replot     redraw figures (PNG, PDF, SVG) and README from the JSON present, no simulation
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
build_release

source scripts/python-env.sh
python_env
"$PYTHON" scripts/reproduce_figures.py "$@"
