#!/usr/bin/env bash
# Sharded `lab replay` with GNU parallel, then the merge.
#
#   scripts/launch/parallel.sh N OUTDIR [--sshloginfile FILE] -- lab replay CORPUS --policy … [options]
#
# Runs N jobs, job k (GNU parallel's {#} = PARALLEL_SEQ, from 1) replaying
# shard k-1 of N through `--shard auto/N`, each into OUTDIR/part-k.json
# (written to a temporary name and renamed, so a part on disk is whole),
# then `lab replay --merge OUTDIR/part-*.json`, printed on stdout. With
# --sshloginfile the jobs run on the machines it lists (`:` is this one);
# every machine must see the corpus and OUTDIR at the same paths (a shared
# file system), as GNU parallel runs the command line as written there.
#
# Resuming: the joblog OUTDIR/joblog records each finished shard; running
# the same line again (--resume-failed) re-runs only the shards that failed
# or never ran, then merges. The merge writes nothing until every part is
# there and checked.
set -euo pipefail

usage() {
    echo "usage: $0 N OUTDIR [--sshloginfile FILE] -- lab replay CORPUS --policy … [options]" >&2
    exit 2
}
[ $# -ge 4 ] || usage
n=$1
out=$2
shift 2
remote=()
if [ "$1" = --sshloginfile ]; then
    [ $# -ge 2 ] || usage
    remote=(--sshloginfile "$2")
    shift 2
fi
[ "$1" = -- ] || usage
shift
[ $# -ge 1 ] || usage
case $n in '' | *[!0-9]* | 0) echo "$0: N must be a positive number, not '$n'" >&2; exit 2 ;; esac
lab=$1
shift

mkdir -p "$out"
out=$(cd "$out" && pwd)
# The command is quoted once here, for the shell of each job. The first
# shard to walk a tar archive saves its index beside the run, and the
# others read their members at its offsets (CTXLAB_TAR_INDEX_DIR; set on
# the command line, as a remote job's shell does not inherit ours).
index=${CTXLAB_TAR_INDEX_DIR:-$out/.tar-index}
cmd="CTXLAB_TAR_INDEX_DIR=$(printf '%q' "$index") $(printf '%q ' "$lab" "$@")"
part="$out/part-{#}.json"
parallel --will-cite --halt now,fail=1 --joblog "$out/joblog" --resume-failed "${remote[@]}" \
    "$cmd --shard auto/$n --format json > $part.tmp && mv $part.tmp $part" ::: $(seq 1 "$n")
"$lab" replay --merge "$out"/part-*.json --format "${MERGE_FORMAT:-table}"
