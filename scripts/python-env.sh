#!/usr/bin/env bash
# The Python environment of the repository: .venv at its top with the pinned
# packages of scripts/requirements.txt (h5py, numpy, pandas, xarray,
# h5netcdf, matplotlib) and the trace reader of python/ (gradcode_traces)
# installed editable (the venv sees changes to python/ at once).
#
# Run it to make or update .venv; it prints how to activate it:
#
#   scripts/python-env.sh
#
# Or source it from a script of scripts/ (bash): that only defines
# python_env, which makes or updates .venv and sets PYTHON to its interpreter.
#
#   source "$(dirname "$0")/python-env.sh"
#   python_env || exit 1          # prints why on stderr when it cannot
#   "$PYTHON" scripts/plots.py ...
#
# pip runs only when requirements.txt (or python/pyproject.toml) changed since
# the last install (copies are kept as .venv/requirements.installed and
# .venv/pyproject.installed). Needs python3 (and python3-venv on
# Debian, installed here when root or sudo is available) and access to PyPI.

python_env() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local venv="$root/.venv" req="$root/scripts/requirements.txt"
  if ! command -v python3 >/dev/null 2>&1; then
    echo "python-env.sh: python3 not found" >&2
    return 1
  fi
  if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" 2>/dev/null; then
      # Debian ships venv separately.
      rm -rf "$venv"
      local as_root
      if [ "$(id -u)" -eq 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1; then as_root=(sudo); else
        echo "python-env.sh: python3 -m venv failed; install python3-venv" >&2
        return 1
      fi
      "${as_root[@]}" apt-get update -qq || return 1
      DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv || return 1
      python3 -m venv "$venv" || return 1
    fi
  fi
  if ! cmp -s "$req" "$venv/requirements.installed"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" || return 1
    cp "$req" "$venv/requirements.installed"
  fi
  # The reader package, built with the pinned setuptools (no download, no other packages).
  if ! cmp -s "$root/python/pyproject.toml" "$venv/pyproject.installed"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
      -e "$root/python" || return 1
    cp "$root/python/pyproject.toml" "$venv/pyproject.installed"
  fi
  PYTHON="$venv/bin/python"
}

# Run directly (not sourced): make .venv and say how to use it. Sourced, the
# file only defines python_env and leaves the caller's shell options alone.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  if [ $# -gt 0 ]; then
    echo "usage: scripts/python-env.sh   (no arguments: makes or updates .venv)" >&2
    exit 2
  fi
  python_env || exit 1
  venv=$(cd "$(dirname "$PYTHON")/.." && pwd)
  echo "python-env.sh: $venv is ready ($("$PYTHON" --version 2>&1); packages of scripts/requirements.txt, gradcode_traces editable)"
  echo "activate it:   source $venv/bin/activate"
  echo "or call it:    $PYTHON -c 'import gradcode_traces'"
fi
