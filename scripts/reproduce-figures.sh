#!/usr/bin/env bash
# Reproduce the papers' simulation figures: build gradcode, set up the Python
# tools in .venv (h5py, numpy, matplotlib at the versions of
# scripts/requirements.txt), run every configs/paper/*.toml that has a
# [simulate] section through `gradcode simulate --json`, and write
# results/paper/<name>.json, results/paper/<name>.png and
# results/paper/README.md (the papers' numbers beside ours, and NOTES.md).
# Adding a figure = adding a config.
#
#   scripts/reproduce-figures.sh              every config
#   scripts/reproduce-figures.sh gcdc-fig3    only the named configs (README covers all results present)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --quiet

if [ ! -x .venv/bin/python ]; then
  if ! python3 -m venv .venv 2>/dev/null; then
    # Debian ships venv separately.
    rm -rf .venv
    if [ "$(id -u)" -eq 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1; then as_root=(sudo); else
      echo "reproduce-figures.sh: python3 -m venv failed; install python3-venv" >&2; exit 1
    fi
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv .venv
  fi
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements.txt
.venv/bin/python scripts/reproduce_figures.py "$@"
