#!/usr/bin/env bash
# Set up gradcode on a fresh Debian 12 machine: install the system packages
# it lacks (as root or through sudo), then build the release binary.
#
#   scripts/setup.sh            install what is missing, build target/release/gradcode
#   scripts/setup.sh --no-build install only (used by scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    *) echo "setup.sh: unknown option $arg (known: --no-build)" >&2; exit 2 ;;
  esac
done

# System packages: MPI (rsmpi needs libclang for bindgen), HDF5, pkg-config,
# Python with venv for the plotting and figure scripts, and Fashion-MNIST's IDX
# files for the neural-network configs (data.set = "fashion-mnist").
packages=(libopenmpi-dev openmpi-bin libhdf5-dev libclang-dev pkg-config python3 python3-venv dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: system packages present (${packages[*]})"
fi

# Rust: use the one on PATH; install it with rustup only when there is none.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  elif command -v curl >/dev/null 2>&1; then
    echo "setup.sh: no cargo on PATH; installing Rust with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup.sh: no cargo on PATH and no curl to install it; see https://rustup.rs" >&2
    exit 1
  fi
fi

if ((build)); then
  source scripts/lib.sh
  build_release
  echo "setup.sh: built $bin"
fi
