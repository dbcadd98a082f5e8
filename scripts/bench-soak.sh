#!/usr/bin/env bash
# Soak benchmark (issue 27, defect 8): the master's memory over a long run.
# Trains a tiny problem (K = 4 workers, gc-cyclic load 2, 80 samples of 5
# features, measured mode: no injected delay) for ITERATIONS iterations under
# mpirun with a trace, sampling every rank's resident set size (VmRSS) once
# per second, and prints rank 0's RSS against the iteration reached, then the
# growth after warm-up (the first WARMUP iterations): max - min of rank 0's
# RSS over the samples after it. Written to results/bench-soak.json.
# Usage: scripts/bench-soak.sh [ITERATIONS [WARMUP]]   (default 1000000, 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-1000000}
warmup=${2:-200000}
source scripts/lib.sh
build_release
mpi_env
mkdir -p results
work=$(mktemp -d)
job=
trap '[ -n "$job" ] && kill "$job" 2>/dev/null; rm -rf "$work"' EXIT
progress=$((iterations / 100))
config=$(bench_config soak)
launch_command 5
GRADCODE_LOG=off "${launcher[@]}" "$bin" train --config "$config" --set "train.iterations=$iterations" \
  --set "train.eval_every=$iterations" --set "output.progress_every=$progress" \
  --set "output.snapshot_every=$progress" --out "$work/soak.h5" > "$work/stdout" 2> "$work/stderr" &
job=$!
# Rank of a process of this job (OpenMPI or MPICH's environment), or nothing
# (also when the process has ended since pgrep saw it).
rank_of() {
  { tr '\0' '\n' < "/proc/$1/environ"; } 2>/dev/null |
    sed -n 's/^\(OMPI_COMM_WORLD_RANK\|PMI_RANK\)=//p' | head -1 || true
}
: > "$work/samples"
start=$(date +%s.%N)
while kill -0 "$job" 2>/dev/null; do
  reached=$(grep -o '^iteration [0-9]*' "$work/stderr" | tail -1 | tr -dc 0-9 || true)
  for pid in $(pgrep -f "$bin train --config $config " || true); do
    rank=$(rank_of "$pid")
    rss=$(sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rank" ] && [ -n "$rss" ] && echo "${reached:-0} $rank $rss" >> "$work/samples"
  done
  sleep 1
done
wait "$job" || { echo "the soak run failed:" >&2; cat "$work/stderr" >&2; exit 1; }
job=
end=$(date +%s.%N)
python3 - "$work/samples" "$iterations" "$warmup" "$start" "$end" <<'PY'
import json, sys
path, iterations, warmup, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rows = [tuple(map(int, l.split())) for l in open(path) if l.strip()]
ranks = sorted({r for _, r, _ in rows})
print(f"{iterations} iterations in {end - start:.1f} s (K = 4, gc-cyclic load 2, trace written)")
print("iteration reached  rank-0 RSS (MiB)")
master = [(it, kib) for it, r, kib in rows if r == 0]
step = max(1, len(master) // 20)
for it, kib in master[::step]:
    print(f"{it:>17}  {kib / 1024:.1f}")
result = {"iterations": iterations, "warmup": warmup, "seconds": end - start, "ranks": {}}
for r in ranks:
    after = [kib for it, rr, kib in rows if rr == r and it >= warmup]
    allv = [kib for it, rr, kib in rows if rr == r]
    if not after:
        print(f"rank {r}: no sample after the warm-up", file=sys.stderr)
        continue
    growth = (max(after) - min(after)) / 1024
    result["ranks"][str(r)] = {"peak_mib": max(allv) / 1024, "after_warmup_min_mib": min(after) / 1024,
                               "after_warmup_max_mib": max(after) / 1024, "growth_after_warmup_mib": growth}
    print(f"rank {r}: peak {max(allv) / 1024:.1f} MiB, after iteration {warmup}: {min(after) / 1024:.1f}-{max(after) / 1024:.1f} MiB (growth {growth:.2f} MiB)")
json.dump(result, open("results/bench-soak.json", "w"), indent=1)
print("written results/bench-soak.json")
PY
