#!/usr/bin/env bash
# The sparse path at the scale of Tandon et al.'s Amazon experiment (001 §5,
# issue 12): synthetic-onehot data of 26,210 training samples x 241,915
# one-hot features, 10 stored entries per sample, logistic regression,
# K = 10 workers, gc-cyclic load 2, no injected delay, 11 ranks oversubscribed
# on this machine. Reports and writes to results/bench-sparse.json:
#  - the mean iteration time and the workers' compute per result message,
#    with runtime.aggregate = "gather" and "reduce" (issue 28; auto picks
#    reduce for these vectors of 1.9 MB), each against the compute floor
#    (the workers' compute per iteration in their threads' CPU time, summed
#    and spread over min(K, cores) cores, as scripts/bench-runtime.sh);
#  - the peak RSS (VmHWM, /usr/bin/time -v) of every rank;
#  - the sparse kernel's throughput in stored entries (non-zeros) per second
#    (cargo bench --bench kernel -- "sparse kernel");
#  - the relative error of the final θ against the single-process full-batch
#    reference (examples/full_batch.rs).
# Targets (issue 12): every worker below 200 MiB RSS, θ equal to the
# reference to 1e-9 relative; the script exits 1 when one is missed.
# Usage: scripts/bench-sparse.sh [ITERATIONS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-100}
source scripts/lib.sh
build_release --example full_batch
mpi_env
mkdir -p results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# configs/bench/sparse.toml for ITERATIONS, as a file: the reference example reads no --set.
write_config "$(bench_config sparse)" "$work/onehot.toml" "train.iterations=$iterations"

# Every rank under /usr/bin/time -v, its report named by its MPI rank.
cat > "$work/rank.sh" <<'SH'
#!/bin/sh
exec /usr/bin/time -v -o "$BENCH_DIR/time-${OMPI_COMM_WORLD_RANK:-$PMI_RANK}.txt" "$@"
SH
chmod +x "$work/rank.sh"
"$bin" check --config "$work/onehot.toml" | grep '^data '
for aggregate in gather reduce; do
  mkdir -p "$work/$aggregate"
  BENCH_DIR="$work/$aggregate" launch_ranks 11 "$work/rank.sh" "$bin" train \
    --config "$work/onehot.toml" --out "$work/$aggregate/onehot.h5" --json --quiet \
    --set "runtime.aggregate=\"$aggregate\"" > "$work/$aggregate/train.json"
done
"$target/release/examples/full_batch" "$work/onehot.toml" > "$work/reference.json"

cargo bench --locked --bench kernel -- "sparse kernel" --noplot > "$work/kernel.txt" 2>&1
thrpt() { grep -A3 "sparse kernel/onehot 26210x241915 $1" "$work/kernel.txt" | grep -m1 thrpt | sed -E 's/.*\[[^ ]+ [^ ]+ ([0-9.]+) ([GMK]?elem\/s).*/\1 \2/'; }
ls_thrpt=$(thrpt LeastSquares)
log_thrpt=$(thrpt Logistic)

python3 - "$work" "$ls_thrpt" "$log_thrpt" "$(nproc)" <<'PY'
import json, math, re, sys
work, ls_thrpt, log_thrpt, cores = sys.argv[1:]
ref = json.load(open(f"{work}/reference.json"))
b = ref["theta"]
result = {
    "problem": "synthetic-onehot 26210 x 241915, 10 non-zeros per row, logistic, K = 10, gc-cyclic load 2, 11 ranks on this machine",
    "cores": int(cores),
    "kernel_throughput_least_squares": ls_thrpt,
    "kernel_throughput_logistic": log_thrpt,
    "reference_final_train_loss": ref["final_train_loss"],
    "aggregate": {},
}
ok = True
print(f"sparse kernel                {ls_thrpt} least squares, {log_thrpt} logistic (non-zeros)")
for aggregate in ("gather", "reduce"):
    train = json.load(open(f"{work}/{aggregate}/train.json"))
    a = train["theta"]
    err = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))) / math.sqrt(sum(y * y for y in b))
    rss_mib = []
    for rank in range(11):
        text = open(f"{work}/{aggregate}/time-{rank}.txt").read()
        kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
        rss_mib.append(kib / 1024)
    compute = next(e for e in train["timing"] if e["event"] == "compute (workers)")
    compute_cpu = next(e for e in train["timing"] if e["event"] == "compute (workers, CPU)")
    floor_ms = 1e3 * compute_cpu["total_s"] / train["iterations"] / min(10, int(cores))
    r = {
        "iterations": train["iterations"],
        "mean_iteration_ms": 1e3 * train["mean_iteration_s"],
        "compute_floor_ms": floor_ms,
        "iteration_over_floor": 1e3 * train["mean_iteration_s"] / floor_ms,
        "master_inbound_bytes_per_iteration": train["master_inbound_bytes_per_iteration"],
        "worker_compute_ms_per_result": 1e3 * compute["total_s"] / max(compute["count"], 1),
        "worker_compute_cpu_ms_per_result": 1e3 * compute_cpu["total_s"] / max(compute_cpu["count"], 1),
        "master_timing_ms_per_iteration": {e["event"]: 1e3 * e["total_s"] / train["iterations"] for e in train["timing"]},
        "rss_mib_master": rss_mib[0],
        "rss_mib_workers_max": max(rss_mib[1:]),
        "rss_mib_per_rank": rss_mib,
        "theta_relative_error_vs_single_process": err,
        "final_train_loss": train["final_train_loss"],
    }
    result["aggregate"][aggregate] = r
    print(f"runtime.aggregate = {aggregate}")
    print(f"  iterations                 {r['iterations']}")
    print(f"  mean iteration             {r['mean_iteration_ms']:.1f} ms, compute floor {floor_ms:.1f} ms ({r['iteration_over_floor']:.2f}x; issue 28's target 1.5x)")
    print(f"  master inbound             {r['master_inbound_bytes_per_iteration']:.4g} bytes per iteration")
    print(f"  worker compute per result  {r['worker_compute_ms_per_result']:.2f} ms wall clock, {r['worker_compute_cpu_ms_per_result']:.2f} ms CPU (2 partitions of 2621 samples)")
    print("  per iteration, by event    " + ", ".join(f"{k} {v:.2f} ms" for k, v in r["master_timing_ms_per_iteration"].items()))
    print(f"  peak RSS master            {rss_mib[0]:.0f} MiB")
    print(f"  peak RSS workers           {min(rss_mib[1:]):.0f} .. {max(rss_mib[1:]):.0f} MiB (target < 200)")
    print(f"  theta vs single process    {err:.2e} relative (target <= 1e-9)")
    print(f"  final train loss           {train['final_train_loss']:.6f} (reference {ref['final_train_loss']:.6f})")
    ok = ok and max(rss_mib[1:]) < 200 and err <= 1e-9
json.dump(result, open("results/bench-sparse.json", "w"), indent=2)
print("targets                      " + ("met" if ok else "MISSED"))
sys.exit(0 if ok else 1)
PY
