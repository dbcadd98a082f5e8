#!/usr/bin/env bash
# Submit a gradcode batch script with the task count (and array) derived from
# the config(s): workers + 1 ranks.
#
#   jobs/submit.sh jobs/train.sbatch CONFIG [--set key=value ...] [-- SBATCH_OPTIONS...]
#   jobs/submit.sh jobs/train.sbatch --resume TRACE [--set train.iterations=N] [-- SBATCH_OPTIONS...]
#   jobs/submit.sh jobs/sweep.sbatch RUNS [--throttle N] [-- SBATCH_OPTIONS...]
#
# A sweep is one job array per rank count its runs need (workers + 1), each
# array's tasks the runs-file lines of that count (`--array=0,3,4`), at most
# N of them running at once with --throttle N (`%N`). It prints one job id
# per array (and, on stderr, the runs and ranks of each).
#
# Run it from any folder: CONFIG, RUNS, TRACE and the configs a runs file
# names are relative to the folder you submit from (the job runs there too),
# and results go to ${GRADCODE_RESULTS:-./results}. A runs file line is split
# as a shell would split it, quotes included (`--set 'straggler.delayed_workers=[1, 2]'`),
# without running anything. Environment passed on to the job (also under
# `--export=NONE`): GRADCODE_HOME (this checkout), GRADCODE (the binary),
# GRADCODE_RESULTS, GRADCODE_SITE_SETUP (a file the job sources before
# launching, e.g. with `module load openmpi hdf5`), GRADCODE_LAUNCHER.
#
# Missing or bad arguments: one usage line on stderr naming what is missing,
# exit status 2, before anything is checked with the binary or submitted.
set -euo pipefail
home=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
absolute() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
train_usage="jobs/submit.sh jobs/train.sbatch CONFIG [--set key=value ...] [-- SBATCH_OPTIONS...]"
resume_usage="jobs/submit.sh jobs/train.sbatch --resume TRACE [--set train.iterations=N] [-- SBATCH_OPTIONS...]"
sweep_usage="jobs/submit.sh jobs/sweep.sbatch RUNS [--throttle N] [-- SBATCH_OPTIONS...]"
# usage FORM WHAT: the usage line of FORM saying what is missing or wrong, exit 2.
usage() { echo "usage: $1: $2" >&2; exit 2; }
case "${1:-}" in
  "") usage "$train_usage | $sweep_usage" "no batch script given" ;;
  -h | --help) printf 'usage: %s\n   or: %s\n   or: %s\n' "$train_usage" "$resume_usage" "$sweep_usage"; exit 0 ;;
esac
script=$1
shift
[ -f "$script" ] || { echo "error: $script: no such batch script" >&2; exit 2; }
[ "$(head -c 2 "$script" 2>/dev/null)" = "#!" ] \
  || usage "$train_usage | $sweep_usage" "$script is not a batch script (no #! line; a CONFIG goes after jobs/train.sbatch)"
script=$(absolute "$script")
args=() sbatch_opts=()
while (($#)); do
  if [ "$1" = "--" ]; then shift; sbatch_opts=("$@"); break; fi
  args+=("$1"); shift
done
if [ "$(basename "$script")" = sweep.sbatch ]; then
  [ -n "${args[0]:-}" ] || usage "$sweep_usage" "no RUNS file given"
elif [ "${args[0]:-}" = "--resume" ]; then
  [ -n "${args[1]:-}" ] || usage "$resume_usage" "no TRACE given after --resume"
else
  [ -n "${args[0]:-}" ] || usage "$train_usage" "no CONFIG given"
fi
bin=$(absolute "${GRADCODE:-$home/target/release/gradcode}")
[ -x "$bin" ] || { echo "error: $bin is not built (cargo build --release, or set GRADCODE)" >&2; exit 2; }
results=$(absolute "${GRADCODE_RESULTS:-results}")
passed=(GRADCODE_HOME="$home" GRADCODE="$bin" GRADCODE_RESULTS="$results")
[ -n "${GRADCODE_SITE_SETUP:-}" ] && passed+=(GRADCODE_SITE_SETUP="$(absolute "$GRADCODE_SITE_SETUP")")
[ -n "${GRADCODE_LAUNCHER:-}" ] && passed+=(GRADCODE_LAUNCHER="$GRADCODE_LAUNCHER")
# Our variables join the user's --export list (NONE included), or ALL.
export_set=0 output_set=0
for i in "${!sbatch_opts[@]}"; do
  case "${sbatch_opts[$i]}" in
    --export=*)
      export_set=1
      sbatch_opts[i]="${sbatch_opts[$i]}$(printf ',%s' "${passed[@]}")" ;;
    --output=* | -o) output_set=1 ;;
  esac
done
((export_set)) || sbatch_opts+=("--export=ALL$(printf ',%s' "${passed[@]}")")

source "$home/jobs/launch.sh" # run_words

case "$(basename "$script")" in
  sweep.sbatch)
    runs=${args[0]}
    [ -f "$runs" ] || { echo "error: $runs: no such runs file" >&2; exit 2; }
    mapfile -t lines < <(grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$runs" || true)
    ((${#lines[@]})) || { echo "error: $runs lists no runs" >&2; exit 2; }
    throttle=""
    if [ "${args[1]:-}" = "--throttle" ]; then
      throttle=${args[2]:-}
      [[ "$throttle" =~ ^[1-9][0-9]*$ ]] || { echo "error: --throttle: a whole number of runs at once >= 1, not '$throttle'" >&2; exit 2; }
    elif [ -n "${args[1]:-}" ]; then
      echo "error: unknown sweep option ${args[1]} (known: --throttle N)" >&2
      exit 2
    fi
    # The runs-file lines (task ids) of each rank count, all checked first.
    declare -A tasks_of=()
    for n in "${!lines[@]}"; do
      run_words "${lines[$n]}" || { echo "error: $runs: run $n: unbalanced quotes: ${lines[$n]}" >&2; exit 2; }
      run=("${words[@]}")
      r=$("$bin" check --config "${run[0]}" "${run[@]:1}" --ranks)
      tasks_of[$r]="${tasks_of[$r]:+${tasks_of[$r]},}$n"
    done
    ((output_set)) || sbatch_opts+=("--output=$results/slurm-%x-%A_%a.out")
    mkdir -p "$results" # only now: nothing is made before the checks pass
    for r in $(printf '%s\n' "${!tasks_of[@]}" | sort -n); do
      echo "submit: runs ${tasks_of[$r]} of $runs: $r ranks each" >&2
      sbatch --parsable --array="${tasks_of[$r]}${throttle:+%$throttle}" --ntasks="$r" "${sbatch_opts[@]}" \
        "$script" "$(absolute "$runs")"
    done
    ;;
  *)
    if [ "${args[0]:-}" = "--resume" ]; then
      trace=${args[1]}
      [ -f "$trace" ] || { echo "error: $trace: no such trace" >&2; exit 2; }
      workers=$("$bin" inspect "$trace" --json | "$bin" job field - workers)
      ranks=$((workers + 1))
      args[1]=$(absolute "$trace")
    else
      ranks=$("$bin" check --config "${args[0]}" "${args[@]:1}" --ranks)
    fi
    ((output_set)) || sbatch_opts+=("--output=$results/slurm-%x-%j.out")
    mkdir -p "$results"
    exec sbatch --parsable --ntasks="$ranks" "${sbatch_opts[@]}" "$script" "${args[@]}"
    ;;
esac
