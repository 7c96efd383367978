"""What upstream SWE-agent's `LastNObservations(n=10)` elides on the
mini-swe-agent corpus, written as the expected file of the lab's
`swe-agent-mask-10` test (tests/policy/policy_swe_mask_corpus.rs).

    git -C SWE-agent show 3ea751c087f32b16e039a2233dd6eefecef325d5:sweagent/agent/history_processors.py > /tmp/hp_upstream.py
    python3 scripts/swe_mask_upstream.py --upstream /tmp/hp_upstream.py \
        --corpus ../shared/transcripts/corpus/mini-swe-agent__gemini-3-pro-swebench-verified-500.tar.xz \
        > tests/golden/swe_agent/corpus_mask10.json

Without `--upstream` (or when the file or the corpus is missing) it prints
why and exits 0: nothing is checked. It needs pydantic v2 (upstream's
module is pydantic models); when this python lacks it, it makes a temporary
virtual environment, installs pydantic there and runs itself again in it.

Each `trajs/*/*.traj.json` of the archive is unpacked into a temporary
directory (never the repo) and read as mini-swe-agent 1.x wrote it. Its
messages become SWE-agent history items, written here independently of
the lab's importer:

* the system message is `system`; the first user message (the task) is an
  `observation` (SWE-agent's instance template, which it never elides);
* an assistant reply is an `action` when mini-swe-agent's own parser
  (`re.findall(r"```bash\\s*\\n(.*?)\\n```", content, re.DOTALL)`, exactly one
  match) finds an action in it, else a `thought` (a format error: nothing ran);
* the user message after an action is its `observation`; any other user
  message (the format-error notice) is `user`.

Before each assistant message (the model call that produced it) upstream's
processor runs over the history so far; every entry it replaced is recorded
with its placeholder. Written per session (derived counts and indices only,
never transcript text): `messages` (not counting the system message),
`actions`, `observations` (after an action), and for the sessions named by
`--elisions` (default: the first five) `placeholders` (message index, counted
without the system message -> upstream's placeholder) and `requests`
(`[index of the assistant message, [elided message indices]]`, only the
requests that elide something).
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import types

UPSTREAM_COMMIT = "3ea751c087f32b16e039a2233dd6eefecef325d5"
ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def ensure_pydantic():
    """Import pydantic v2, or run this script again in a venv that has it."""
    try:
        import pydantic

        if pydantic.VERSION.startswith("2."):
            return
    except ImportError:
        pass
    if os.environ.get("SWE_MASK_VENV"):
        print("skipped: pydantic v2 could not be installed", file=sys.stderr)
        sys.exit(0)
    venv = tempfile.mkdtemp(prefix="swe-mask-venv-")
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "pydantic>=2,<3"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"skipped: no pydantic v2 and no venv for it ({e})", file=sys.stderr)
        sys.exit(0)
    env = dict(os.environ, SWE_MASK_VENV="1")
    sys.exit(subprocess.run([py, *sys.argv], env=env).returncode)


def stub_modules():
    """The upstream module's own imports (types and a logger), stubbed."""
    mods = {
        "sweagent": types.ModuleType("sweagent"),
        "sweagent.types": types.ModuleType("sweagent.types"),
        "sweagent.agent": types.ModuleType("sweagent.agent"),
        "sweagent.agent.models": types.ModuleType("sweagent.agent.models"),
        "sweagent.utils": types.ModuleType("sweagent.utils"),
        "sweagent.utils.log": types.ModuleType("sweagent.utils.log"),
    }
    t = mods["sweagent.types"]
    t.HistoryItem = dict
    t.History = list
    mods["sweagent.agent.models"].AbstractModel = object

    class Logger:
        def info(self, *a, **k):
            pass

        warning = info

    mods["sweagent.utils.log"].get_logger = lambda *a, **k: Logger()
    sys.modules.update(mods)


def load(path):
    stub_modules()
    spec = importlib.util.spec_from_file_location("hp_upstream", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["hp_upstream"] = mod
    spec.loader.exec_module(mod)
    return mod


def text_of(content):
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def history(messages):
    """SWE-agent history items; `at` is the index without the system message."""
    items, after_action, first_user, at = [], False, True, 0
    for m in messages:
        role, content = m["role"], text_of(m["content"])
        if role == "system":
            items.append({"role": "system", "content": content, "message_type": "system"})
            continue
        if role == "assistant":
            kind = "action" if len(ACTION.findall(content)) == 1 else "thought"
            after_action = kind == "action"
        elif first_user or after_action:
            kind, first_user, after_action = "observation", False, False
        else:
            kind = "user"
        items.append({"role": role, "content": content, "message_type": kind, "at": at})
        at += 1
    return items


def session(messages, mask, elisions):
    items = history(messages)
    kinds = [x["message_type"] for x in items if "at" in x]
    out = {
        "messages": len(kinds),
        "actions": kinds.count("action"),
        "observations": kinds.count("observation") - (1 if kinds and kinds[0] == "observation" else 0),
    }
    if not elisions:
        return out
    placeholders, requests = {}, []
    for k, item in enumerate(items):
        if item["role"] != "assistant":
            continue
        view = mask([dict(x) for x in items[:k]])
        elided = []
        for before, after in zip(items[:k], view):
            if after["content"] != before["content"]:
                elided.append(before["at"])
                placeholders[str(before["at"])] = after["content"]
        if elided:
            requests.append([item["at"], elided])
    out["placeholders"] = placeholders
    out["requests"] = requests
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", help="SWE-agent's sweagent/agent/history_processors.py at " + UPSTREAM_COMMIT)
    ap.add_argument("--corpus", required=True, help="the mini-swe-agent corpus .tar.xz")
    ap.add_argument("--elisions", type=int, default=5, help="sessions (in name order) whose elisions are written")
    args = ap.parse_args()
    if not args.upstream or not os.path.isfile(args.upstream):
        print("skipped: give --upstream, SWE-agent's history_processors.py (see the docstring)", file=sys.stderr)
        return
    if not os.path.isfile(args.corpus):
        print(f"skipped: no corpus at {args.corpus}", file=sys.stderr)
        return
    ensure_pydantic()
    mask = load(args.upstream).LastNObservations(n=10)
    result = {"upstream": "SWE-agent/SWE-agent@" + UPSTREAM_COMMIT,
              "processor": "LastNObservations(n=10)",
              "corpus": os.path.basename(args.corpus), "sessions": {}}
    with tempfile.TemporaryDirectory(prefix="swe-mask-corpus-") as tmp:
        with tarfile.open(args.corpus) as tar:
            members = sorted(m.name for m in tar.getmembers()
                             if m.isfile() and m.name.endswith(".traj.json"))
            tar.extractall(tmp, members=[tar.getmember(n) for n in members], filter="data")
        for i, name in enumerate(members):
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                messages = json.load(f)["messages"]
            result["sessions"][name] = session(messages, mask, i < args.elisions)
    json.dump(result, sys.stdout, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
