#!/usr/bin/env bash
# GNU parallel over ssh for real, against an sshd of our own on 127.0.0.1:
# runs scripts/launch/parallel.sh with an --sshloginfile naming it, and
# compares the merge with the unsharded run.
#
#   scripts/launch/parallel_ssh_ci.sh LAB CORPUS WORKDIR [POLICY] [SHARDS]
#
# Installs openssh-server with apt-get when sshd is missing and it can
# (root, or sudo without a password). Under WORKDIR: a throwaway host key,
# a client key authorized for this user only there (no ~/.ssh touched), an
# sshd_config listening on a high port of 127.0.0.1. sshd runs in the
# foreground under a trap that stops it on exit, error, SIGTERM or SIGINT.
#
# Exit status: 0 the merge equals the unsharded run; 77 skipped (the
# reason printed); anything else a failure.
set -euo pipefail

skip() {
    echo "parallel_ssh_ci: skipped: $*"
    exit 77
}

[ $# -ge 3 ] || { echo "usage: $0 LAB CORPUS WORKDIR [POLICY] [SHARDS]" >&2; exit 2; }
lab=$1
corpus=$2
work=$3
policy=${4:-none,codex-cli}
shards=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)

command -v parallel >/dev/null || skip "GNU parallel is not installed"
sshd=$(command -v sshd || true)
[ -n "$sshd" ] || [ ! -x /usr/sbin/sshd ] || sshd=/usr/sbin/sshd
if [ -z "$sshd" ]; then
    command -v apt-get >/dev/null || skip "sshd missing and no apt-get to install openssh-server"
    if [ "$(id -u)" = 0 ]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        skip "sshd missing, and neither root nor passwordless sudo to install openssh-server"
    fi
    echo "parallel_ssh_ci: installing openssh-server"
    { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq openssh-server; } >/dev/null 2>&1 \
        || skip "apt-get install openssh-server failed"
    sshd=/usr/sbin/sshd
fi
command -v ssh >/dev/null || skip "no ssh client"

mkdir -p "$work"
work=$(cd "$work" && pwd)
# sshd refuses keys and configs others can write.
chmod 700 "$work"
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
chmod 600 "$work/authorized_keys"
# sshd wants its privilege-separation directory even in the foreground.
[ -d /run/sshd ] || mkdir -p /run/sshd 2>/dev/null || true
port=$((20000 + RANDOM % 20000))
cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
AllowUsers $(id -un)
EOF
"$sshd" -D -e -f "$work/sshd_config" >"$work/sshd.log" 2>&1 &
pid=$!
ssh_cmd="ssh -p $port -i $work/client_key -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
up=""
for _ in $(seq 1 50); do
    if $ssh_cmd "$(id -un)@127.0.0.1" true 2>/dev/null; then up=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
done
[ -n "$up" ] || skip "sshd on 127.0.0.1:$port did not accept our key: $(tail -n 5 "$work/sshd.log" | tr '\n' ' ')"
echo "parallel_ssh_ci: sshd up on 127.0.0.1:$port; running $shards shards over ssh"

# One login of the file: this machine through our sshd (GNU parallel
# takes an ssh command and its options before the login).
echo "$ssh_cmd $(id -un)@127.0.0.1" >"$work/logins"
MERGE_FORMAT=json bash "$here/parallel.sh" "$shards" "$work/run" --sshloginfile "$work/logins" \
    -- "$lab" replay "$corpus" --policy "$policy" >"$work/merged.json"
"$lab" replay "$corpus" --policy "$policy" --format json >"$work/whole.json"
# The jobs went through our sshd: a login for each shard beyond the probe.
logins=$(grep -c "Accepted publickey" "$work/sshd.log" || true)
if [ "$logins" -le "$shards" ]; then
    echo "parallel_ssh_ci: only $logins ssh logins for $shards shards: the jobs did not run over ssh" >&2
    exit 1
fi
if cmp -s "$work/merged.json" "$work/whole.json"; then
    echo "parallel_ssh_ci: merged $shards parts run over ssh: byte-identical to the unsharded run"
else
    echo "parallel_ssh_ci: the merge of the parts run over ssh differs from the unsharded run" >&2
    exit 1
fi
