#!/usr/bin/env bash
# Test the Slurm batch scripts on a real single-node Slurm: bring it up
# (scripts/slurm-local.sh), submit jobs/train.sbatch and jobs/sweep.sbatch
# through jobs/submit.sh, wait for them, check their outputs, take Slurm down.
# Where Slurm cannot run here it says SKIPPED in capitals and why.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/gradcode
# Always (re)build with the default features: a --no-default-features test
# run leaves a binary without MPI in target/release.
cargo build --release --locked --bin gradcode

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: the Slurm test needs root to install and start slurmctld/slurmd (run scripts/test.sh as root)"
  exit 0
fi
started=0
cleanup() {
  rm -rf "${made[@]:-}" 2>/dev/null || true
  if ((started)); then scripts/slurm-local.sh down >/dev/null; fi
}
made=()
trap cleanup EXIT
if pgrep -x slurmctld >/dev/null; then
  echo "slurm test: using the Slurm already running"
else
  set +e
  scripts/slurm-local.sh up
  status=$?
  set -e
  if [ "$status" -eq 3 ]; then
    echo "SKIPPED: Slurm cannot run on this machine (see the slurm-local message above)"
    exit 0
  elif [ "$status" -ne 0 ]; then
    exit "$status"
  fi
  started=1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

work=$(mktemp -d)
made+=("$work")
cat > "$work/train.toml" <<'TOML'
workers = 4
seed = 5
[scheme]
kind = "gc-cyclic"
load = 2
[straggler]
mode = "measured"
[data]
train_samples = 400
features = 30
[train]
iterations = 25
TOML
printf '# a sweep over two schemes\n%s\n%s --set scheme.kind=uncoded\n' "$work/train.toml" "$work/train.toml" > "$work/runs.txt"

fail() { echo "slurm test FAILED: $*" >&2; exit 1; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# One training run.
id=$(timeout 300 jobs/submit.sh jobs/train.sbatch "$work/train.toml" --set train.iterations=30 -- --wait) || {
  id=${id:-}
  [ -n "$id" ] && cat "results/slurm-gradcode-train-$id.out" >&2
  made+=("results/gradcode-train-$id" "results/slurm-gradcode-train-$id.out")
  fail "train job $id failed"
}
out="results/gradcode-train-$id"
made+=("$out" "results/slurm-gradcode-train-$id.out")
[ -f "$out/config.toml" ] || fail "$out/config.toml missing"
cmp -s "$out/config.toml" "$work/train.toml" || fail "$out/config.toml is not the submitted config"
[ "$(field "$out/summary.json" iterations)" = 30 ] || fail "train job did not run 30 iterations (--set lost?)"
[ "$(field "$out/summary.json" workers)" = 4 ] || fail "train job did not run 4 workers"
"$bin" inspect "$out/trace.h5" --json > "$work/inspect.json" || fail "$out/trace.h5 is not a readable trace"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["iterations"])' "$work/inspect.json")" = 30 ] \
  || fail "$out/trace.h5 does not hold 30 iterations"
echo "slurm test: train job $id ok ($out, trace with 30 iterations)"

# A sweep as a job array.
id=$(timeout 300 jobs/submit.sh jobs/sweep.sbatch "$work/runs.txt" -- --wait) || fail "sweep job failed"
out="results/gradcode-sweep-$id"
made+=("$out" results/slurm-gradcode-sweep-"$id"_*.out)
[ "$(field "$out/0/summary.json" scheme)" = gc-cyclic ] || fail "sweep run 0 is not gc-cyclic"
[ "$(field "$out/1/summary.json" scheme)" = uncoded ] || fail "sweep run 1 is not uncoded"
for task in 0 1; do
  "$bin" inspect "$out/$task/trace.h5" > /dev/null || fail "$out/$task/trace.h5 is not a readable trace"
done
echo "slurm test: sweep job $id ok ($out/0, $out/1)"

# A job whose task count does not match its config fails with a clear line.
if id=$(sbatch --parsable --wait --ntasks=3 jobs/train.sbatch "$work/train.toml"); then
  fail "a job with the wrong --ntasks succeeded"
fi
made+=("results/slurm-gradcode-train-$id.out")
grep -q "needs --ntasks=5" "results/slurm-gradcode-train-$id.out" || fail "wrong --ntasks not reported"
echo "slurm test: wrong --ntasks rejected"
# A cancelled job (Slurm sends SIGTERM to every process, as at the time
# limit) stops gracefully and exits 143 with either launcher: srun returns its
# tasks' 143 itself, mpirun returns 1 and jobs/launch.sh maps it (README,
# "Exit status under a launcher").
sed -e 's/^iterations = 25$/iterations = 1000000/' "$work/train.toml" > "$work/long.toml"
for launcher in srun-pmix mpirun; do
  id=$(GRADCODE_LAUNCHER=$launcher jobs/submit.sh jobs/train.sbatch "$work/long.toml")
  out="results/gradcode-train-$id"
  log="results/slurm-gradcode-train-$id.out"
  made+=("$out" "$log")
  for _ in $(seq 600); do
    [ "$(squeue -h -j "$id" -o %T 2>/dev/null)" = RUNNING ] && [ -s "$out/trace.h5" ] && break
    sleep 0.2
  done
  sleep 3 # some iterations
  scancel "$id"
  for _ in $(seq 300); do
    squeue -h -j "$id" 2>/dev/null | grep -q . || break
    sleep 0.2
  done
  code=$(scontrol show job "$id" | grep -o 'ExitCode=[0-9]*:[0-9]*' || true)
  [ "$code" = "ExitCode=143:0" ] || { cat "$log" >&2; fail "cancelled $launcher job $id: $code, not ExitCode=143:0"; }
  case $launcher in
    srun-pmix) returned=143 ;;
    mpirun) returned=1 ;;
  esac
  grep -q "launch: stopped by SIGTERM (the launcher returned $returned): exit 143" "$log" \
    || { cat "$log" >&2; fail "cancelled $launcher job $id: no launch line with the launcher's $returned"; }
  echo "slurm test: cancelled $launcher job $id exits 143 (the launcher returned $returned)"
done
echo "slurm test: passed"
