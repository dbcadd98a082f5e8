#!/usr/bin/env bash
# runtime.aggregate = gather against reduce (issue 28, item 3; docs/aggregate.md):
# K = 16 workers (17 ranks, oversubscribed), gc-cyclic with load 2 (configs/bench/aggregate.toml), measured
# mode, synthetic one-hot data with few samples (64 rows of 4 entries, so the
# workers' compute is small; runtime.pack_sparse = false, so every coded
# vector has its d + 1 values, as a dense model's: a packed one of these
# partitions would hold a few hundred), d in {10^4, 3·10^4, 10^5, 10^6, 10^7} by default. Runs gather
# and reduce alternately REPEATS times each and keeps the best mean iteration
# time of each; prints it with the master's inbound bytes per iteration (in
# coded vectors of 8(d + 1) bytes) and writes results/bench-aggregate.json.
# The crossover of runtime.aggregate = "auto" (RuntimeAggregate::AUTO_REDUCE_BYTES)
# comes from this table (docs/performance.md).
# Usage: scripts/bench-aggregate.sh [REPEATS] [D...]   (default 2; 10000 30000 100000 1000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-2}
shift || true
dims=("$@")
[ ${#dims[@]} -gt 0 ] || dims=(10000 30000 100000 1000000 10000000)
source scripts/lib.sh
build_release
mpi_env
config=$(bench_config aggregate)
mkdir -p results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=()
for d in "${dims[@]}"; do
  # Fewer iterations for the largest vectors: each moves 16 x 80 MB at d = 10^7.
  iterations=$(( d >= 10000000 ? 5 : 20 ))
  declare -A best=([gather]=1e9 [reduce]=1e9) bytes=()
  for _ in $(seq "$repeats"); do
    for aggregate in gather reduce; do
      launch_ranks 17 "$bin" train --config "$config" --set "data.features=$d" --set "train.iterations=$iterations" \
        --out "$work/t.h5" --force --json --quiet --set "runtime.aggregate=\"$aggregate\"" > "$work/t.json"
      read -r s b < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["mean_iteration_s"], d["master_inbound_bytes_per_iteration"])' "$work/t.json")
      best[$aggregate]=$(python3 -c "print(min(${best[$aggregate]}, $s))")
      bytes[$aggregate]=$b
    done
  done
  rows+=("$d,${best[gather]},${best[reduce]},${bytes[gather]},${bytes[reduce]}")
  unset best bytes
done
python3 - "$repeats" "${rows[@]}" <<'PY'
import json, sys
repeats, rows = int(sys.argv[1]), sys.argv[2:]
out = {"workers": 16, "scheme": "gc-cyclic load 2", "repeats": repeats, "runs": []}
print(f"K = 16, gc-cyclic load 2, 17 ranks, best of {repeats} (mean iteration, master inbound per iteration):")
for row in rows:
    d, tg, tr, bg, br = row.split(",")
    d, tg, tr, bg, br = int(d), float(tg), float(tr), float(bg), float(br)
    v = 8 * (d + 1)
    out["runs"].append({"d": d, "gather_s": tg, "reduce_s": tr, "reduce_over_gather": tr / tg,
                        "gather_inbound_bytes": bg, "reduce_inbound_bytes": br,
                        "gather_inbound_vectors": bg / v, "reduce_inbound_vectors": br / v})
    print(f"  d = {d:.0e}: gather {tg:.4f} s, {bg / v:.2f} vectors; reduce {tr:.4f} s, {br / v:.2f} vectors; reduce/gather {tr / tg:.2f}")
json.dump(out, open("results/bench-aggregate.json", "w"), indent=2)
print("written: results/bench-aggregate.json")
PY
