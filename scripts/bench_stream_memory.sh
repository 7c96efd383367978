#!/bin/sh
# Memory bench: peak resident set of `lab replay` streaming one long chained
# Claude Code session (~30 MB, `STREAM_BENCH_MB`), over the binary's own
# footprint (the same command on a tiny file), for the profile stream and a
# `--policy` JSON Lines stream. The session repeats the shared
# `session-share__general-tool-calls.jsonl` with fresh ids, each
# repetition's root chained to the previous one's last record (as
# benches/import.rs builds it), in a temp dir; nothing is kept. Skips
# without the shared transcripts (`TRANSCRIPTS=DIR`). Target: the profile
# stream under half the file's size over the footprint. Linux
# (`/usr/bin/time -v`), run by `make bench`.
set -eu
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
MB=${STREAM_BENCH_MB:-30}
src=${TRANSCRIPTS:-../shared/transcripts}/claude_code/session-share__general-tool-calls.jsonl
if [ ! -f "$src" ] || [ ! -x /usr/bin/time ]; then
    echo "stream memory bench skipped: $src or /usr/bin/time not found (set TRANSCRIPTS=DIR)"
    exit 0
fi
# LAB=PATH measures another build of the binary (a debug one, say).
if [ -z "${LAB:-}" ]; then
    $CARGO build --release --locked --bin lab >/dev/null 2>&1
fi
lab=${LAB:-${CARGO_TARGET_DIR:-target}/release/lab}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ctxlab-stream-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

build() { # MB OUT
    python3 - "$src" "$2" "$1" <<'PY'
import json, sys
src, out, target = sys.argv[1], sys.argv[2], float(sys.argv[3]) * 1e6
KEYS = {"uuid", "parentUuid", "logicalParentUuid", "leafUuid", "id",
        "tool_use_id", "sourceToolUseID", "toolUseID"}
def fresh(v, k):
    if isinstance(v, dict):
        for key, val in v.items():
            if isinstance(val, str) and key in KEYS:
                v[key] = f"{val}-r{k}"
            else:
                fresh(val, k)
    elif isinstance(v, list):
        for x in v:
            fresh(x, k)
recs = [json.loads(l) for l in open(src) if l.strip() and not l.lstrip().startswith("//")]
written, k, last = 0, 0, None
with open(out, "w") as w:
    while written < target:
        tail = None
        for rec in recs:
            r = json.loads(json.dumps(rec))
            fresh(r, k)
            if r.get("parentUuid", 0) is None and "uuid" in r and last:
                r["parentUuid"] = last
            if isinstance(r.get("uuid"), str) and r.get("isSidechain") is not True:
                tail = r["uuid"]
            t = json.dumps(r, ensure_ascii=False, separators=(",", ":"))
            w.write(t + "\n")
            written += len(t.encode()) + 1
        last, k = tail or last, k + 1
PY
}
build 0.01 "$dir/tiny.jsonl"
build "$MB" "$dir/chained.jsonl"
size=$(wc -c <"$dir/chained.jsonl")

peak_kb() { # ARGS...
    /usr/bin/time -v "$lab" "$@" 2>&1 >/dev/null | awk '/Maximum resident/ {print $6}'
}
report() { # NAME ARGS...
    name=$1; shift
    base=$(peak_kb replay "$dir/tiny.jsonl" "$@")
    peak=$(peak_kb replay "$dir/chained.jsonl" "$@")
    awk -v n="$name" -v b="$base" -v p="$peak" -v s="$size" 'BEGIN {
        over = (p - b) / 1024; file = s / 1048576
        printf "  %s: peak %.1f MB, footprint %.1f MB, %.1f MB over it for a %.1f MB file (%.0f %% of the file)\n",
            n, p / 1024, b / 1024, over, file, 100 * over / file }'
}
echo "stream memory (one chained session, $lab):"
report "profile stream (every profile)"
report "policy stream (--policy none --format jsonl)" --policy none --format jsonl
