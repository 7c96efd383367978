#!/bin/sh
# Install what the live-upstream external policies under examples/policies/
# run on, at pinned versions, into target/exec-examples (never into the
# repository): LangChain for langchain_clear_tool_uses.py, the AI SDK for
# ai_sdk_prune_messages.mjs. tests/policy/exec_live.rs runs them where this
# succeeded and says why it skips where it did not. Needs network access to
# PyPI and npm; `.ci/run` and `make exec-examples` call it.
set -eu

DIR=${CTXLAB_EXEC_EXAMPLES:-target/exec-examples}
status=0

if command -v python3 >/dev/null 2>&1; then
    [ -x "$DIR/langchain/bin/python" ] && "$DIR/langchain/bin/python" -c 'import langchain' 2>/dev/null \
        || { rm -rf "$DIR/langchain" && python3 -m venv "$DIR/langchain" \
             && "$DIR/langchain/bin/pip" install --quiet langchain==1.5.0; } \
        || { echo "exec-examples: installing langchain==1.5.0 failed" >&2; status=1; }
else
    echo "exec-examples: python3 is absent; the LangChain example is not installed" >&2
    status=1
fi

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    [ -f "$DIR/ai/node_modules/ai/package.json" ] \
        || { mkdir -p "$DIR/ai" && (cd "$DIR/ai" && npm init -y >/dev/null && npm install --silent ai@7.0.173); } \
        || { echo "exec-examples: installing ai@7.0.173 failed" >&2; status=1; }
else
    echo "exec-examples: node or npm is absent; the AI SDK example is not installed" >&2
    status=1
fi
exit $status
