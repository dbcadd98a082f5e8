#!/usr/bin/env bash
# A real single-node Slurm on this machine, for tests and demos (as root).
#
#   scripts/slurm-local.sh up     install slurm-wlm and munge if missing, start munged, slurmctld, slurmd
#   scripts/slurm-local.sh down   stop the daemons this script started and put back
#                                 the slurm.conf that was there before `up`
#
# The node claims 16 CPUs and slurm.conf has SlurmdParameters=config_overrides,
# so jobs with more tasks than the machine has cores schedule. State lives
# under /tmp/gradcode-slurm. Exit status 3 means Slurm cannot run here.
set -euo pipefail
state=/tmp/gradcode-slurm
conf=/etc/slurm/slurm.conf
backup=/etc/slurm/slurm.conf.before-gradcode
marker="# written by gradcode scripts/slurm-local.sh"

up() {
  [ "$(id -u)" -eq 0 ] || { echo "slurm-local: needs root" >&2; exit 3; }
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "slurm-local: installing slurm-wlm and munge"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null || { echo "slurm-local: apt-get could not install slurm-wlm munge" >&2; exit 3; }
  fi
  # munge: key, directories owned by munge, daemon as munge.
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    su -s /bin/sh munge -c munged
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  munge -n | unmunge | grep "STATUS: *Success" >/dev/null || { echo "slurm-local: munge does not work" >&2; exit 3; }
  # slurm.conf: a single node claiming 16 CPUs (config_overrides lets slurmd accept that on a small machine), this host, our state folder.
  mkdir -p "$state"/{state,spool,log} /etc/slurm
  host=$(hostname)
  # Keep a config that is not ours; `down` puts it back.
  if [ -e "$conf" ] && ! grep -qF "$marker" "$conf" && [ ! -e "$backup" ]; then
    cp -p "$conf" "$backup"
    echo "slurm-local: kept the existing $conf as $backup (restored by down)"
  fi
  cat > "$conf" <<CONF
$marker
ClusterName=gradcode
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmctldLogFile=$state/log/ctld.log
SlurmdLogFile=$state/log/slurmd.log
NodeName=$host CPUs=16 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16
SlurmdParameters=config_overrides
CONF
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 100); do
    if sinfo -h -o %T 2>/dev/null | grep -E '^(idle|mixed|allocated)' >/dev/null; then
      echo "slurm-local: up ($(sinfo -h -o '%N %T %c CPUs'))"
      return 0
    fi
    sleep 0.2
  done
  echo "slurm-local: the node did not become idle: $(sinfo 2>&1 | tail -1)" >&2
  exit 3
}

down() {
  for pid in "$state/slurmd.pid" "$state/slurmctld.pid"; do
    [ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  done
  for _ in $(seq 50); do pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break; sleep 0.1; done
  if [ -e "$backup" ]; then
    mv "$backup" "$conf"
    echo "slurm-local: restored $conf"
  elif [ -e "$conf" ] && grep -qF "$marker" "$conf"; then
    rm -f "$conf"
  fi
  echo "slurm-local: down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: scripts/slurm-local.sh up|down" >&2; exit 2 ;;
esac
