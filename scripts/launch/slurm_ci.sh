#!/usr/bin/env bash
# A real single-node Slurm, started for one test and stopped after it:
# submits scripts/launch/slurm.sbatch as a job array over CORPUS, merges
# the parts and compares the merge with the unsharded run.
#
#   scripts/launch/slurm_ci.sh LAB CORPUS WORKDIR [POLICY] [SHARDS]
#
# Installs Debian's slurm-wlm and munge with apt-get when they are missing
# and it can (root, or sudo without a password), writes a slurm.conf for
# this host alone under WORKDIR (high ports, no cgroups, no accounting),
# starts munged, slurmctld and slurmd, runs `sbatch --wait --array`, then
# `lab replay --merge`. Every daemon it started is stopped on exit, on
# error and on SIGTERM/SIGINT (a trap), and the whole run is bounded
# (SLURM_CI_SECS, default 150 s; the test runs it under `timeout`).
#
# Exit status: 0 the merge equals the unsharded run; 77 skipped (the
# reason printed: not root, no apt-get, a daemon that does not start);
# anything else a failure.
set -euo pipefail

skip() {
    echo "slurm_ci: skipped: $*"
    exit 77
}

[ $# -ge 3 ] || { echo "usage: $0 LAB CORPUS WORKDIR [POLICY] [SHARDS]" >&2; exit 2; }
lab=$1
corpus=$2
work=$3
policy=${4:-none,codex-cli}
shards=${5:-3}
budget=${SLURM_CI_SECS:-150}
here=$(cd "$(dirname "$0")" && pwd)

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        return 1
    fi
}

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || skip "slurmctld or munged missing and no apt-get to install slurm-wlm and munge"
    as_root true || skip "slurmctld or munged missing, and neither root nor passwordless sudo to install them"
    echo "slurm_ci: installing slurm-wlm and munge"
    { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq slurm-wlm munge; } >/dev/null 2>&1 \
        || skip "apt-get install slurm-wlm munge failed"
fi
[ "$(id -u)" = 0 ] || skip "slurmd runs jobs as their user only when started as root; not root here"

mkdir -p "$work"
work=$(cd "$work" && pwd)
mkdir -p "$work/state" "$work/spool" "$work/munge" "$work/out"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        # Each daemon gets a few seconds to stop, then is killed.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.3
        done
        kill -9 "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# munge: a key of our own, its socket under WORKDIR (no system service touched).
key="$work/munge/munge.key"
dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
chmod 600 "$key"
socket="$work/munge/munge.socket"
munged --foreground --force --key-file "$key" --socket "$socket" \
    --pid-file "$work/munge/munged.pid" --seed-file "$work/munge/seed" \
    --log-file "$work/munge/munged.log" >"$work/munge/stdout.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || skip "munged did not start: $(tail -n 3 "$work/munge/munged.log" "$work/munge/stdout.log" 2>/dev/null | tr '\n' ' ')"

host=$(hostname -s)
cpus=$(nproc)
# Ports above the usual 6817/6818, so a system Slurm is left alone.
port=$((17000 + RANDOM % 2000))
conf="$work/slurm.conf"
cat >"$conf" <<EOF
ClusterName=ctxlabci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=10 State=UP
EOF
export SLURM_CONF=$conf
# slurmd loads a cgroup plugin whatever the tracking (22.05 knows no
# "disabled"); autodetect without systemd starts where cgroups are mounted.
printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' >"$work/cgroup.conf"

slurmctld -D -i -f "$conf" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$conf" -N "$host" >"$work/slurmd.out" 2>&1 &
pids+=($!)

idle=""
for _ in $(seq 1 60); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
    case $state in idle* | mixed* | allocated*) idle=$state; break ;; esac
    sleep 0.5
done
if [ -z "$idle" ]; then
    skip "the single-node Slurm did not come up (node state '${state:-none}'): $(tail -n 4 "$work/slurmctld.log" "$work/slurmd.log" "$work/slurmd.out" 2>/dev/null | tr '\n' ' ')"
fi
echo "slurm_ci: Slurm up on $host (node $idle, port $port); submitting $shards array tasks"

export CORPUS=$corpus OUT=$work/out SHARDS=$shards POLICY=$policy LAB=$lab
timeout "$budget" sbatch --wait --quiet --array=0-$((shards - 1)) --export=ALL \
    --output="$work/task-%a.log" "$here/slurm.sbatch" || {
    echo "slurm_ci: the array failed; its logs:" >&2
    tail -n 20 "$work"/task-*.log "$work/slurmctld.log" >&2 2>/dev/null || true
    exit 1
}
"$lab" replay --merge "$work"/out/part-*.json --format json --out "$work/merged.json"
"$lab" replay "$corpus" --policy "$policy" --format json >"$work/whole.json"
if cmp -s "$work/merged.json" "$work/whole.json"; then
    echo "slurm_ci: merged $shards Slurm array parts: byte-identical to the unsharded run"
else
    echo "slurm_ci: the merge of the Slurm parts differs from the unsharded run" >&2
    exit 1
fi
