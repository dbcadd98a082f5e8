#!/usr/bin/env bash
# Submit a gradcode batch script with the task count (and array) derived from
# the config(s): workers + 1 ranks.
#
#   jobs/submit.sh jobs/train.sbatch CONFIG [--set key=value ...] [-- SBATCH_OPTIONS...]
#   jobs/submit.sh jobs/sweep.sbatch RUNS [-- SBATCH_OPTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
script=${1:?usage: jobs/submit.sh jobs/train.sbatch CONFIG [--set k=v ...] [-- sbatch options]}
shift
args=() sbatch_opts=()
while (($#)); do
  if [ "$1" = "--" ]; then shift; sbatch_opts=("$@"); break; fi
  args+=("$1"); shift
done
bin=${GRADCODE:-target/release/gradcode}
case "$(basename "$script")" in
  sweep.sbatch)
    runs=${args[0]:?a sweep needs a RUNS file}
    mapfile -t lines < <(grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$runs")
    ((${#lines[@]})) || { echo "error: $runs lists no runs" >&2; exit 2; }
    ranks=""
    for line in "${lines[@]}"; do
      read -r -a run <<<"$line"
      r=$("$bin" check --config "${run[0]}" "${run[@]:1}" --ranks)
      if [ -n "$ranks" ] && [ "$r" != "$ranks" ]; then
        echo "error: the runs of $runs need different rank counts ($ranks and $r); split the sweep" >&2
        exit 2
      fi
      ranks=$r
    done
    exec sbatch --parsable --array="0-$((${#lines[@]} - 1))" --ntasks="$ranks" "${sbatch_opts[@]}" "$script" "${args[@]}"
    ;;
  *)
    ranks=$("$bin" check --config "${args[0]:?a run needs a CONFIG}" "${args[@]:1}" --ranks)
    exec sbatch --parsable --ntasks="$ranks" "${sbatch_opts[@]}" "$script" "${args[@]}"
    ;;
esac
