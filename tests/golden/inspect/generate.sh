#!/bin/sh
# Regenerate the Inspect golden (expected.json) by running inspect_ai itself
# (scripts/fixtures/inspect_golden.py installs the pinned release into a venv
# under $TMPDIR). Run from the repository root, by hand, never by CI:
#
#     sh tests/golden/inspect/generate.sh
#
# Sessions: the two scripted ones here (sessions.py), fed as they are, and
# the repository's import fixtures through `lab import --export`.
set -eu
dir=tests/golden/inspect
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctxlab-inspect-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$dir" && python3 sessions.py)
cargo run --locked --quiet --bin lab -- import \
    tests/import/fixtures/openhands/trajectory.json \
    tests/import/fixtures/gemini_cli/session.jsonl \
    --export "$tmp/fixtures.jsonl"
cases=""
for c in $(cat "$dir/cases.txt"); do cases="$cases --case $c"; done
# shellcheck disable=SC2086
python3 scripts/fixtures/inspect_golden.py \
    --session "$dir/agent.json" --session "$dir/reused_id.json" --session "$dir/aborted.json" \
    --export "$tmp/fixtures.jsonl" $cases --out "$dir/expected.json"
