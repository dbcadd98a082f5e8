#!/usr/bin/env bash
# Measuring is not training (issue 39, item 1): does evaluating the losses change
# a partial scheme's run? Trains 004 §VIII's CNN with IS-GC (CR placement, w = 2,
# configs/paper/isgc-fig12-is-cr.toml) under mpirun with train.eval_every = 1
# (the test set and the full-data training loss evaluated at every step),
# eval_every = 5 and eval_every = 1000 (only at the first and the last
# step), SEEDS seeds each (default 3),
# and compares the iterations' durations (duration_s) and the stale results
# dropped per iteration, under both train.evaluation settings: "beside" (the
# master evaluates on a thread beside the iterations that follow) and
# "deferred" (held until a snapshot, the end or the memory bound, then
# evaluated while nothing trains). Written to results/bench-eval.json; the
# numbers are quoted in docs/neural-networks.md. Needs Fashion-MNIST
# (dataset-fashion-mnist).
# Usage: scripts/bench-eval.sh [SEEDS [ITERATIONS]]   (default 3, 200)
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3}
iterations=${2:-200}
for n in "$seeds" "$iterations"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-eval.sh: $n is not a positive whole number; usage: scripts/bench-eval.sh [SEEDS [ITERATIONS]]" >&2; exit 2; }
done
source scripts/lib.sh
build_release
mpi_env
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config=configs/paper/isgc-fig12-is-cr.toml
ranks=$("$bin" check --config "$config" --ranks)
for evaluation in beside deferred; do
  for every in 1 5 1000; do
    for s in $(seq 1 "$seeds"); do
      echo "bench-eval.sh: evaluation $evaluation, eval_every = $every, seed $s of $seeds"
      run="$work/$evaluation-every$every-s$s"
      launch_ranks "$ranks" "$bin" train --config "$config" --set "seed=$s" \
        --set "train.iterations=$iterations" --set "train.eval_every=$every" \
        --set "train.evaluation=\"$evaluation\"" --out "$run.h5" --quiet --json > "$run.json"
    done
  done
done
source scripts/python-env.sh
python_env
mkdir -p results
"$PYTHON" - "$work" "$seeds" "$iterations" > results/bench-eval.json <<'PY'
import json, sys
import h5py
import numpy as np
work, seeds, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {"config": "configs/paper/isgc-fig12-is-cr.toml", "seeds": seeds, "iterations": iterations,
       "machine_cores": __import__("os").cpu_count(), "cases": {}}
for evaluation, every in [(e, n) for e in ("beside", "deferred") for n in (1, 5, 1000)]:
    durations, stale, in_line, beside, waits, walls = [], [], [], [], [], []
    for s in range(1, seeds + 1):
        run = f"{work}/{evaluation}-every{every}-s{s}"
        with h5py.File(f"{run}.h5", "r") as f:
            durations.append(f["iteration/duration_s"][:])
            stale.append(f["iteration/stale_dropped"][:])
        summary = json.load(open(f"{run}.json"))
        total = lambda *names: sum(e["total_s"] for e in summary["timing"] if e["event"] in names)
        # In line: the master evaluates before it goes on; beside: on its
        # evaluation thread while the run goes on; the master's waits for it.
        in_line.append(total("evaluate", "evaluate train loss"))
        beside.append(total("evaluate (beside)", "evaluate train loss (beside)"))
        waits.append(total("evaluate (wait for beside)"))
        walls.append(summary["wall_s"])
    d = np.concatenate(durations)
    st = np.concatenate(stale)
    out["cases"][f"{evaluation}_eval_every_{every}"] = {
        "mean_duration_s": float(d.mean()),
        "median_duration_s": float(np.median(d)),
        "p90_duration_s": float(np.percentile(d, 90)),
        "per_seed_mean_duration_s": [float(x.mean()) for x in durations],
        "stale_dropped_per_iteration": float(st.mean()),
        "per_seed_stale_dropped": [int(x.sum()) for x in stale],
        "evaluating_in_line_s_per_run": float(np.mean(in_line)),
        "evaluating_beside_s_per_run": float(np.mean(beside)),
        "waiting_for_beside_s_per_run": float(np.mean(waits)),
        "wall_s_per_run": float(np.mean(walls)),
    }
print(json.dumps(out, indent=2))
PY
cat results/bench-eval.json
