#!/usr/bin/env bash
# Benchmarks of the neural networks (issue 23), printed as a table and written
# to results/bench-nn.json:
#  1. a training step of the CNN and the MLP under mpirun (K = 4 and K = 8
#     workers, gc-cyclic load 2, batch 32 per partition, f64, no injected
#     delay, Fashion-MNIST) against the compute floor: the workers' compute
#     per iteration in their threads' CPU time, summed and spread over
#     min(K, cores) cores (the iteration if the runtime cost nothing; as
#     scripts/bench-runtime.sh). Best of three runs each;
#  2. peak memory (maximum resident set) of each rank of those runs;
#  3. each model's gradient throughput on one core (samples per second,
#     `cargo bench --bench nn`: the same forward and backward pass a worker
#     runs; the MLP, the CNN and a small ResNet, resnet_blocks = [2, 2],
#     resnet_width = 16) beside PyTorch's on the same networks and precision
#     (scripts/bench_nn_torch.py, when python3-torch is installed: Debian's
#     python3-torch with libopenblas0-pthread; not a dependency of gradcode).
# With --cpu-per-step, instead: where an MLP step's CPU goes (K = 4), less
# disturbed by load than the wall clock: each rank's user and system CPU
# (/usr/bin/time) in a run of LONG and one of SHORT iterations, differenced
# so setup and loading cancel, per step. The line labelled master is the rank
# with the most system time: the master when gathering (it reads the
# workers' vectors), not always when reducing (the workers then read each
# other's).
# Usage: [AGGREGATE=gather|reduce|auto] scripts/bench-nn.sh [ITERATIONS]
#          (default 60 per training run; AGGREGATE sets runtime.aggregate, default auto)
#        [AGGREGATE=...] scripts/bench-nn.sh --cpu-per-step [SHORT LONG]
#          (default 20 and 200 iterations; AGGREGATE default gather)
set -euo pipefail
cd "$(dirname "$0")/.."
cpu_per_step=
if [ "${1:-}" = --cpu-per-step ]; then
  cpu_per_step=1
  short=${2:-20} long=${3:-200}
  iterations=$long
  aggregate=${AGGREGATE:-gather}
else
  iterations=${1:-60}
  aggregate=${AGGREGATE:-auto}
fi
source scripts/lib.sh
build_release
mpi_env
mkdir -p results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
cores=$(nproc)

# configs/bench/nn.toml with a problem's workers and model.kind: the
# config and its settings in the array `problem`.
problem() { # WORKERS MODEL-KIND
  problem=(--config "$(bench_config nn)" --set "workers=$1" --set "model.kind=\"$2\"" --set "train.iterations=$iterations")
}

if [ -n "$cpu_per_step" ]; then
  for n in "$short" "$long"; do
    # One line per rank: user and system seconds, sorted by system time.
    problem 4 mlp
    launch_ranks 5 /usr/bin/time -f 'cpu %U %S' "$bin" train "${problem[@]}" \
      --out "$work/mlp.h5" --force --json --quiet --set "train.iterations=$n" \
      --set "runtime.aggregate=\"$aggregate\"" 2> "$work/$n.err" > /dev/null
    grep -o 'cpu [0-9.]* [0-9.]*' "$work/$n.err" | sort -n -k3 > "$work/$n.cpu"
  done
  python3 - "$work/$short.cpu" "$work/$long.cpu" "$((long - short))" "$aggregate" "$(uptime)" <<'PY'
import sys
def ranks(path):
    return [tuple(map(float, l.split()[1:])) for l in open(path)]
a, b, steps = ranks(sys.argv[1]), ranks(sys.argv[2]), int(sys.argv[3])
per = [((ub - ua) / steps * 1e3, (sb - sa) / steps * 1e3) for (ua, sa), (ub, sb) in zip(a, b)]
print(f"CPU per MLP step, K = 4, aggregate {sys.argv[4]} ({steps} steps differenced; {sys.argv[5].strip()}):")
for i, (u, s) in enumerate(per):
    who = "master" if i == len(per) - 1 else "worker"
    print(f"  {who}: {u:.1f} ms user, {s:.1f} ms system")
print(f"  all ranks: {sum(u + s for u, s in per):.1f} ms")
PY
  exit 0
fi

runs=()
for p in cnn-k4 cnn-k8 mlp-k4 mlp-k8; do
  workers=${p#*-k}
  problem "$workers" "${p%%-*}"
  ranks=$((workers + 1))
  best_step=1e9 best_floor=1e9 peak=0
  for _ in 1 2 3; do
    # /usr/bin/time -f %M: each rank's maximum resident set in KiB, one line each.
    launch_ranks "$ranks" /usr/bin/time -f 'peak-rss-kib %M' "$bin" train \
      "${problem[@]}" --out "$work/$p.h5" --force --json --quiet \
      --set "runtime.aggregate=\"$aggregate\"" > "$work/t.json" 2> "$work/t.err"
    # The step as the user waits for it: every event of the master's loop
    # (send, wait, decode, update, observe), not only mean_iteration_s
    # (which leaves out the decode and the update).
    step=$(json "$work/t.json" 'sum(e["total_s"] for e in d["timing"] if not e["event"].startswith("compute (workers") and e["event"] != "evaluate") / d["iterations"]')
    floor=$(json "$work/t.json" 'sum(e["total_s"] for e in d["timing"] if e["event"] == "compute (workers, CPU)") / d["iterations"] / '"$(( workers < cores ? workers : cores ))")
    best_step=$(python3 -c "print(min($best_step, $step))")
    best_floor=$(python3 -c "print(min($best_floor, $floor))")
    rss=$(grep -o 'peak-rss-kib [0-9]*' "$work/t.err" | awk '{print $2}' | sort -n | tail -1)
    peak=$(( rss > peak ? rss : peak ))
  done
  runs+=("$p=$best_step,$best_floor,$peak")
done

cargo bench --locked --bench nn -- --noplot > "$work/nn.txt" 2>&1
# The middle estimate of criterion's "thrpt: [low U mid U high U]" (below 100
# elements per second criterion pads the unit with a second space).
ours() { grep -A3 "gradient/$1" "$work/nn.txt" | grep -m1 'thrpt' | sed -E 's/.*\[[^ ]+ +[^ ]+ +([0-9.]+) +([K]?)elem\/s.*/\1 \2/'; }
torch_py=""
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import torch' 2>/dev/null; then torch_py=$py; break; fi
done
if [ -n "$torch_py" ]; then
  "$torch_py" scripts/bench_nn_torch.py --precision f64 > "$work/torch.jsonl"
  "$torch_py" scripts/bench_nn_torch.py --precision f32 >> "$work/torch.jsonl"
else
  : > "$work/torch.jsonl"
fi

python3 - "$cores" "$iterations" "$work/torch.jsonl" "$(ours 'mlp f64')" "$(ours 'mlp f32')" \
  "$(ours 'cnn f64')" "$(ours 'cnn f32')" "$(ours 'resnet f64')" "$(ours 'resnet f32')" "${runs[@]}" <<'PY'
import json, sys
a = sys.argv[1:]
cores, iterations, torch_file = int(a[0]), int(a[1]), a[2]
def rate(s):
    v, *k = s.split()
    return float(v) * (1000 if k and k[0] == "K" else 1)
single = {"mlp f64": rate(a[3]), "mlp f32": rate(a[4]), "cnn f64": rate(a[5]), "cnn f32": rate(a[6]),
          "resnet f64": rate(a[7]), "resnet f32": rate(a[8])}
torch = {}
for line in open(torch_file):
    r = json.loads(line)
    torch[f"{r['model']} {r['precision']}"] = {"samples_per_s": r["samples_per_s"], "version": r["torch"]}
runs = {}
for r in a[9:]:
    name, values = r.split("=")
    step, floor, peak = values.split(",")
    runs[name] = {"step_s": float(step), "compute_floor_s": float(floor),
                  "vs_floor": float(step) / float(floor), "peak_rss_mib": int(peak) / 1024}
out = {"cores": cores, "iterations": iterations, "training": runs, "gradient_samples_per_s_per_core": {}}
for k, v in single.items():
    entry = {"gradcode": v}
    if k in torch:
        entry.update({"pytorch": torch[k]["samples_per_s"], "pytorch_version": torch[k]["version"],
                      "pytorch_over_gradcode": torch[k]["samples_per_s"] / v})
    out["gradient_samples_per_s_per_core"][k] = entry
json.dump(out, open("results/bench-nn.json", "w"), indent=2)
print(f"training step, gc-cyclic load 2, batch 32 per partition, f64, no injected delay ({iterations} iterations, best of 3, {cores} cores):")
for name, r in runs.items():
    print(f"  {name}: {r['step_s']*1e3:.1f} ms per step, compute floor {r['compute_floor_s']*1e3:.1f} ms ({r['vs_floor']:.2f}x), peak RSS per rank {r['peak_rss_mib']:.0f} MiB")
print("gradient throughput on one core, batch 32 (samples/s):")
for k, e in out["gradient_samples_per_s_per_core"].items():
    t = f", PyTorch {e['pytorch']:.0f} ({e['pytorch_over_gradcode']:.2f}x ours)" if "pytorch" in e else ", PyTorch not installed"
    print(f"  {k}: gradcode {e['gradcode']:.0f}{t}")
print("written to results/bench-nn.json")
PY
