#!/usr/bin/env bash
# Scale benchmark of the MPI runtime (issue 12): peak resident memory of the
# master and of the workers, and the master's own work per iteration, for
# K in {16, 64, 128} emulated workers (K + 1 ranks oversubscribed on this
# machine, mostly sleeping until their sampled due times) and d in {10^4, 10^6}
# model parameters. The data is tiny (one sample per partition), so what is
# measured is the runtime's memory: models in flight, result buffers,
# MPI's own. gc-cyclic with load 2 (tolerates one straggler).
#
# Peak RSS per rank is VmHWM as /usr/bin/time -v reports it ("Maximum
# resident set size"), one file per rank. Target (issue 12): the master's
# peak at K = 128, d = 10^6 at most 256 MiB + 6 x 8 x d bytes.
# Results: a table on stdout and results/bench-scale.json.
#
# Usage: scripts/bench-scale.sh [ITERATIONS]   (default 5)
#   BENCH_SCALE_CASES="K:D ..." replaces the six cases (e.g. "12:2000000",
#   issue 38's check that the master's peak does not grow with K), and
#   BENCH_SCALE_SAMPLES=S gives each partition S samples (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-5}
source scripts/lib.sh
build_release
mpi_env
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
mkdir -p results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each rank under /usr/bin/time, its report in rss.RANK.
cat > "$work/rank.sh" <<'SH'
#!/bin/sh
exec /usr/bin/time -v -o "$RSS_DIR/rss.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" "$@"
SH
chmod +x "$work/rank.sh"

rows=()
cases=${BENCH_SCALE_CASES:-"16:10000 64:10000 128:10000 16:1000000 64:1000000 128:1000000"}
samples=${BENCH_SCALE_SAMPLES:-1}
for case in $cases; do
    k=${case%%:*} d=${case#*:}
    name="k$k-d$d"
    mkdir -p "$work/$name"
    start=$(date +%s.%N)
    RSS_DIR="$work/$name" launch_ranks $((k + 1)) "$work/rank.sh" "$bin" train \
      --config "$(bench_config scale)" --set "workers=$k" --set "data.train_samples=$((k * samples))" \
      --set "data.features=$d" --set "train.iterations=$iterations" --out "$work/$name.h5" --json --quiet > "$work/$name.json"
    wall=$(python3 -c "import time; print(time.time() - $start)")
    rows+=("$name $k $d $wall")
    echo "$name: done in ${wall%.*} s" >&2
done

python3 - "$work" "$iterations" "${rows[@]}" <<'PY'
import json, os, statistics, sys
work, iterations = sys.argv[1], int(sys.argv[2])
def peak_mib(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) / 1024  # kbytes
    raise SystemExit(f"no peak RSS in {path}")
out = []
for row in sys.argv[3:]:
    name, k, d, wall = row.split()
    k, d = int(k), int(d)
    summary = json.load(open(os.path.join(work, name + ".json")))
    master = peak_mib(os.path.join(work, name, "rss.0"))
    workers = [peak_mib(os.path.join(work, name, f"rss.{r}")) for r in range(1, k + 1)]
    master_work_s = sum(e["total_s"] for e in summary["timing"]
                        if e["event"] != "wait" and not e["event"].startswith("compute (workers")) / summary["iterations"]
    target = 256 + 6 * 8 * d / 2**20
    out.append({"workers": k, "features": d, "iterations": summary["iterations"],
                "master_peak_mib": master, "worker_peak_mib_median": statistics.median(workers),
                "worker_peak_mib_max": max(workers), "master_work_per_iteration_s": master_work_s,
                "mean_iteration_s": summary["mean_iteration_s"], "master_target_mib": target,
                "job_wall_s": float(wall)})
json.dump(out, open(os.environ.get("BENCH_SCALE_OUT", "results/bench-scale.json"), "w"), indent=2)
print(f"{'K':>4} {'d':>8} {'master MiB':>11} {'target MiB':>11} {'worker MiB (median/max)':>24} {'master work ms/it':>18} {'iteration ms':>13}")
for r in out:
    print(f"{r['workers']:>4} {r['features']:>8} {r['master_peak_mib']:>11.1f} {r['master_target_mib']:>11.1f} "
          f"{r['worker_peak_mib_median']:>13.1f} / {r['worker_peak_mib_max']:<8.1f} {1e3*r['master_work_per_iteration_s']:>18.2f} {1e3*r['mean_iteration_s']:>13.1f}")
for r in out:
    ok = r["master_peak_mib"] <= r["master_target_mib"]
    print(f"target K = {r['workers']}, d = {r['features']}: master peak {r['master_peak_mib']:.1f} MiB <= {r['master_target_mib']:.1f} MiB: {'met' if ok else 'NOT met'}")
print("written:", os.environ.get("BENCH_SCALE_OUT", "results/bench-scale.json"))
PY
