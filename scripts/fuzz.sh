#!/usr/bin/env bash
# Fuzz the input parsers for a while (issue 8, item 5): the config parser with
# --set overrides and the scheme constructors, the LIBSVM / CSV data loaders,
# the straggler trace CSV loader, the HDF5 trace reader on truncated and
# corrupted traces (hdf5_trace), and the HDF5 trace reader on hostile
# structures generated from the fuzz bytes (hdf5_structure: datasets claiming
# far more than the file holds, cluster ids up to 2^63 - 1, groups linked into
# themselves, soft and external links, deep nesting; tests/fuzz_support/hostile.rs).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS (default 600) is the total, split evenly over the targets (default
# all five: config data_file trace_csv hdf5_trace hdf5_structure). With cargo-fuzz installed
# (`cargo install cargo-fuzz`; it works on the stable toolchain with
# `--sanitizer none`) the targets in fuzz/ run under libFuzzer, coverage
# guided, with overflow checks on and a memory limit: any panic, abort,
# allocation over MALLOC_MB (default 1024) or input taking over 10 s is a
# finding, saved under fuzz/artifacts/<target>/. The corpus grows in
# fuzz/corpus/<target>/, seeded from fuzz/seeds/<target>/. Without
# cargo-fuzz, the property tests of tests/fuzz_inputs.rs run with many
# cases instead, until the time is up.
#
# Prints one line per target: executions, corpus size, peak RSS, findings.
# Exits 1 when anything was found.
set -uo pipefail
cd "$(dirname "$0")/.."

total=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config data_file trace_csv hdf5_trace hdf5_structure)
per=$(( total / ${#targets[@]} ))
malloc_mb=${MALLOC_MB:-1024}
logs=fuzz/target/logs
mkdir -p "$logs"

if cargo fuzz --version >/dev/null 2>&1; then
  echo "== building the fuzz targets (cargo fuzz, libFuzzer, overflow checks on)"
  (cd fuzz && cargo fuzz build -O -a -s none) || exit 1
  found=0
  printf '%-12s %8s %12s %8s %8s %s\n' target seconds executions corpus rss_mb findings
  for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    seeds="fuzz/seeds/$t"
    [ -d "$seeds" ] || seeds=""
    dict=""
    [ -f "fuzz/dict/$t.dict" ] && dict="-dict=fuzz/dict/$t.dict"
    extra=()
    # libhdf5 (C) itself can crash or hang on bit-flipped metadata: keep going
    # and count them (each is saved as an artifact) instead of stopping at the first.
    [ "$t" = hdf5_trace ] && extra=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1)
    before=$(ls "fuzz/artifacts/$t" | wc -l)
    (cd fuzz && cargo fuzz run -O -a -s none "$t" "corpus/$t" ${seeds:+"../$seeds"} -- \
      -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="$malloc_mb" \
      -print_final_stats=1 ${dict:+"${dict/fuzz\//../fuzz/}"} \
      -artifact_prefix="artifacts/$t/" "${extra[@]}") >"$logs/$t.log" 2>&1
    after=$(ls "fuzz/artifacts/$t" | wc -l)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' | tail -1)
    # Fork mode prints no final stats: its last status line has the executions.
    [ -n "$execs" ] || execs=$(grep -o 'exec/s: [0-9]* .*' "$logs/$t.log" | tail -1 | grep -o 'total: [0-9]*' | grep -o '[0-9]*')
    rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' | tail -1)
    corpus=$(ls "fuzz/corpus/$t" | wc -l)
    new=$((after - before))
    [ "$new" -eq 0 ] || found=1
    printf '%-12s %8s %12s %8s %8s %s\n' "$t" "$per" "${execs:-?}" "$corpus" "${rss:-?}" "$new"
    if [ "$new" -ne 0 ]; then
      grep -m3 -E 'panicked|ERROR: libFuzzer|SUMMARY' "$logs/$t.log" | sed 's/^/    /'
      echo "    artifacts: fuzz/artifacts/$t/ (reproduce: cd fuzz && cargo fuzz run -O -a -s none $t <artifact>)"
    fi
  done
  exit $found
fi

echo "== cargo-fuzz not found: property tests with many cases for ${total}s"
cargo build --release --tests --test fuzz_inputs >/dev/null || exit 1
filter=()
for t in "${targets[@]}"; do
  case $t in
    config) filter+=(config) ;;
    data_file) filter+=(files) ;;
    trace_csv) filter+=(trace_csv raw_trace) ;;
    hdf5_trace) filter+=(truncat) ;;
    hdf5_structure) filter+=(hostile_hdf5_structures) ;;
  esac
done
end=$((SECONDS + total))
rounds=0
cases=${GRADCODE_FUZZ_CASES:-5000}
while [ $SECONDS -lt $end ]; do
  for f in "${filter[@]}"; do
    GRADCODE_FUZZ_CASES=$cases cargo test -q --release --test fuzz_inputs "$f" >"$logs/proptest.log" 2>&1 || {
      grep -E 'panicked|minimal failing' "$logs/proptest.log"
      exit 1
    }
  done
  rounds=$((rounds + 1))
done
echo "proptest rounds: $rounds x $cases cases per property, no finding"
