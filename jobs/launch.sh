#!/usr/bin/env bash
# Shell functions of the batch scripts (sourced, not run):
#
#   launch COMMAND...   start $SLURM_NTASKS ranks of COMMAND inside a Slurm allocation
#   run_words LINE      split a runs-file line into the array `words` as a shell would
#                       (quotes, backslashes) without expanding or running anything
#   finish_summary, summary_status   a job's summary.json (below; they use $bin)
#
# launch sources $GRADCODE_SITE_SETUP first when set (a file of site commands,
# e.g. `module load openmpi hdf5`), then picks a launcher that both Slurm and
# the MPI library the binary is linked against support (`ldd`: OpenMPI's
# libmpi.so.40, or the MPICH ABI's libmpich / libmpi.so.12 / libmpi_cray of
# MPICH, Intel MPI, Cray MPICH and MVAPICH):
#   OpenMPI: srun with PMIx when `srun --mpi=list` offers pmix and OpenMPI
#     has a PMIx client (a pmix component other than `isolated` and `flux` in
#     `ompi_info`), srun with PMI-2 when Slurm offers pmi2 and OpenMPI has
#     the `s2` client, else OpenMPI's own mpirun (`mpirun.openmpi` where
#     Debian installs several MPIs) with --oversubscribe. Debian's OpenMPI
#     4.1 has PMIx but no PMI-2 client, so `srun --mpi=pmi2` would die in
#     MPI_Init there: it is never chosen.
#   MPICH ABI or unknown: the library's own mpiexec (`mpiexec.mpich` where
#     Debian installs several) with the standard `-n` only, never an
#     OpenMPI flag; its process manager reads the Slurm allocation. Whether
#     such a build accepts srun's PMI is decided when it is built, and no
#     tool reports it: GRADCODE_LAUNCHER=srun-pmi2 (or srun-pmix) chooses it.
# GRADCODE_LAUNCHER=srun-pmix|srun-pmi2|mpirun|mpiexec overrides the choice.
# The choice and the reason go to the job log.
#
# Exit status: the launcher's, except that when this shell itself receives
# SIGTERM (Slurm's time limit, scancel) or SIGINT while the job runs, `launch`
# returns 128 + signal (143, 130) once the launcher has ended. OpenMPI's
# mpirun exits 1 whenever it is signalled itself, whatever the ranks return
# (the ranks still stop gracefully: gradcode writes its snapshot and says
# "interrupted by ..." on stderr); srun returns the highest status of its tasks.

run_words() {
  local - parsed
  set -o pipefail
  parsed=$(printf '%s\n' "$1" | xargs printf '%s\0' 2>/dev/null | base64 -w0) || return 1
  mapfile -d '' -t words < <(printf '%s' "$parsed" | base64 -d)
}

# finish_summary OUT STATUS TRACE: move OUT/summary.json.part (what
# `train --json` printed) to OUT/summary.json; when gradcode printed nothing
# (the launcher or MPI failed first), write a failed summary naming the
# status. JSON is read and written by the binary ($bin of the batch script,
# `gradcode job`): compute nodes need no Python.
finish_summary() {
  if [ -s "$1/summary.json.part" ]; then
    mv "$1/summary.json.part" "$1/summary.json"
  else
    rm -f "$1/summary.json.part"
    "${bin:?}" job failed-summary --status "$2" --trace "$3" > "$1/summary.json.part" \
      && mv "$1/summary.json.part" "$1/summary.json"
  fi
}

# summary_status FILE: the "status" of a summary.json.
summary_status() {
  "${bin:?}" job field "$1" status 2>/dev/null || echo unknown
}

# mpi_vendor BINARY: the MPI library BINARY is linked against: openmpi,
# mpich (the MPICH ABI) or unknown.
mpi_vendor() {
  local libs
  libs=$(ldd "$1" 2>/dev/null) || { echo unknown; return; }
  if grep -q 'libmpi\.so\.40\|libopen-pal\|libopen-rte' <<<"$libs"; then
    echo openmpi
  elif grep -q 'libmpich\|libmpi\.so\.12\|libmpi_cray' <<<"$libs"; then
    echo mpich
  else
    echo unknown
  fi
}

# Which launcher for BINARY: prints "HOW REASON".
choose_launcher() {
  if [ -n "${GRADCODE_LAUNCHER:-}" ]; then
    echo "$GRADCODE_LAUNCHER (GRADCODE_LAUNCHER)"
    return
  fi
  local vendor
  vendor=$(mpi_vendor "${1:?choose_launcher needs the binary}")
  if [ "$vendor" != openmpi ]; then
    echo "mpiexec (${1##*/} is linked against the MPI library of ABI $vendor: its own mpiexec, standard flags only)"
    return
  fi
  local slurm mpi
  slurm=$(srun --mpi=list 2>&1 || true)
  if ! command -v ompi_info >/dev/null; then
    echo "mpirun (no ompi_info: OpenMPI's PMI support is unknown)"
    return
  fi
  mpi=$(ompi_info --parsable 2>/dev/null | grep -o '^mca:pmix:[a-z0-9]*' | sort -u | cut -d: -f3 | tr '\n' ' ')
  local pmix_client="" pmi2_client=""
  for c in $mpi; do
    case "$c" in
      isolated | flux) ;;
      s2) pmi2_client=$c ;;
      s1) ;;
      *) pmix_client=$c ;;
    esac
  done
  if grep -qw pmix <<<"$slurm" && [ -n "$pmix_client" ]; then
    echo "srun-pmix (Slurm offers pmix, OpenMPI has the PMIx client $pmix_client)"
  elif grep -qw pmi2 <<<"$slurm" && [ -n "$pmi2_client" ]; then
    echo "srun-pmi2 (Slurm offers pmi2, OpenMPI has the PMI-2 client s2)"
  else
    echo "mpirun (Slurm offers: $(tr '\n' ' ' <<<"$slurm" | tr -s ' '); OpenMPI's PMI clients: ${mpi:-none})"
  fi
}

# The first of the names given that is on PATH (the last when none is).
first_command() {
  local name
  for name in "$@"; do
    command -v "$name" >/dev/null 2>&1 && { echo "$name"; return; }
  done
  echo "$name"
}

# launcher_command HOW NTASKS: the launcher's words, one per line.
launcher_command() {
  case "$1" in
    srun-pmix) printf '%s\n' srun --mpi=pmix -n "$2" ;;
    srun-pmi2) printf '%s\n' srun --mpi=pmi2 -n "$2" ;;
    # OpenMPI's mpirun reads the allocation from Slurm; --oversubscribe only
    # matters when a node has fewer cores than tasks (a workstation or a test node).
    mpirun) printf '%s\n' "$(first_command mpirun.openmpi mpirun)" --oversubscribe -n "$2" ;;
    mpiexec) printf '%s\n' "$(first_command mpiexec.mpich mpiexec.hydra mpiexec)" -n "$2" ;;
    *) return 1 ;;
  esac
}

launch() {
  if [ -n "${GRADCODE_SITE_SETUP:-}" ]; then
    echo "launch: sourcing the site setup $GRADCODE_SITE_SETUP" >&2
    # shellcheck disable=SC1090
    source "$GRADCODE_SITE_SETUP" >&2 # its output belongs in the job log, not in what the launcher prints
  fi
  local choice how
  choice=$(choose_launcher "$1")
  how=${choice%% *}
  local -a cmd
  mapfile -t cmd < <(launcher_command "$how" "$SLURM_NTASKS")
  if ((${#cmd[@]} == 0)); then
    echo "launch: unknown GRADCODE_LAUNCHER=$how (srun-pmix, srun-pmi2, mpirun, mpiexec)" >&2
    return 2
  fi
  echo "launch: $choice, $SLURM_NTASKS ranks: $*" >&2
  # The launcher and the ranks get the signal themselves; the shell notes
  # it. The launcher runs in the background and the shell waits for it: a
  # signal then ends the wait at once and its trap runs (waiting for a
  # foreground command, bash drops SIGINT's trap when the command exits
  # normally, as mpirun does after passing the signal on: exit 1, not 130,
  # in loaded runs). A background command starts with SIGINT ignored; the
  # subshell restores it before it becomes the launcher.
  local caught="" status=0 pid
  trap 'caught=${caught:-143}' TERM
  trap 'caught=${caught:-130}' INT
  (trap - INT; exec "${cmd[@]}" "$@") &
  pid=$!
  # A trapped signal ends a wait before the launcher does: wait until it
  # has ended, then once more for its own status (an interrupted wait
  # returns 128 + the signal, whether or not the launcher ended meanwhile).
  while kill -0 "$pid" 2>/dev/null; do
    wait "$pid" 2>/dev/null || true
  done
  wait "$pid" || status=$?
  trap - TERM INT
  if [ -n "$caught" ]; then
    echo "launch: stopped by SIG$([ "$caught" = 143 ] && echo TERM || echo INT) (the launcher returned $status): exit $caught" >&2
    return "$caught"
  fi
  return "$status"
}
