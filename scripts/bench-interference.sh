#!/usr/bin/env bash
# Real interference (issue 26, item 4): chosen workers are slowed for real,
# by a CPU quota on their processes, and uncoded, gc-cyclic, gc-dc and is-gc
# train with straggler.mode = "measured" (nothing injected) on the same data
# and the same K, without and with the slowdown. For each it reports the
# measured mean iteration time and the speedup over uncoded, beside the
# prediction of `simulate` for the straggler model that `advise --trace`
# fits to that condition's uncoded trace. Printed as a table and written to
# results/bench-interference.json.
#
# How a worker is slowed (detected, in this order; --method forces one):
#   v1   cgroup v1: a group of its own in the cpu hierarchy
#        (/sys/fs/cgroup/cpu), cpu.cfs_quota_us / cpu.cfs_period_us;
#   v2   cgroup v2: a group under the cgroup2 mount with the cpu controller,
#        cpu.max = "QUOTA PERIOD";
#   hog  neither writable (no root, no cgroups): the worker is pinned to a
#        core with taskset beside a busy loop pinned to the same core (no
#        quota: the worker gets about half of that core).
# Detecting v2 enables the cpu controller for the root's children
# (`+cpu` in its cgroup.subtree_control) when it was not: that stays.
# The slowed ranks join the group before they start: mpirun runs each rank
# through a wrapper that writes its own PID into the group's cgroup.procs
# when OMPI_COMM_WORLD_RANK (PMI_RANK under MPICH) is a slowed worker, then
# execs gradcode; it records the group it landed in, and the bench checks
# that record. The groups (and hogs) are removed on every exit: success,
# failure, Ctrl-C or SIGTERM (trap).
#
# Usage:
#   scripts/bench-interference.sh [--workers K] [--slow N] [--quota PCT]
#       [--period-us P] [--iterations T] [--repeats R] [--samples S]
#       [--features D] [--method auto|v1|v2|hog]
#     K workers (4, 6 or 8, default 4), the last N of them slowed (1..K-2,
#     default 1) to PCT percent of one core (1..100, default 10) per period
#     of P microseconds (1000..1000000, default 10000); T iterations per run
#     (10..100000, default 100); every run repeated R times (1..99, default
#     3), interleaved, the median counted; S training samples (default
#     40000) of D features (default 1000), split into K partitions.
#   scripts/bench-interference.sh --self-test
#     creates a group with a quota, moves a `sleep` into it, reads the quota
#     back, checks that the group is removed by the cleanup, after SIGINT,
#     SIGTERM and a failure, and that nothing is left (says "skipped" and why
#     without root or without a writable cgroup hierarchy); then that the
#     fallback's busy loop is pinned, holds no pipe and ends with its worker.
#     Seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
script=$PWD/scripts/bench-interference.sh

die() { # usage error: one line, exit 2, nothing written
  echo "bench-interference.sh: $*" >&2
  exit 2
}

# ---- the cgroup mechanism -------------------------------------------------

cg_kind="" cg_root="" cg_why=""
cg_groups=() # every group this process made (removed by cleanup)
hog_file=""  # PIDs of the busy loops of hog mode (killed by cleanup)

# Sets cg_kind (v1, v2 or hog), cg_root and cg_why (why not a cgroup).
cg_detect() { # WANTED: auto|v1|v2|hog
  local wanted=$1 probe v2root
  cg_kind="" cg_why=""
  if [ "$(id -u)" -ne 0 ]; then
    cg_why="not root: cgroups are not writable"
  fi
  if [ -z "$cg_why" ] && { [ "$wanted" = auto ] || [ "$wanted" = v1 ]; }; then
    if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
      probe=/sys/fs/cgroup/cpu/gradcode-probe-$$-$RANDOM
      if mkdir "$probe" 2>/dev/null; then
        rmdir "$probe"
        cg_kind=v1 cg_root=/sys/fs/cgroup/cpu
        return 0
      fi
      cg_why="cgroup v1 cpu hierarchy not writable"
    else
      cg_why="no cgroup v1 cpu hierarchy (/sys/fs/cgroup/cpu/cpu.cfs_quota_us)"
    fi
  fi
  if [ "$(id -u)" -eq 0 ] && { [ "$wanted" = auto ] || [ "$wanted" = v2 ]; }; then
    v2root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
    if [ -n "$v2root" ] && grep -qw cpu "$v2root/cgroup.controllers" 2>/dev/null; then
      # A child of the root may take the cpu controller once the root
      # hands it down (the root cgroup is exempt from "no internal processes").
      grep -qw cpu "$v2root/cgroup.subtree_control" ||
        echo +cpu > "$v2root/cgroup.subtree_control" 2>/dev/null || true
      probe=$v2root/gradcode-probe-$$-$RANDOM
      if grep -qw cpu "$v2root/cgroup.subtree_control" && mkdir "$probe" 2>/dev/null; then
        if [ -f "$probe/cpu.max" ]; then
          rmdir "$probe"
          cg_kind=v2 cg_root=$v2root
          return 0
        fi
        rmdir "$probe"
      fi
      cg_why="${cg_why:+$cg_why; }cgroup v2 at $v2root: cannot make a group with cpu.max"
    else
      cg_why="${cg_why:+$cg_why; }no cgroup v2 mount with the cpu controller"
    fi
  fi
  [ "$wanted" = hog ] && cg_why="--method hog"
  case $wanted in
    auto | hog)
      command -v taskset > /dev/null || die "--method: no writable cgroup ($cg_why) and no taskset for the hog fallback"
      cg_kind=hog
      ;;
    *) die "--method = $wanted: not available here ($cg_why)" ;;
  esac
}

# Make a group with QUOTA_US per PERIOD_US; prints its path.
cg_create() { # NAME QUOTA_US PERIOD_US
  local dir=$cg_root/$1
  mkdir "$dir"
  cg_groups+=("$dir")
  if [ "$cg_kind" = v1 ]; then
    # The period first: a quota above the old period is refused otherwise.
    echo "$3" > "$dir/cpu.cfs_period_us"
    echo "$2" > "$dir/cpu.cfs_quota_us"
  else
    echo "$2 $3" > "$dir/cpu.max"
  fi
}

# The quota and the period a group holds now: "QUOTA_US PERIOD_US".
cg_readback() { # DIR
  if [ "$cg_kind" = v1 ]; then
    echo "$(cat "$1/cpu.cfs_quota_us") $(cat "$1/cpu.cfs_period_us")"
  else
    cat "$1/cpu.max"
  fi
}

# Remove a group: whatever is still in it goes back to the root group first
# (a group with processes cannot be removed); a process that is exiting may
# linger for a moment, so retry for up to a second.
cg_remove() { # DIR
  local dir=$1 pid _
  [ -d "$dir" ] || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    while read -r pid; do
      echo "$pid" > "$cg_root/cgroup.procs" 2>/dev/null || true
    done < "$dir/cgroup.procs"
    rmdir "$dir" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench-interference.sh: could not remove $dir" >&2
  return 1
}

# Kill the busy loops of hog mode, by the PIDs they recorded.
hogs_stop() {
  local pid
  [ -n "$hog_file" ] && [ -f "$hog_file" ] || return 0
  while read -r pid; do
    kill "$pid" 2>/dev/null || true
  done < "$hog_file"
  : > "$hog_file"
}

cleanup() {
  local status=$? dir left=0
  trap - EXIT INT TERM
  hogs_stop
  for dir in "${cg_groups[@]+"${cg_groups[@]}"}"; do
    cg_remove "$dir" || left=1
  done
  [ -n "${work:-}" ] && rm -rf "$work"
  [ "$left" -eq 0 ] || exit 1
  exit "$status"
}

# Exit through cleanup on every path; the status says what happened.
arm_cleanup() {
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Every rank runs through this wrapper: a slowed worker joins the group (or
# gets its hog) before gradcode starts, and records where it landed.
write_wrapper() { # FILE
  cat > "$1" << 'SH'
#!/usr/bin/env bash
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}
if [ -n "$BI_SLOW" ] && [[ " $BI_SLOW " == *" $rank "* ]]; then
  if [ "$BI_KIND" = hog ]; then
    cpu=$(( rank % $(nproc) ))
    # Busy while this process (gradcode after the exec) lives; no pipe of
    # mpirun's held open (mpirun waits for their end).
    taskset -c "$cpu" sh -c "while kill -0 $$ 2>/dev/null; do :; done" < /dev/null > /dev/null 2>&1 &
    echo $! >> "$BI_HOGS"
    echo "rank $rank $$ hog-cpu-$cpu" >> "$BI_RECORD"
    exec taskset -c "$cpu" "$@"
  fi
  echo $$ > "$BI_GROUP/cgroup.procs"
  echo "rank $rank $$ $(tr '\n' ' ' < /proc/self/cgroup)" >> "$BI_RECORD"
fi
exec "$@"
SH
  chmod +x "$1"
}

# ---- self-test ------------------------------------------------------------

# --hold NAME MODE: make group NAME, put a sleep in it, say so, then wait
# for a signal (MODE signal) or fail (MODE fail). The self-test's child.
hold() {
  local name=$1 mode=$2 sleeper
  cg_detect auto
  arm_cleanup
  cg_create "$name" 10000 100000
  sleep 60 &
  sleeper=$!
  echo "$sleeper" > "$cg_root/$name/cgroup.procs"
  echo "$cg_root/$name $sleeper"
  if [ "$mode" = fail ]; then
    false # set -e: a failure while the group holds a process
  fi
  wait "$sleeper"
}

# The fallback's busy loop, started by the wrapper as a slowed rank 1 that
# runs `sleep 0.5`: it must be pinned, hold no pipe of the launcher's (mpirun
# waits for their end) and end with its worker.
hog_test() {
  local pid fd worker _
  if ! command -v taskset > /dev/null; then
    echo "hog fallback skipped: no taskset"
    return 0
  fi
  write_wrapper "$work/rank.sh"
  : > "$work/hogs"
  : > "$work/record"
  BI_SLOW=1 BI_KIND=hog BI_GROUP="" BI_HOGS=$work/hogs BI_RECORD=$work/record OMPI_COMM_WORLD_RANK=1 \
    "$work/rank.sh" sleep 0.5 > "$work/hog-out" 2>&1 &
  worker=$!
  for _ in $(seq 40); do
    [ -s "$work/hogs" ] && break
    sleep 0.02
  done
  pid=$(head -1 "$work/hogs")
  [ -n "$pid" ] || { echo "self-test failed: the wrapper started no busy loop" >&2; return 1; }
  grep -q "^rank 1 [0-9]* hog-cpu-1\$" "$work/record" || { echo "self-test failed: record '$(cat "$work/record")'" >&2; return 1; }
  # $! is known as soon as the shell forks, before the child has applied
  # its redirections and exec'd taskset: give it up to a second to get there.
  local held=""
  for _ in $(seq 50); do
    held=""
    for fd in 0 1 2; do
      [ "$(readlink "/proc/$pid/fd/$fd")" = /dev/null ] || held="$held fd $fd = $(readlink "/proc/$pid/fd/$fd")"
    done
    [ -z "$held" ] && [ "$(taskset -pc "$pid" | sed 's/.*: //')" = 1 ] && break
    sleep 0.02
  done
  [ -z "$held" ] || { echo "self-test failed: busy loop $pid holds$held" >&2; return 1; }
  [ "$(taskset -pc "$pid" | sed 's/.*: //')" = 1 ] ||
    { echo "self-test failed: busy loop $pid not pinned to CPU 1: $(taskset -pc "$pid")" >&2; return 1; }
  # The slowed rank's own status (set -e would end the self-test without a
  # word; CI once saw exit 1 here and nothing else).
  local status=0
  wait "$worker" || status=$?
  [ "$status" -eq 0 ] ||
    { echo "self-test failed: the slowed rank (taskset -c 1 sleep 0.5) exited $status: $(tr '\n' ' ' < "$work/hog-out")" >&2; return 1; }
  # Running: it exists and is no zombie (init reaps an orphan when it can).
  running() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2> /dev/null; }
  for _ in $(seq 100); do
    running "$pid" || break
    sleep 0.02
  done
  if running "$pid"; then
    kill "$pid"
    echo "self-test failed: busy loop $pid outlived its worker" >&2
    return 1
  fi
  echo "hog fallback passed: busy loop $pid pinned to CPU 1, no pipe held, ended with its worker"
}

self_test() {
  local name dir pid back mode child status line sleeper
  arm_cleanup
  work=$(mktemp -d)
  cg_detect auto
  if [ "$cg_kind" = hog ]; then
    echo "skipped: no writable cgroup ($cg_why); the bench would use its taskset fallback"
    hog_test
    return 0
  fi
  local checked=()
  # 1. a quota is set, read back, and applies to the process moved in.
  name=gradcode-selftest-$$-$RANDOM
  dir=$cg_root/$name
  cg_create "$name" 2500 10000
  back=$(cg_readback "$dir")
  [ "$back" = "2500 10000" ] || { echo "self-test failed: $dir holds quota/period '$back', not '2500 10000'" >&2; return 1; }
  sleep 60 &
  pid=$!
  echo "$pid" > "$dir/cgroup.procs"
  grep -q "/$name\$" "/proc/$pid/cgroup" || { echo "self-test failed: sleep $pid is not in $dir: $(cat "/proc/$pid/cgroup")" >&2; return 1; }
  cg_remove "$dir"
  [ ! -e "$dir" ] || { echo "self-test failed: $dir left after cleanup" >&2; return 1; }
  grep -q "/$name\$" "/proc/$pid/cgroup" && { echo "self-test failed: sleep $pid still claims $name" >&2; return 1; }
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  checked+=("$dir")
  # 2. a bench interrupted (SIGINT, SIGTERM) or failing removes its group.
  for mode in INT TERM fail; do
    name=gradcode-selftest-$$-$RANDOM
    # Job control on: a background job then keeps SIGINT (bash ignores it
    # in background jobs of a script otherwise). env resets SIGINT and
    # SIGTERM to their defaults: a shell that found a signal ignored when it
    # started (this test run from a background job, `nohup cmd &`) can
    # neither trap it nor undo the ignore, and the child would sleep on.
    set -m
    env --default-signal=INT,TERM bash "$script" --hold "$name" "$( [ "$mode" = fail ] && echo fail || echo signal )" > "$work/hold-$mode" 2>&1 &
    child=$!
    set +m
    for _ in $(seq 100); do
      [ -s "$work/hold-$mode" ] && break
      sleep 0.05
    done
    read -r line sleeper < "$work/hold-$mode" || { echo "self-test failed: the $mode child said nothing" >&2; return 1; }
    [ "$line" = "$cg_root/$name" ] || { echo "self-test failed: the $mode child said '$line'" >&2; return 1; }
    [ "$mode" = fail ] || kill "-$mode" "$child"
    status=0
    wait "$child" || status=$?
    case $mode in INT) want=130 ;; TERM) want=143 ;; fail) want=1 ;; esac
    [ "$status" -eq "$want" ] || { echo "self-test failed: the $mode child exited $status, not $want: $(cat "$work/hold-$mode")" >&2; return 1; }
    [ ! -e "$cg_root/$name" ] || { echo "self-test failed: $cg_root/$name left after $mode" >&2; return 1; }
    # Its sleep was moved out before the group went; end it here.
    kill "$sleeper" 2>/dev/null || true
    checked+=("$cg_root/$name")
  done
  # 3. nothing of this self-test is left.
  local leftover
  leftover=$(find "$cg_root" -maxdepth 1 -name "gradcode-selftest-$$-*")
  [ -z "$leftover" ] || { echo "self-test failed: left $leftover" >&2; return 1; }
  echo "self-test passed (cgroup $cg_kind at $cg_root): quota 2500/10000 us read back, sleep $pid moved in and out;" \
    "removed after cleanup, SIGINT (exit 130), SIGTERM (exit 143) and a failure (exit 1)"
  echo "groups: ${checked[*]}"
  hog_test
}

# ---- the arguments --------------------------------------------------------

workers=4 slow=1 quota_pct=10 period_us=10000 iterations=100 repeats=3 samples=40000 features=1000 method=auto
int_in() { # FLAG VALUE LOW HIGH
  [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] ||
    die "$1 = '$2': must be an integer in $3..$4"
}
case ${1:-} in
  --self-test)
    [ $# -eq 1 ] || die "--self-test takes no other argument"
    self_test
    exit 0
    ;;
  --hold)
    [ $# -eq 3 ] || die "--hold takes NAME and MODE"
    hold "$2" "$3"
    exit 0
    ;;
esac
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1: needs a value"
  case $1 in
    --workers) workers=$2 ;;
    --slow) slow=$2 ;;
    --quota) quota_pct=$2 ;;
    --period-us) period_us=$2 ;;
    --iterations) iterations=$2 ;;
    --samples) samples=$2 ;;
    --features) features=$2 ;;
    --method) method=$2 ;;
    --repeats) repeats=$2 ;;
    *) die "$1: unknown argument (see the usage at the top of the script)" ;;
  esac
  shift 2
done
int_in --workers "$workers" 4 8
[ $((workers % 2)) -eq 0 ] || die "--workers = $workers: must be even (gc-dc runs with 2 clusters)"
int_in --slow "$slow" 1 $((workers - 2))
int_in --quota "$quota_pct" 1 100
int_in --period-us "$period_us" 1000 1000000
int_in --iterations "$iterations" 10 100000
int_in --repeats "$repeats" 1 99
int_in --features "$features" 1 100000
int_in --samples "$samples" "$workers" 10000000
[ $((samples / workers * features)) -le 100000000 ] ||
  die "--samples = $samples: with --features $features a partition would exceed 10^8 values (800 MB)"
case $method in auto | v1 | v2 | hog) ;; *) die "--method = '$method': must be auto, v1, v2 or hog" ;; esac
cg_detect "$method"
# Validation ends here: nothing was written before.

source scripts/lib.sh
build_release
mpi_env
arm_cleanup
work=$(mktemp -d)
mkdir -p results
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The slowed workers: the last N (ranks K-N+1..K).
slowed=$(seq $((workers - slow + 1)) "$workers" | tr '\n' ' ')
quota_us=$((period_us * quota_pct / 100))
group=""
if [ "$cg_kind" != hog ]; then
  group=gradcode-interference-$$-$RANDOM
  cg_create "$group" "$quota_us" "$period_us"
  [ "$(cg_readback "$cg_root/$group")" = "$quota_us $period_us" ] ||
    { echo "bench-interference.sh: $cg_root/$group holds '$(cg_readback "$cg_root/$group")', not '$quota_us $period_us'" >&2; exit 1; }
  how="cgroup $cg_kind ($cg_root/$group): $quota_pct% of a core ($quota_us us per $period_us us)"
else
  hog_file=$work/hogs
  : > "$hog_file"
  how="taskset: each slowed worker pinned beside a busy loop on its core (no writable cgroup: $cg_why)"
fi

write_wrapper "$work/rank.sh"

# configs/bench/interference.toml with the options' sizes.
config=(--config "$(bench_config interference)" --set "workers=$workers" --set "scheme.wait_for=$((workers - slow))"
        --set "data.train_samples=$samples" --set "data.features=$features" --set "train.iterations=$iterations"
        --set "simulate.iterations=$iterations")
schemes=(uncoded gc-cyclic gc-dc is-gc)

# One training run: CONDITION SCHEME NAME [--set ...]; writes NAME.{h5,json}.
train() {
  local cond=$1 scheme=$2 name=$work/$3 rank
  shift 3
  : > "$work/record"
  BI_SLOW=$([ "$cond" = slowed ] && echo "$slowed" || echo "") BI_KIND=$cg_kind \
    BI_GROUP=$cg_root/$group BI_HOGS=$hog_file BI_RECORD=$work/record \
    launch_ranks $((workers + 1)) "$work/rank.sh" "$bin" train "${config[@]}" \
    --set "scheme.kind=$scheme" "$@" --out "$name.h5" --force --json --quiet > "$name.json" 2> "$name.err" ||
    { echo "bench-interference.sh: training $scheme ($cond) failed:" >&2; cat "$name.err" >&2; exit 1; }
  hogs_stop
  if [ "$cond" = slowed ]; then
    for rank in $slowed; do
      grep -qE "^rank $rank [0-9]+ .*(/$group( |\$)|hog-cpu)" "$work/record" ||
        { echo "bench-interference.sh: worker $rank was not slowed: $(cat "$work/record")" >&2; exit 1; }
    done
  else
    [ ! -s "$work/record" ] || { echo "bench-interference.sh: a worker was slowed in the idle runs" >&2; exit 1; }
  fi
}

# The model time unit: the median time of one partition computation in an
# idle uncoded run, so that a measured rate is 1 for a typical worker and a
# worker straggles (rate below straggler.rate_threshold = 0.5, gc-dc's
# scheme.straggler_threshold = 0.5) at twice that time.
echo "calibrating the model time unit (idle uncoded run) ..." >&2
train calibrate uncoded calibrate
"$bin" inspect "$work/calibrate.h5" --replay-csv "$work/calibrate.csv" > /dev/null
unit_ms=$(python3 -c '
import statistics, sys
rows = [list(map(float, l.split(","))) for l in open(sys.argv[1]).read().split()[1:]]
print(round(statistics.median(v for r in rows for v in r) * 10.0, 3))' "$work/calibrate.csv")
unit=(--set "straggler.time_unit_ms=$unit_ms")

# Every scheme under both conditions, --repeats times, interleaved so that
# the load of other jobs falls on all of them alike; the median run counts.
for r in $(seq "$repeats"); do
  for cond in idle slowed; do
    for scheme in "${schemes[@]}"; do
      echo "training $scheme, $cond (run $r of $repeats) ..." >&2
      train "$cond" "$scheme" "$cond-$scheme-$r" "${unit[@]}"
    done
  done
done
for cond in idle slowed; do
  # The prediction: the model advise fits to this condition's median
  # uncoded trace, simulated for every scheme on common random numbers.
  median_run=$(python3 -c '
import json, sys
runs = sorted((json.load(open(f"{sys.argv[1]}-{r}.json"))["mean_iteration_s"], r) for r in range(1, int(sys.argv[2]) + 1))
print(runs[(len(runs) - 1) // 2][1])' "$work/$cond-uncoded" "$repeats")
  echo "$median_run" > "$work/fit-run-$cond"
  "$bin" advise "${config[@]}" "${unit[@]}" --trace "$work/$cond-uncoded-$median_run.h5" \
    --schemes uncoded --json > "$work/advise-$cond.json"
  fitted=()
  while read -r setting; do fitted+=(--set "$setting"); done < <(json "$work/advise-$cond.json" \
    '"\n".join(["straggler.model=\"%s\"" % d["straggler"]["model"]] + ["straggler.%s=%s" % (k, int(v) if k == "initial_stragglers" else repr(float(v))) for k, v in d["straggler"]["set"].items()])')
  "$bin" simulate "${config[@]}" "${unit[@]}" "${fitted[@]}" \
    --set 'simulate.compare=["uncoded", "gc-cyclic", "gc-dc", "is-gc"]' --set 'simulate.baseline="uncoded"' \
    --json > "$work/simulate-$cond.json"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work" "$unit_ms" "$how" "$cg_kind" "$workers" "$slowed" "$quota_pct" "$period_us" \
  "$iterations" "$samples" "$features" "$load_before" "$load_after" "$(nproc)" "$repeats" "${schemes[@]}" << 'PY'
import datetime, json, sys
a = sys.argv[1:]
work, unit_ms, how, kind = a[0], float(a[1]), a[2], a[3]
workers, slowed = int(a[4]), [int(w) for w in a[5].split()]
quota_pct, period_us, iterations, samples, features = map(int, a[6:11])
load_before, load_after, cores, repeats, schemes = a[11], a[12], int(a[13]), int(a[14]), a[15:]
out = {
    "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "cores": cores, "load_average_before": load_before, "load_average_after": load_after,
    "method": kind, "slowdown": how, "workers": workers, "slowed_workers": slowed,
    "quota_percent": quota_pct if kind != "hog" else None, "period_us": period_us if kind != "hog" else None,
    "iterations": iterations, "repeats": repeats, "train_samples": samples, "features": features,
    "settings": {"load": 2, "clusters": 2, "wait_for": workers - len(slowed)},
    "time_unit_ms": unit_ms, "conditions": {},
}
for cond in ("idle", "slowed"):
    advise = json.load(open(f"{work}/advise-{cond}.json"))
    sim = {s["name"]: s for s in json.load(open(f"{work}/simulate-{cond}.json"))["schemes"]}
    every = {s: sorted((json.load(open(f"{work}/{cond}-{s}-{r}.json")) for r in range(1, repeats + 1)),
                       key=lambda d: d["mean_iteration_s"]) for s in schemes}
    runs = {s: every[s][(repeats - 1) // 2] for s in schemes}
    base = runs["uncoded"]["mean_iteration_s"]
    pbase = sim["uncoded"]["mean_iteration_time"] * unit_ms / 1000
    rows = []
    for s in schemes:
        m = runs[s]["mean_iteration_s"]
        p = sim[s]["mean_iteration_time"] * unit_ms / 1000
        rows.append({"scheme": s, "measured_mean_iteration_s": m, "measured_speedup": base / m,
                     "measured_runs_s": [d["mean_iteration_s"] for d in every[s]],
                     "measured_recovered_fraction": runs[s]["mean_recovered_fraction"],
                     "predicted_mean_iteration_s": p, "predicted_speedup": pbase / p,
                     "predicted_recovered_fraction": sim[s]["recovered_fraction"],
                     "prediction_error_percent": 100 * (p - m) / m})
    fit_run = int(open(f"{work}/fit-run-{cond}").read())
    out["conditions"][cond] = {"fitted_to_uncoded_run": fit_run, "fitted_model": advise["straggler"]["model"],
                               "fitted_set": advise["straggler"]["set"], "schemes": rows}
json.dump(out, open("results/bench-interference.json", "w"), indent=2)
print(f"K = {workers} workers, {samples} x {features} linear regression, {iterations} iterations per run, "
      f"median of {repeats} runs, "
      f"straggler.mode = measured, model time unit {unit_ms} ms (idle median computation)")
print(f"slowed workers {' '.join(map(str, slowed))}: {how}")
print(f"load average before {load_before}, after {load_after} ({cores} cores, shared with other jobs)")
for cond, c in out["conditions"].items():
    fit = ", ".join(f"{k} = {v:.4g}" for k, v in c["fitted_set"].items())
    print(f"\n{cond}: simulate predicts from {c['fitted_model']} ({fit}), fitted by advise --trace to the uncoded run")
    print(f"  {'scheme':<10} {'measured s':>11} {'speedup':>8} {'recovered':>9}   {'predicted s':>11} {'speedup':>8} {'error':>7}")
    for r in c["schemes"]:
        print(f"  {r['scheme']:<10} {r['measured_mean_iteration_s']:>11.4f} {r['measured_speedup']:>7.2f}x "
              f"{r['measured_recovered_fraction']:>9.3f}   {r['predicted_mean_iteration_s']:>11.4f} "
              f"{r['predicted_speedup']:>7.2f}x {r['prediction_error_percent']:>+6.1f}%")
print("\nspeedup: uncoded's mean iteration time over the scheme's; error: predicted against measured;"
      " settings: load 2 (gc-cyclic, gc-dc, is-gc), 2 clusters (gc-dc), wait_for K - slowed (is-gc)")
print("written to results/bench-interference.json")
PY
