#!/bin/sh
# Install the third-party memory-tool implementations at pinned versions and
# record their `lab memcheck` cards in lab/course/memory/tool/recorded.json (which
# `make reports` renders into reports/memory_tools.md). Needs python3 with
# venv and network access to PyPI; CI never runs it. Run from the repository
# root: `make memtools`.
set -eu

LAB=${LAB:-target/release/lab}
ROOT=$(pwd)
DIR=${CTXLAB_MEMTOOLS:-target/memtools}
# The install directory, absolute (CTXLAB_MEMTOOLS may be either).
case $DIR in
/*) ABS=$DIR ;;
*) ABS=$ROOT/$DIR ;;
esac
OUT=lab/course/memory/tool/recorded.json

if ! mkdir -p "$ABS" 2>/dev/null || ! [ -w "$ABS" ]; then
    echo "memtools: the install directory $ABS cannot be created or written; set CTXLAB_MEMTOOLS to a writable directory" >&2
    exit 1
fi

if ! command -v python3 >/dev/null 2>&1; then
    echo "memtools: python3 is absent; nothing installed or recorded" >&2
    exit 1
fi

# name|installer|pinned package|adapter (run by python or node)
# (a pip field may name several pinned requirements; the first names the directory)
IMPLS='anthropic-python|pip|anthropic==2.17.0|examples/memtool/anthropic_sdk.py
anthropic-typescript|npm|@anthropic-ai/sdk@1.17.0|examples/memtool/anthropic_sdk.mjs
langchain-anthropic|pip|langchain-anthropic==1.7.10 langchain==1.5.2|examples/memtool/langchain_memory.py'

# Install one implementation (once) and print the command that runs it.
install() {
    name=$1 kind=$2 req=$3 adapter=$4
    case $kind in
    pip)
        first=${req%% *}
        dir="$ABS/$name-${first##*==}"
        # shellcheck disable=SC2086 # several requirements, split on purpose
        [ -x "$dir/bin/python" ] || { python3 -m venv "$dir" >&2 && "$dir/bin/pip" install --quiet $req >&2; } || {
            echo "memtools: installing $req into $dir failed" >&2; return 1; }
        echo "$dir/bin/python $ROOT/$adapter" ;;
    npm)
        command -v node >/dev/null 2>&1 || { echo "memtools: node is absent; $name skipped" >&2; return 1; }
        dir="$ABS/$name-${req##*@}"
        [ -d "$dir/node_modules" ] || { mkdir -p "$dir" && (cd "$dir" && npm init -y >/dev/null && npm install --silent "$req" >&2); } || {
            echo "memtools: installing $req into $dir failed" >&2; return 1; }
        echo "MEMTOOL_NODE_MODULES=$dir/node_modules node $ROOT/$adapter" ;;
    esac
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[' > "$tmp/cards.json"
echo "$IMPLS" | while IFS='|' read -r name kind req adapter; do
    # An install that fails stops the recording (node absent: skipped, said).
    if ! cmd=$(install "$name" "$kind" "$req" "$adapter"); then
        command -v node >/dev/null 2>&1 || [ "$kind" != npm ] || continue
        exit 1
    fi
    # Exit 1 means a row did not hold: that is a finding, not a failure
    # here. Exit 3 (the process misbehaved) stops the recording loudly.
    status=0
    # A fresh interpreter per row (and four at once in the race rows) on a
    # loaded machine: a generous per-command timeout, MEMTOOLS_TIMEOUT to change it.
    "$LAB" memcheck --exec "$cmd" --timeout "${MEMTOOLS_TIMEOUT:-60}" --format json > "$tmp/one.json" || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
        echo "memtools: lab memcheck failed on $name (exit $status); nothing recorded" >&2
        exit 1
    fi
    # Name the implementation by its package and version; paths relative to the repository.
    python3 - "$tmp/one.json" "$name ($req)" "$ROOT/" > "$tmp/part.json" <<'PY'
import json, sys
card = json.load(open(sys.argv[1]))[0]
card["implementation"] = sys.argv[2]
# Run from the repository root, "$PWD/..." names the same install again.
card["select"] = card["select"].replace(sys.argv[3], "$PWD/").replace("'", '"')
if all(isinstance(r[1], dict) and r[1].get("verdict") == "failed" for r in card["rows"]):
    sys.exit("memtools: every row failed for %s; nothing recorded" % sys.argv[2])
for row in card["rows"]:
    if isinstance(row[1], dict) and "detail" in row[1]:
        row[1]["detail"] = row[1]["detail"].replace(sys.argv[3], "")
print(json.dumps(card, ensure_ascii=False))
PY
    if [ -s "$tmp/cards.json.any" ]; then printf ',' >> "$tmp/cards.json"; fi
    cat "$tmp/part.json" >> "$tmp/cards.json"; echo x > "$tmp/cards.json.any"
done
printf ']\n' >> "$tmp/cards.json"
python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2],'w'), ensure_ascii=False, indent=1); open(sys.argv[2],'a').write('\n')" "$tmp/cards.json" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "memtools: recorded $(python3 -c "import json; print(len(json.load(open('$OUT'))))") implementation(s) in $OUT"
