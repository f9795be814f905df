#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for flowrun's tests and for
# trying `executor: slurm` without a real cluster (docs/CLUSTER.md, "Slurm").
#
#   scripts/slurm-test-cluster.sh start [DIR]   # prints DIR; waits until the node is idle
#   scripts/slurm-test-cluster.sh stop  [DIR]   # kills slurmctld and slurmd, removes DIR
#   scripts/slurm-test-cluster.sh status [DIR]
#
# SLURM_TEST_CPUS=N gives the node N CPUs whatever the machine has
# (SlurmdParameters=config_overrides): many short array elements then run
# at once, as on a real cluster, instead of two at a time on two cores.
#
# Needs root and Debian's slurm-wlm and munge (`apt-get install slurm-wlm
# munge`); a missing one is named, never skipped. State, spool, logs and pid
# files live in DIR (default /tmp/flowrun-slurm); the config is written to
# /etc/slurm/slurm.conf, where Slurm's commands look for it.
set -euo pipefail

command=${1:-}
dir=${2:-/tmp/flowrun-slurm}

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "slurm-test-cluster: '$tool' is missing: apt-get install -y slurm-wlm munge" >&2
      exit 3
    }
  done
}

stop() {
  # munged too, when this script started it (its pid kept in DIR); one started otherwise is left alone.
  for pidfile in "$dir/ctld.pid" "$dir/d.pid" "$dir/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  # Wait for both daemons to be gone, so a following start finds the ports free.
  for _ in $(seq 1 50); do
    alive=0
    for pidfile in "$dir/ctld.pid" "$dir/d.pid" "$dir/munged.pid"; do
      [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  # Still there after 5 s (a slurmd retrying a controller that is gone): SIGKILL.
  for pidfile in "$dir/ctld.pid" "$dir/d.pid" "$dir/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    # Only the daemon itself, not a process that took its pid since.
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
      slurmctld|slurmd|munged) kill -9 "$pid" 2>/dev/null || true ;;
    esac
  done
  rm -rf "$dir"
}

# A cluster left running from another folder (a test run that crashed, a
# try by hand): the config says where its pid files are; stop it, since two
# controllers cannot share the ports.
stop_previous() {
  [ -f /etc/slurm/slurm.conf ] || return 0
  previous=$(sed -n 's/^SlurmctldPidFile=\(.*\)\/ctld.pid$/\1/p' /etc/slurm/slurm.conf)
  if [ -n "$previous" ] && [ "$previous" != "$dir" ] && [ -f "$previous/ctld.pid" ]; then
    echo "slurm-test-cluster: stopping the cluster left running in $previous" >&2
    dir=$previous stop_in "$previous"
  fi
}

stop_in() { local dir=$1; stop; }

case "$command" in
  start)
    need slurmctld slurmd sbatch squeue scancel sinfo scontrol munged
    [ "$(id -u)" = 0 ] || { echo "slurm-test-cluster: needs root (SlurmUser=root)" >&2; exit 3; }
    stop_previous
    stop
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    host=$(hostname -s)
    cpus=${SLURM_TEST_CPUS:-$(nproc)}
    memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
    mkdir -p /etc/slurm
    cat > /etc/slurm/slurm.conf <<CONF
ClusterName=flowrun-test
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# A job that asks for no memory takes 64 MB, not the whole node (which would run one job at a time).
DefMemPerCPU=64
SchedulerParameters=sched_interval=1,bf_interval=1
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/ctld.pid
SlurmdPidFile=$dir/d.pid
SlurmctldLogFile=$dir/log/ctld.log
SlurmdLogFile=$dir/log/d.log
# Enough to say, when a test finds a job left, what happened to its signals.
SlurmdDebug=debug
SlurmctldDebug=verbose
SlurmUser=root
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MaxArraySize=100001
MaxJobCount=200000
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    # munge: one key, one daemon; stopped with the cluster when this script started it.
    if [ ! -s /etc/munge/munge.key ]; then
      mkdir -p /etc/munge
      head -c 1024 /dev/urandom > /etc/munge/munge.key
      chown munge:munge /etc/munge/munge.key
      chmod 0400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    # A zombie munged (an earlier one whose parent never reaped it) is not one.
    if ! pgrep -r R,S,D -x munged >/dev/null; then
      su -s /bin/sh munge -c /usr/sbin/munged
      cp /run/munge/munged.pid "$dir/munged.pid"
    fi
    slurmctld
    slurmd
    for _ in $(seq 1 300); do
      state=$(sinfo -h -o %t 2>/dev/null | head -1 || true)
      [ "$state" = idle ] && { echo "$dir"; exit 0; }
      sleep 0.1
    done
    echo "slurm-test-cluster: the node did not become idle in 30 s (state '${state:-none}'); logs were in $dir/log:" >&2
    tail -5 "$dir/log/ctld.log" >&2 || true
    stop  # nothing left running after a failed start
    exit 1
    ;;
  stop)
    stop
    ;;
  status)
    sinfo -h -o '%n %t' 2>/dev/null || { echo "not running"; exit 1; }
    ;;
  *)
    echo "usage: $0 start|stop|status [DIR]" >&2
    exit 2
    ;;
esac
