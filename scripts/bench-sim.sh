#!/usr/bin/env bash
# Time the Monte Carlo simulator through the CLI on the nine configs of 000 §VI
# (configs/paper/gcdc-fig*.toml: 30 trials x 400 iterations of GC, GC-SC, GC-DC
# and the lower bound), pinned to one core with taskset when it is there.
# Prints per config and in total the CPU time
# (user + system, the number to compare with the 2 s goal on one core; wall
# time on a shared machine also counts waiting) and worker-iterations per
# second (trials x iterations x K x schemes per CPU second). Then the cost of
# an approximate code's optimal (least-squares) decode per iteration at
# K = 50, 256 and 1024 (issue 41): agc-expander (degree 5) and agc-bgc
# (load 6), the fastest 90% of the workers, 200 iterations, timed with
# decoder = "optimal" and "one-step"; the decode's cost is the difference of
# the two CPU times over the iterations (one-step's weights cost O(|S|)).
#
#   scripts/bench-sim.sh            build target/release/gradcode (or use $GRADCODE), then time
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
build_release
pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c 0); fi
total_cpu=0
total_wi=0
printf '%-22s %8s %8s %14s %14s\n' config cpu_s wall_s worker_iter per_cpu_s
for f in configs/paper/gcdc-fig*.toml; do
  tmp=$(mktemp)
  times=$(mktemp)
  # bash's own `time` (no GNU time needed): user, system, wall seconds.
  TIMEFORMAT='%3U %3S %3R'
  { time "${pin[@]}" "$bin" simulate --config "$f" >/dev/null 2>"$tmp"; } 2>"$times"
  read -r user sys wall <"$times"
  wi=$(grep -o 'simulated [0-9]* worker-iterations' "$tmp" | awk '{print $2}')
  rm -f "$tmp" "$times"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.3f", u + s}')
  rate=$(awk -v w="$wi" -v c="$cpu" 'BEGIN{ if (c > 0) printf "%.3g", w / c; else print "inf" }')
  printf '%-22s %8s %8s %14s %14s\n' "$(basename "$f" .toml)" "$cpu" "$wall" "$wi" "$rate"
  total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN{printf "%.3f", a + b}')
  total_wi=$((total_wi + wi))
done
rate=$(awk -v w="$total_wi" -v c="$total_cpu" 'BEGIN{ if (c > 0) printf "%.3g", w / c; else print "inf" }')
printf '%-22s %8s %8s %14s %14s\n' total "$total_cpu" - "$total_wi" "$rate"
awk -v c="$total_cpu" 'BEGIN{ exit !(c < 2.0) }' && echo "goal met: under 2 s of CPU" || echo "goal missed: 2 s of CPU or more"

echo
echo "optimal decode per iteration (agc-error.toml, the fastest 90%, 200 iterations)"
printf '%-14s %6s %14s %14s %18s\n' kind K optimal_cpu_s one_step_cpu_s decode_ms_per_iter
iterations=200
for kind in agc-expander agc-bgc; do
  case $kind in
    agc-expander) keys=(--set scheme.degree=5) ;;
    agc-bgc) keys=(--set scheme.load=6) ;;
  esac
  for k in 50 256 1024; do
    cpu=()
    for decoder in optimal one-step; do
      times=$(mktemp)
      TIMEFORMAT='%3U %3S'
      { time "${pin[@]}" "$bin" simulate --config configs/paper/agc-error.toml \
          --set "scheme.kind=\"$kind\"" "${keys[@]}" --set "workers=$k" \
          --set "scheme.wait_for=$((k * 9 / 10))" --set "scheme.decoder=\"$decoder\"" \
          --set simulate.trials=1 --set "simulate.iterations=$iterations" >/dev/null 2>&1; } 2>"$times"
      read -r user sys <"$times"
      rm -f "$times"
      cpu+=("$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.3f", u + s}')")
    done
    per=$(awk -v a="${cpu[0]}" -v b="${cpu[1]}" -v n="$iterations" 'BEGIN{printf "%.3f", (a - b) * 1000 / n}')
    printf '%-14s %6s %14s %14s %18s\n' "$kind" "$k" "${cpu[0]}" "${cpu[1]}" "$per"
  done
done
