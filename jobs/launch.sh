#!/usr/bin/env bash
# Launch an MPI program inside a Slurm allocation: srun with PMIx, else srun
# with PMI-2, else mpirun. Override with GRADCODE_LAUNCHER=srun-pmix|srun-pmi2|mpirun.
# Sourced by the batch scripts; `launch COMMAND...` starts $SLURM_NTASKS ranks.

launch() {
  local how="${GRADCODE_LAUNCHER:-}"
  if [ -z "$how" ]; then
    local mpis
    mpis=$(srun --mpi=list 2>&1 || true)
    if grep -qw pmix <<<"$mpis"; then
      how=srun-pmix
    elif grep -qw pmi2 <<<"$mpis"; then
      how=srun-pmi2
    else
      how=mpirun
    fi
  fi
  echo "launch: $how, $SLURM_NTASKS ranks: $*" >&2
  case "$how" in
    srun-pmix) srun --mpi=pmix -n "$SLURM_NTASKS" "$@" ;;
    srun-pmi2) srun --mpi=pmi2 -n "$SLURM_NTASKS" "$@" ;;
    # mpirun reads the allocation from Slurm; --oversubscribe only matters
    # when a node has fewer cores than tasks (a workstation or a test node).
    mpirun) mpirun --oversubscribe -n "$SLURM_NTASKS" "$@" ;;
    *) echo "launch: unknown GRADCODE_LAUNCHER=$how (srun-pmix, srun-pmi2, mpirun)" >&2; return 2 ;;
  esac
}
