#!/usr/bin/env bash
# Where an MLP training step's CPU goes (issue 23), less disturbed by load
# than the wall clock: each rank's user and system CPU (/usr/bin/time) in a
# run of LONG and one of SHORT iterations, differenced so setup and loading
# cancel, per step. K = 4, gc-cyclic load 2, batch 32, f64, Fashion-MNIST,
# as scripts/bench-nn.sh. The line labelled master is the rank with the most
# system time: the master when gathering (it reads the workers' vectors),
# not always when reducing (the workers then read each other's).
# Usage: [AGGREGATE=gather|reduce|auto] scripts/bench-nn-cpu.sh [SHORT LONG]
set -euo pipefail
cd "$(dirname "$0")/.."
short=${1:-20} long=${2:-200} aggregate=${AGGREGATE:-gather}
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --bin gradcode
bin=$PWD/target/release/gradcode
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/mlp.toml" <<TOML
workers = 4
seed = 1
[scheme]
kind = "gc-cyclic"
load = 2
[straggler]
mode = "measured"
[data]
kind = "idx"
set = "fashion-mnist"
train_samples = 8000
test_samples = 500
[model]
kind = "mlp"
[train]
learning_rate = 0.05
batch_size = 32
eval_every = 1000000
TOML
for n in "$short" "$long"; do
  # One line per rank: user and system seconds, sorted by system time.
  mpirun --oversubscribe -n 5 /usr/bin/time -f 'cpu %U %S' "$bin" train --config "$work/mlp.toml" \
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
