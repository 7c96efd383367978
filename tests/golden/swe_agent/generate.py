"""Golden fixtures for the SWE-agent policies, produced by upstream's own code.

Not run by CI. Needs python3 with pydantic v2 (nothing else; no network):

    git -C SWE-agent show 3ea751c087f32b16e039a2233dd6eefecef325d5:sweagent/agent/history_processors.py > /tmp/hp_upstream.py
    git -C the-complexity-trap show 1b07decf4ca4b5d722d25a57810fe18a2d8b60fb:sweagent/agent/history_processors.py > /tmp/hp_study.py
    python3 tests/golden/swe_agent/generate.py /tmp/hp_upstream.py /tmp/hp_study.py > tests/golden/swe_agent/expected.json

It builds a scripted history (the same one `lab/zoo/swe_agent/tests.rs`
builds), converts it to SWE-agent's history items (a system message first,
the task as the first observation, one `tool` observation per result), runs
each configuration's processors before every model call exactly as the agent
does (the summariser keeps state across calls), and writes every request.
A request message is `{"span": [a, b]}` for history messages `a..=b` unchanged,
`{"ref": i, "result": text}` when it is that tool-result message with its
result replaced by `text`, otherwise the message itself in the lab's
(Anthropic) shape. The upstream
modules' own imports are stubbed (logger, model class, types); the model's
`query_for_summary` returns `S1`, `S2`, ... and its contexts are recorded.
"""
import importlib.util
import json
import sys
import types

import pydantic


def stub_modules():
    class SummaryMetadata(pydantic.BaseModel):
        summary: str = ""

    class AbstractModel:
        pass

    class Logger:
        def info(self, *a, **k):
            pass

        warning = info

    mods = {
        "sweagent": types.ModuleType("sweagent"),
        "sweagent.agent": types.ModuleType("sweagent.agent"),
        "sweagent.agent.models": types.ModuleType("sweagent.agent.models"),
        "sweagent.types": types.ModuleType("sweagent.types"),
        "sweagent.utils": types.ModuleType("sweagent.utils"),
        "sweagent.utils.log": types.ModuleType("sweagent.utils.log"),
    }
    mods["sweagent.agent.models"].AbstractModel = AbstractModel
    t = mods["sweagent.types"]
    t.HistoryItem = dict
    t.History = list
    t.Turns = list
    t.SummaryMetadata = SummaryMetadata
    mods["sweagent.utils.log"].get_logger = lambda *a, **k: Logger()
    sys.modules.update(mods)
    return SummaryMetadata


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    # pydantic resolves the postponed annotations through sys.modules.
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def history():
    """The scripted history: task, 60 steps, a user interjection after step 4,
    a text-only assistant reply after step 30. Must match tests.rs."""
    h = [{"role": "user", "content": "Fix the bug in calc.py\nIt divides by zero."}]
    for i in range(60):
        tid = f"call_{i}"
        h.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": tid, "name": "bash", "input": {"command": f"cmd {i}"}}]})
        h.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": f"out {i}\n" * (i % 4 + 1)}]})
        if i == 4:
            h.append({"role": "user", "content": "Also keep the tests green."})
        if i == 30:
            h.append({"role": "assistant", "content": [{"type": "text", "text": "Halfway there."}]})
    return h


def to_swe(h):
    items = [{"role": "system", "content": "SYSTEM", "message_type": "system"}]
    for i, m in enumerate(h):
        c = m["content"]
        if i == 0:
            items.append({"role": "user", "content": c, "message_type": "observation", "lab": i})
        elif m["role"] == "user" and isinstance(c, list):
            items.append({"role": "tool", "content": c[0]["content"], "message_type": "observation", "lab": i})
        elif m["role"] == "user":
            items.append({"role": "user", "content": c, "message_type": "user", "lab": i})
        else:
            text = "\n".join(b["text"] for b in c if b["type"] == "text")
            kind = "action" if any(b["type"] == "tool_use" for b in c) else "thought"
            items.append({"role": "assistant", "content": text, "message_type": kind, "lab": i})
    return items


def back(item, h):
    if item["message_type"] == "system":
        return None
    if "lab" not in item:
        return {"role": item["role"], "content": item["content"]}
    orig = h[item["lab"]]
    if item["role"] == "tool":
        if item["content"] == orig["content"][0]["content"]:
            return {"ref": item["lab"]}
        return {"ref": item["lab"], "result": item["content"]}
    if item["lab"] == 0 and item["content"] != orig["content"]:
        return {"role": "user", "content": item["content"]}
    return {"ref": item["lab"]}


def spans(request):
    """Runs of unchanged consecutive history messages as `{"span": [first, last]}`."""
    out = []
    for r in request:
        if list(r) == ["ref"]:
            i = r["ref"]
            if out and "span" in out[-1] and out[-1]["span"][1] == i - 1:
                out[-1]["span"][1] = i
                continue
            r = {"span": [i, i]}
        out.append(r)
    return out


def run(procs, h, model):
    out = []
    swe = to_swe(h)
    for k in range(1, len(h) + 1):
        # The agent queries after each observation: the history ends in a tool result
        # or is the task alone.
        last = h[k - 1]
        if not (k == 1 or isinstance(last["content"], list) and last["role"] == "user"):
            continue
        view = [dict(x) for x in swe[: k + 1]]
        for p in procs:
            view = p(view)
        out.append({"calls": k, "request": spans([r for r in (back(x, h) for x in view) if r is not None])})
    return out


def main():
    SummaryMetadata = stub_modules()
    up = load(sys.argv[1], "hp_upstream")
    study = load(sys.argv[2], "hp_study")

    class Model:
        def __init__(self):
            self.contexts = []
            self.config = types.SimpleNamespace(per_instance_call_limit=0)
            self.stats = types.SimpleNamespace(api_calls=0)

        def query_for_summary(self, context, turns, *a):
            self.contexts.append(context)
            return SummaryMetadata(summary=f"S{len(self.contexts)}")

    h = history()
    result = {}
    result["swe-agent-mask-10"] = {"requests": run([up.LastNObservations(n=10)], h, None)}
    result["polling-3-n-4"] = {"requests": run([up.LastNObservations(n=4, polling=3)], h, None)}
    configs = {
        "swe-agent-summary-21-10": dict(n=21, keep_last_m_turns=10, enable_static_checkpointing=True),
        "swe-agent-hybrid": dict(n=43, keep_last_m_turns=10, enable_static_checkpointing=True),
        "summary-3-2-appending": dict(n=3, keep_last_m_turns=2, enable_static_checkpointing=False),
    }
    for name, kw in configs.items():
        model = Model()
        s = study.SummarizeEveryNTurns(**kw)
        s.set_model(model)
        procs = [s]
        if name == "swe-agent-hybrid":
            procs.append(study.LastNObservations(n=10))
        result[name] = {"requests": run(procs, h, model), "contexts": model.contexts}
    json.dump(result, sys.stdout, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
