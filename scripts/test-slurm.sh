#!/usr/bin/env bash
# Test the Slurm batch scripts on a real single-node Slurm: bring it up
# (scripts/slurm-local.sh), submit jobs/train.sbatch and jobs/sweep.sbatch
# through jobs/submit.sh, wait for them, check their outputs, take Slurm down.
# Where Slurm cannot run here it says SKIPPED in capitals and why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
# Always (re)build with the default features (unless GRADCODE names a
# binary): a --no-default-features test run leaves a binary without MPI in
# target/release.
build_release

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
  conf_before=$(sha256sum /etc/slurm/slurm.conf 2>/dev/null || echo none)
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
mpi_env

work=$(mktemp -d)
made+=("$work")
cp "$(bench_config slurm-train)" "$work/train.toml"
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
if id=$(sbatch --parsable --wait --ntasks=3 --output="results/slurm-%x-%j.out" jobs/train.sbatch "$work/train.toml"); then
  fail "a job with the wrong --ntasks succeeded"
fi
made+=("results/slurm-gradcode-train-$id.out")
grep -q "needs --ntasks=5" "results/slurm-gradcode-train-$id.out" || fail "wrong --ntasks not reported"
echo "slurm test: wrong --ntasks rejected"
# Submitted from a folder outside the repository, with relative paths: the
# config, a runs file whose line quotes a value with spaces, and the results
# under that folder.
repo=$PWD
outside=$(mktemp -d)
made+=("$outside")
cp "$work/train.toml" "$outside/mine.toml"
printf '%s\n' "mine.toml --set 'scheme.kind = \"uncoded\"' --set train.iterations=12" > "$outside/runs.txt"
# The site hook: what `module load` would set up (here OpenMPI's root permission, lost under --export=NONE).
printf 'echo "site setup: ran in $PWD"\nexport OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n' > "$outside/site.sh"
id=$(cd "$outside" && GRADCODE_SITE_SETUP=site.sh timeout 300 "$repo/jobs/submit.sh" "$repo/jobs/train.sbatch" mine.toml --set train.iterations=20 -- --wait --export=NONE) \
  || { cat "$outside"/results/slurm-*.out >&2 || true; fail "train job submitted from $outside failed"; }
out="$outside/results/gradcode-train-$id"
[ "$(field "$out/summary.json" status)" = completed ] || fail "$out/summary.json: not completed"
[ "$(field "$out/summary.json" iterations)" = 20 ] || fail "$out/summary.json: not 20 iterations"
grep -q "^site setup: ran in $outside" "$outside/results/slurm-gradcode-train-$id.out" \
  || fail "the site hook did not run (under --export=NONE)"
grep -q "^iteration 10/20" "$outside/results/slurm-gradcode-train-$id.out" \
  || fail "the job log has no progress lines"
grep -q "^launch: \(srun-pmix\|mpirun\) " "$outside/results/slurm-gradcode-train-$id.out" \
  || fail "the job log does not name its launcher"
id=$(cd "$outside" && timeout 300 "$repo/jobs/submit.sh" "$repo/jobs/sweep.sbatch" runs.txt -- --wait) \
  || { cat "$outside"/results/slurm-*.out >&2 || true; fail "sweep submitted from $outside failed"; }
out="$outside/results/gradcode-sweep-$id/0"
[ "$(field "$out/summary.json" scheme)" = uncoded ] || fail "the quoted --set of the runs line was lost"
[ "$(field "$out/summary.json" iterations)" = 12 ] || fail "the runs line's second --set was lost"
echo "slurm test: jobs submitted from $outside with relative paths ok"

# The launcher: PMI-2 is chosen only when the MPI library has a PMI-2 client
# (Debian's OpenMPI has none: srun --mpi=pmi2 dies in MPI_Init), else mpirun.
fake=$(mktemp -d)
made+=("$fake")
printf '#!/bin/sh\necho "MPI plugin types are..."\necho "	none"\necho "	pmi2"\n' > "$fake/srun"
chmod +x "$fake/srun"
only_pmi2=$(PATH="$fake:$PATH" bash -c 'source jobs/launch.sh; choose_launcher "$1"' _ "$bin")
choice=$only_pmi2
if ompi_info --parsable | grep '^mca:pmix:s2:' >/dev/null; then
  [ "${choice%% *}" = srun-pmi2 ] || fail "Slurm and OpenMPI both have PMI-2, yet: $choice"
else
  [ "${choice%% *}" = mpirun ] || fail "PMI-2 chosen for an OpenMPI without a PMI-2 client: $choice"
fi
choice=$(bash -c 'source jobs/launch.sh; choose_launcher "$1"' _ "$bin")
[ "${choice%% *}" != srun-pmi2 ] || ompi_info --parsable | grep '^mca:pmix:s2:' >/dev/null \
  || fail "srun-pmi2 chosen here: $choice"
echo "slurm test: launcher choice ok (here: $choice; with only pmi2 in Slurm: $only_pmi2)"

# A failed job says so: in its summary and in its trace.
sed -e 's/^iterations = 25$/iterations = 400\nlearning_rate = 60.0/' "$work/train.toml" > "$work/diverge.toml"
if id=$(timeout 300 jobs/submit.sh jobs/train.sbatch "$work/diverge.toml" -- --wait); then
  fail "a diverging job succeeded"
fi
out="results/gradcode-train-$id"
made+=("$out" "results/slurm-gradcode-train-$id.out")
[ "$(field "$out/summary.json" status)" = failed ] || fail "$out/summary.json does not say failed"
"$bin" inspect "$out/trace.h5" | head -3 | grep "status *failed" >/dev/null || fail "$out/trace.h5 does not say failed"
sed -e 's|^\[data\]$|[data]\npath = "/nonexistent/train.csv"|' "$work/train.toml" > "$work/nodata.toml"
if id=$(timeout 300 jobs/submit.sh jobs/train.sbatch "$work/nodata.toml" -- --wait 2>/dev/null); then
  fail "a job without its data file succeeded"
fi
echo "slurm test: a diverging job's summary and trace say failed"

# Killed by its time limit (SIGTERM before the limit, from --signal), then
# resumed with submit.sh --resume: the θ of an uninterrupted run.
cp "$(bench_config slurm-limit)" "$work/limit.toml"
id=$(timeout 400 jobs/submit.sh jobs/train.sbatch "$work/limit.toml" -- --time=1 --signal=TERM@30 --wait) \
  && fail "the time-limited job completed 100000 iterations"
out="results/gradcode-train-$id"
made+=("$out" "results/slurm-gradcode-train-$id.out")
[ "$(field "$out/summary.json" status)" = interrupted ] || { cat "results/slurm-gradcode-train-$id.out" >&2; fail "$out/summary.json does not say interrupted"; }
done_iterations=$(field "$out/summary.json" iterations)
total=$((done_iterations + 30))
id2=$(timeout 300 jobs/submit.sh jobs/train.sbatch --resume "$out/trace.h5" --set "train.iterations=$total" -- --wait) \
  || { cat "results/slurm-gradcode-train-$id2.out" >&2; fail "the resumed job failed"; }
made+=("results/slurm-gradcode-train-$id2.out")
[ "$(field "$out/summary.json" status)" = completed ] || fail "the resumed run did not complete"
[ "$(field "$out/summary.json" iterations)" = "$total" ] || fail "the resumed run did not reach $total"
[ "$(field "$out/summary.json" resumed_at)" = "$done_iterations" ] || fail "the resumed run is not marked"
launch_ranks 7 "$bin" train --config "$work/limit.toml" --set "train.iterations=$total" \
  --out "$work/whole.h5" --json --quiet > "$work/whole.json"
python3 - "$out/summary.json" "$work/whole.json" <<'PY' || fail "the resumed θ differs from the uninterrupted run's"
import json, sys
a, b = (json.load(open(p))["theta"] for p in sys.argv[1:])
err = max(abs(x - y) for x, y in zip(a, b)) / max(max(abs(y) for y in b), 1e-300)
print(f"slurm test: resumed θ vs uninterrupted: relative difference {err:.1e}")
sys.exit(0 if len(a) == len(b) and err <= 1e-9 else 1)
PY
echo "slurm test: a job stopped by its time limit after $done_iterations iterations resumed to the uninterrupted θ"

# Requeued (as after preemption): the job finds its own trace and continues it.
id=$(jobs/submit.sh jobs/train.sbatch "$work/limit.toml" --set train.iterations=300 -- --requeue --open-mode=append)
out="results/gradcode-train-$id"
log="results/slurm-gradcode-train-$id.out"
made+=("$out" "$log")
for _ in $(seq 600); do
  grep -q "^iteration 100/300" "$log" 2>/dev/null && break
  sleep 0.2
done
scontrol requeue "$id"
for _ in $(seq 1500); do
  scontrol show job "$id" 2>/dev/null | grep "JobState=COMPLETED" >/dev/null && break
  scontrol show job "$id" 2>/dev/null | grep "JobState=FAILED" >/dev/null && break
  sleep 0.2
done
grep -q "requeued (restart 1): continuing" "$log" || { cat "$log" >&2; fail "the requeued job did not continue its trace"; }
[ "$(field "$out/summary.json" status)" = completed ] || { cat "$log" >&2; fail "the requeued job did not complete"; }
[ "$(field "$out/summary.json" iterations)" = 300 ] || fail "the requeued job did not reach 300 iterations"
echo "slurm test: requeued job $id continued its trace from iteration $(field "$out/summary.json" resumed_at)"

# A cancelled job (Slurm sends SIGTERM to every process, as at the time
# limit) stops gracefully and exits 143 with either launcher: srun returns its
# tasks' 143 itself, mpirun returns 1 and jobs/launch.sh maps it (docs/reliability.md,
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
    squeue -h -j "$id" 2>/dev/null | grep . >/dev/null || break
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
if ((started)); then
  scripts/slurm-local.sh down
  started=0
  [ "$(sha256sum /etc/slurm/slurm.conf 2>/dev/null || echo none)" = "$conf_before" ] \
    || fail "slurm-local.sh down did not restore /etc/slurm/slurm.conf"
  echo "slurm test: slurm-local.sh down restored the slurm.conf found before up"
fi
echo "slurm test: passed"
