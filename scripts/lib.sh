# shellcheck shell=bash
# What the shell scripts of scripts/ share (sourced, not run):
#
#   source "$(dirname "$0")/lib.sh"   # sets $repo (the repository's top folder)
#
#   build_release [CARGO-ARGS...]   build the release gradcode (once) and set
#                                   $bin to it; CARGO-ARGS add targets of the
#                                   same build (`--example reduce_baseline`)
#   mpi_env                         the MPI environment of these scripts
#   launch_ranks N COMMAND...       run N ranks of COMMAND with the launcher
#                                   jobs/launch.sh chooses (OpenMPI or MPICH)
#   launch_command N                that launcher's words, in the array launcher
#   bench_config NAME               the path of configs/bench/NAME.toml
#   write_config BASE OUT [KEY=VALUE...]
#                                   BASE with `--set KEY=VALUE`s applied, written
#                                   to OUT by `$bin check --print-config`: for
#                                   the programs that take a config file and no
#                                   --set (the examples)
#
# $GRADCODE, when set, names a built gradcode: build_release builds no
# gradcode then (only the CARGO-ARGS targets, when given) and $bin is it.
# A script's later build_release with the same CARGO-ARGS builds nothing
# again. GRADCODE is not exported for the scripts a script runs: each builds
# (cargo rebuilds what a build with other features, e.g. a
# --no-default-features test, left in target/release). $target is the cargo
# target folder ($CARGO_TARGET_DIR, else target/): examples are in
# $target/release/examples.
#
# Sourcing it sources jobs/launch.sh (its choose_launcher, launcher_command,
# ...) and leaves the caller's shell options alone.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
case $target in /*) ;; *) target=$repo/$target ;; esac
# shellcheck source=SCRIPTDIR/../jobs/launch.sh
source "$repo/jobs/launch.sh"

# build_release [CARGO-ARGS...]: `cargo build --release --locked --bin
# gradcode CARGO-ARGS` in the repository, unless $GRADCODE names a built
# binary (then only the CARGO-ARGS targets are built), once per script and
# CARGO-ARGS; sets bin to the binary (an absolute path).
# shellcheck disable=SC2120 # called with no arguments too: only the binary
build_release() {
  command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
  local built_for="[$*]"
  if [ "${lib_built:-}" != "$built_for" ]; then
    if [ -n "${GRADCODE:-}" ]; then
      [ -x "$GRADCODE" ] || { echo "lib.sh: GRADCODE=$GRADCODE is not an executable" >&2; return 1; }
      if [ $# -gt 0 ]; then
        (cd "$repo" && cargo build --release --locked "$@") || return 1
      fi
    else
      (cd "$repo" && cargo build --release --locked --bin gradcode "$@") || return 1
    fi
    lib_built=$built_for
  fi
  bin=${GRADCODE:-$target/release/gradcode}
  case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
}

# mpi_env: OpenMPI refuses to run as root without its two root variables;
# they are set when running as root, and only then.
mpi_env() {
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}

# launch_command N: the words that start N ranks of a command, in the
# array `launcher`, as jobs/launch.sh chooses and spells them for $bin
# (build_release's): its MPI library decides. Outside a Slurm allocation,
# OpenMPI's mpirun with --oversubscribe for an OpenMPI build, else the
# library's own mpiexec with -n only; inside one, launch.sh's choice (srun
# where it works). GRADCODE_LAUNCHER (srun-pmix, srun-pmi2, mpirun,
# mpiexec) overrides both. The ranks inherit the environment (give them a
# variable as `VAR=value launch_ranks ...`).
launch_command() {
  local ranks=${1:?launch_command needs the number of ranks}
  local how=${GRADCODE_LAUNCHER:-}
  if [ -z "$how" ]; then
    if [ -n "${SLURM_JOB_ID:-}" ]; then
      how=$(choose_launcher "${bin:?launch_command needs \$bin (build_release)}")
    elif [ "$(mpi_vendor "${bin:?launch_command needs \$bin (build_release)}")" = openmpi ]; then
      how=mpirun
    else
      how=mpiexec
    fi
    how=${how%% *}
  fi
  mapfile -t launcher < <(launcher_command "$how" "$ranks")
  if ((${#launcher[@]} == 0)); then
    echo "lib.sh: unknown GRADCODE_LAUNCHER=$how (srun-pmix, srun-pmi2, mpirun, mpiexec)" >&2
    return 2
  fi
}

# launch_ranks N COMMAND...: run N ranks of COMMAND (gradcode, or a wrapper
# of it: a rank script, /usr/bin/time) with launch_command's launcher; its
# status is returned.
launch_ranks() {
  local -a launcher
  launch_command "${1:?launch_ranks needs the number of ranks}" || return
  shift
  "${launcher[@]}" "$@"
}

# bench_config NAME: the benchmark config configs/bench/NAME.toml (absolute).
bench_config() {
  local path=$repo/configs/bench/${1:?bench_config needs a name}.toml
  [ -f "$path" ] || { echo "lib.sh: no benchmark config $path" >&2; return 1; }
  printf '%s\n' "$path"
}

# write_config BASE OUT [KEY=VALUE...]: the TOML file BASE with each
# KEY=VALUE applied as `--set KEY=VALUE` applies it, written to OUT by
# `$bin check --print-config` (so the config is checked and the settings are
# gradcode's own; run build_release first). OUT is written only when the
# check passed.
write_config() {
  local base=${1:?write_config needs BASE} out=${2:?write_config needs OUT}
  shift 2
  [ -n "${bin:-}" ] || { echo "lib.sh: write_config: run build_release first (\$bin is unset)" >&2; return 1; }
  local sets=() item
  for item in "$@"; do sets+=(--set "$item"); done
  "$bin" check --config "$base" "${sets[@]}" --print-config > "$out.partial" \
    && mv -f "$out.partial" "$out" || { rm -f "$out.partial"; return 1; }
}
