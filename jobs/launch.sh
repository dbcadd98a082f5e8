#!/usr/bin/env bash
# Launch an MPI program inside a Slurm allocation: srun with PMIx, else srun
# with PMI-2, else mpirun. Override with GRADCODE_LAUNCHER=srun-pmix|srun-pmi2|mpirun.
# Sourced by the batch scripts; `launch COMMAND...` starts $SLURM_NTASKS ranks.
#
# Exit status: the launcher's, except that when this shell itself receives
# SIGTERM (Slurm's time limit, scancel) or SIGINT while the job runs, `launch`
# returns 128 + signal (143, 130) once the launcher has ended. OpenMPI's
# mpirun exits 1 whenever it is signalled itself, whatever the ranks return
# (the ranks still stop gracefully: gradcode writes its snapshot and says
# "interrupted by ..." on stderr); srun returns the highest status of its tasks.

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
  local -a cmd
  case "$how" in
    srun-pmix) cmd=(srun --mpi=pmix -n "$SLURM_NTASKS") ;;
    srun-pmi2) cmd=(srun --mpi=pmi2 -n "$SLURM_NTASKS") ;;
    # mpirun reads the allocation from Slurm; --oversubscribe only matters
    # when a node has fewer cores than tasks (a workstation or a test node).
    mpirun) cmd=(mpirun --oversubscribe -n "$SLURM_NTASKS") ;;
    *) echo "launch: unknown GRADCODE_LAUNCHER=$how (srun-pmix, srun-pmi2, mpirun)" >&2; return 2 ;;
  esac
  echo "launch: $how, $SLURM_NTASKS ranks: $*" >&2
  # bash runs these traps once the launcher has ended (it waits for a
  # foreground command); the launcher and the ranks get the signal themselves.
  local caught="" status=0
  trap 'caught=${caught:-143}' TERM
  trap 'caught=${caught:-130}' INT
  "${cmd[@]}" "$@" || status=$?
  trap - TERM INT
  if [ -n "$caught" ]; then
    echo "launch: stopped by SIG$([ "$caught" = 143 ] && echo TERM || echo INT) (the launcher returned $status): exit $caught" >&2
    return "$caught"
  fi
  return "$status"
}
