#!/usr/bin/env bash
# A multi-host test bed on one machine (issue 26, item 3): N "hosts", each a
# network namespace whose eth0 is one end of a veth pair; the other ends are
# ports of a bridge in a namespace of its own (the "switch"). Nothing is
# added to the machine's own namespace: the hosts reach only each other.
# Each host also has its own host name (NAME-hI, a UTS namespace).
# Each link may be rate-limited with tc tbf, both ways (the host's eth0 and
# its switch port). The ranks of one mpirun become separate hosts over
# OpenMPI's TCP transport: mpirun runs in host 1 (`exec NAME 1 mpirun ...`)
# with `--mca plm_rsh_agent "THIS rsh NAME"`, which starts each host's
# daemon in that host's namespace. Needs root and iproute2 (ip, tc).
#
# Usage:
#   netns-hosts.sh up NAME SUBNET HOSTS [I=RATE ...]
#       NAME   prefix of the namespaces (NAME-sw, NAME-h1..NAME-hN): letters,
#              digits, dashes, at most 24 characters; unique per test bed
#       SUBNET three octets, e.g. 10.213.7: host I is SUBNET.I/24
#       HOSTS  how many hosts (1..200)
#       I=RATE host I's link limited to RATE (tc syntax: 100mbit, 1gbit) both
#              ways; I=RATE:in only what the host receives, I=RATE:out only
#              what it sends
#   netns-hosts.sh down NAME            remove everything NAME made (its
#                                       namespaces, their links and processes)
#   netns-hosts.sh exec NAME I CMD...   run CMD in host I
#   netns-hosts.sh link NAME I up|down  set host I's switch port up or down
#   netns-hosts.sh rsh NAME ADDR CMD... OpenMPI's launch agent: run the shell
#                                       command CMD in the host with address ADDR
#   netns-hosts.sh sweep PREFIX         remove the test beds named PREFIX PID
#                                       [LETTERS] whose process PID is gone
#                                       (left by a run killed with SIGKILL,
#                                       which no guard outlives); those of a
#                                       running process are kept
# A failed `up` removes what it made. netem (link latency) is not used: it
# is not in every kernel (not in this machine's).
set -euo pipefail

die() {
  echo "netns-hosts.sh: $*" >&2
  exit 2
}

check_name() {
  [[ $1 =~ ^[A-Za-z0-9-]{1,24}$ ]] || die "NAME = '$1' must be 1-24 letters, digits or dashes"
}

# The namespaces of NAME that exist now.
namespaces() {
  ip netns list | awk '{print $1}' | grep -E "^$1-(sw|h[0-9]+)$" || true
}

down() {
  local ns pids
  for ns in $(namespaces "$1"); do
    # Processes left in it (a test's mpirun daemons) would keep it alive.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  [ -z "$(namespaces "$1")" ] || die "could not remove: $(namespaces "$1" | tr '\n' ' ')"
}

# The test beds PREFIX<digits><letters> whose process <digits> is gone.
stale() {
  local ns bed pid
  ip netns list | awk '{print $1}' | while read -r ns; do
    [[ $ns =~ ^($1([0-9]+)[A-Za-z]*)-(sw|h[0-9]+)$ ]] || continue
    bed=${BASH_REMATCH[1]} pid=${BASH_REMATCH[2]}
    [ -e "/proc/$pid" ] || echo "$bed $pid"
  done | sort -u
}

sweep() {
  local bed pid
  stale "$1" | while read -r bed pid; do
    echo "netns-hosts.sh: removing test bed $bed: its process $pid is gone" >&2
    down "$bed"
  done
}

limit() { # namespace device rate
  # burst: at least rate / HZ; 64 kB holds at 1 Gbit/s with HZ = 250.
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst 64kb latency 100ms
}

up() {
  local name=$1 subnet=$2 hosts=$3
  shift 3
  check_name "$name"
  [[ $subnet =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "SUBNET = '$subnet' must be three octets, e.g. 10.213.7"
  [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] || die "HOSTS = '$hosts' must be in 1..200"
  [ -z "$(namespaces "$name")" ] || die "NAME = '$name' is in use: $(namespaces "$name" | tr '\n' ' ')"
  local -a rates=() ways=()
  local spec i
  for spec in "$@"; do
    [[ $spec =~ ^([0-9]+)=([0-9]+[kmgKMG]?(bit|bps))(:(in|out))?$ ]] || die "'$spec' must be I=RATE[:in|:out], e.g. 2=100mbit"
    i=${BASH_REMATCH[1]}
    [ "$i" -ge 1 ] && [ "$i" -le "$hosts" ] || die "'$spec' names host $i, outside 1..$hosts"
    rates[i]=${BASH_REMATCH[2]}
    ways[i]=${BASH_REMATCH[5]:-both}
  done
  # From here on a failure removes what was made.
  # (Expanded now: the trap runs after this function's locals are gone;
  # NAME is letters, digits and dashes.)
  # shellcheck disable=SC2064
  trap "down $name || true" EXIT
  local sw="$name-sw"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 1; i <= hosts; i++)); do
    local h="$name-h$i"
    ip netns add "$h"
    ip -n "$h" link set lo up
    ip -n "$h" link add eth0 type veth peer name "p$i" netns "$sw"
    ip -n "$h" addr add "$subnet.$i/24" dev eth0
    ip -n "$h" link set eth0 up
    ip -n "$sw" link set "p$i" master br0
    ip -n "$sw" link set "p$i" up
    if [ -n "${rates[i]:-}" ]; then
      # What the host sends leaves its eth0; what it receives leaves its port.
      [ "${ways[i]}" = in ] || limit "$h" eth0 "${rates[i]}"
      [ "${ways[i]}" = out ] || limit "$sw" "p$i" "${rates[i]}"
    fi
  done
  trap - EXIT
}

host_ns() { # NAME I
  check_name "$1"
  [[ $2 =~ ^[0-9]+$ ]] || die "host '$2' must be a number"
  ip netns list | awk '{print $1}' | grep -x "$1-h$2" >/dev/null || die "no host $2 in test bed '$1'"
  echo "$1-h$2"
}

[ $# -ge 2 ] || die "usage: netns-hosts.sh up|down|exec|link|rsh|sweep NAME ..."
command=$1
shift
case $command in
  up)
    [ $# -ge 3 ] || die "usage: netns-hosts.sh up NAME SUBNET HOSTS [I=RATE ...]"
    up "$@"
    ;;
  down)
    check_name "$1"
    down "$1"
    ;;
  exec)
    [ $# -ge 3 ] || die "usage: netns-hosts.sh exec NAME I CMD..."
    ns=$(host_ns "$1" "$2")
    shift 2
    # Its own host name too (a UTS namespace): OpenMPI tells nodes apart by
    # name, and ranks that think they share a node when they do not crash in
    # MPI_Comm_split_type (see `rsh`).
    exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
    ;;
  sweep)
    [ $# -eq 1 ] || die "usage: netns-hosts.sh sweep PREFIX"
    [[ $1 =~ ^[A-Za-z][A-Za-z-]{0,15}$ ]] || die "PREFIX = '$1' must be 1-16 letters or dashes, starting with a letter"
    sweep "$1"
    ;;
  link)
    [ $# -eq 3 ] && [[ $3 =~ ^(up|down)$ ]] || die "usage: netns-hosts.sh link NAME I up|down"
    host_ns "$1" "$2" >/dev/null
    ip -n "$1-sw" link set "p$2" "$3"
    ;;
  rsh)
    # OpenMPI calls AGENT ADDR CMD... as it would call ssh: CMD is one shell command.
    [ $# -ge 3 ] || die "usage: netns-hosts.sh rsh NAME ADDR CMD..."
    name=$1 addr=$2
    shift 2
    ns=$(host_ns "$name" "${addr##*.}")
    # With one host name for every namespace, ranks on different hosts
    # disagreed on which of them share a node, and MPI_Comm_split_type
    # (MPI_COMM_TYPE_SHARED) crashed in OpenMPI 4.1.4: each host has its own.
    exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
    ;;
  *)
    die "unknown command '$command': up, down, exec, link, rsh or sweep"
    ;;
esac
