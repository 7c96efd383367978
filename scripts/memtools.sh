#!/bin/sh
# Install the third-party memory-tool implementations at pinned versions and
# record their `lab memcheck` cards in scenarios/memtools/recorded.json (which
# `make reports` renders into reports/memory_tools.md). Needs python3 with
# venv and network access to PyPI; CI never runs it. Run from the repository
# root: `make memtools`.
set -eu

LAB=${LAB:-target/release/lab}
DIR=${CTXLAB_MEMTOOLS:-target/memtools}
ROOT=$(pwd)
OUT=scenarios/memtools/recorded.json

if ! command -v python3 >/dev/null 2>&1; then
    echo "memtools: python3 is absent; nothing installed or recorded" >&2
    exit 1
fi

# name | pip requirement | adapter
IMPLS="anthropic-python|anthropic==2.17.0|examples/memtool/anthropic_sdk.py"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[' > "$tmp/cards.json"
first=1
for line in $IMPLS; do
    name=${line%%|*}; rest=${line#*|}
    req=${rest%%|*}; adapter=${rest#*|}
    venv="$DIR/$name-${req##*==}"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet "$req"
    fi
    cmd="$ROOT/$venv/bin/python $ROOT/$adapter"
    # Exit 1 means a row did not hold: that is a finding, not a failure here.
    "$LAB" memcheck --exec "$cmd" --format json > "$tmp/one.json" || [ $? -eq 1 ]
    # Name the implementation by its package and version; paths relative to the repository.
    python3 - "$tmp/one.json" "$name ($req)" "$ROOT/" >> "$tmp/cards.json.part" <<'PY'
import json, sys
cards = json.load(open(sys.argv[1]))
card = cards[0]
card["implementation"] = sys.argv[2]
# Run from the repository root, "$PWD/..." names the same install again.
card["select"] = card["select"].replace(sys.argv[3], "$PWD/").replace("'", '"')
for row in card["rows"]:
    if isinstance(row[1], dict) and "detail" in row[1]:
        row[1]["detail"] = row[1]["detail"].replace(sys.argv[3], "")
print(json.dumps(card, ensure_ascii=False, indent=1))
PY
    if [ $first -eq 0 ]; then printf ',' >> "$tmp/cards.json"; fi
    cat "$tmp/cards.json.part" >> "$tmp/cards.json"; rm "$tmp/cards.json.part"
    first=0
done
printf ']\n' >> "$tmp/cards.json"
python3 -c "import json,sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2],'w'), ensure_ascii=False, indent=1); open(sys.argv[2],'a').write('\n')" "$tmp/cards.json" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "memtools: recorded $(python3 -c "import json; print(len(json.load(open('$OUT'))))") implementation(s) in $OUT"
