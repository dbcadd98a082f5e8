#!/usr/bin/env bash
# The MPI tests under MPICH (issue 26, item 5): build gradcode against
# Debian's MPICH (mpicc.mpich, in target/mpich so that the OpenMPI build
# stays as it is) and run the MPI test binaries that launch through the
# tests' common launcher with MPICH's own (mpiexec.mpich, through
# GRADCODE_TEST_MPIEXEC).
# CI runs it after scripts/test.sh (.ci/run); installs mpich and
# libmpich-dev when missing (as root or through sudo).
#
# To build against MPICH yourself: MPICC=mpicc.mpich cargo build --release
# (the build finds MPI through $MPICC -show), and run with mpiexec.mpich.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"

missing=()
for p in mpich libmpich-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  echo "test-mpich.sh: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

export MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich GRADCODE_TEST_MPIEXEC=mpiexec.mpich
# The debug information of the release profile is not needed here: a faster build.
export CARGO_PROFILE_RELEASE_DEBUG=false
# Every test binary that launches through tests/common's launcher
# (GRADCODE_TEST_MPIEXEC); the rest pass OpenMPI's own mpirun options
# (--mca, a rank's pid from its environment, the netns test bed) and run
# under OpenMPI only.
tests=(mpi job_scripts aggregate bit_reproducible nn probe resume_same_run scale trace_versions)
echo "== cargo test under MPICH (tests/{$(IFS=,; echo "${tests[*]}")}.rs)"
cargo test --locked --release $(printf -- '--test %s ' "${tests[@]}")
# Over TCP, the transport between the nodes of an Ethernet cluster: MPICH
# 4.0's MPI_Finalize over UCX/TCP could hang a finished job (src/finalize.rs).
echo "== the same under MPICH over TCP (UCX_TLS=tcp)"
UCX_TLS=tcp cargo test --locked --release $(printf -- '--test %s ' "${tests[@]}")
ldd target/mpich/release/gradcode | grep libmpich >/dev/null \
  || { echo "test-mpich.sh: target/mpich/release/gradcode is not linked against MPICH" >&2; exit 1; }
echo "== MPICH: all tests passed"
