"""Write the two scripted sessions of the Inspect golden (Anthropic Messages
JSON, read by the lab's `anthropic` importer): `agent.json`, an agent at work
(reasoning, parallel calls, text beside results, a user interjection, a
`memory` call, results of every size), and `reused_id.json`, an aborted call
whose id the agent uses again later (the case where upstream's trim keeps a
call without its result), and `aborted.json`, the same without the reuse
(upstream's trim drops the unanswered call). Run by generate.sh; deterministic."""
import json
import random

rng = random.Random(49)
WORDS = "alpha beta gamma delta error fixed test passed függvény 配置 path src/lib.rs line".split()


def text(n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def call(cid, name="bash", **args):
    return {"type": "tool_use", "id": cid, "name": name, "input": args or {"command": f"run {cid}"}}


def agent():
    m = [{"role": "user", "content": "Fix the failing test in src/lib.rs and keep notes."}]
    for s in range(24):
        blocks = [{"type": "thinking", "thinking": text(12)}, {"type": "text", "text": f"Step {s}: " + text(6)}]
        ids = [f"toolu_{s:02d}a"] + ([f"toolu_{s:02d}b"] if s % 5 == 2 else [])
        if s == 15:
            blocks.append(call(ids[0], "memory", command="create", path="/memories/notes.md", file_text=text(80)))
        else:
            blocks += [call(i) for i in ids]
        m.append({"role": "assistant", "content": blocks})
        results = [{"type": "tool_result", "tool_use_id": i, "content": text(rng.choice([20, 80, 200, 400]))} for i in ids]
        if s == 12:
            results.append({"type": "text", "text": "Also run the doc tests."})
        m.append({"role": "user", "content": results})
        if s == 9:
            m.append({"role": "assistant", "content": [{"type": "text", "text": "Shall I go on?"}]})
            m.append({"role": "user", "content": "Yes, and do not touch the CI config."})
    m.append({"role": "assistant", "content": [{"type": "text", "text": "Done: the test passes."}]})
    return m


def aborted(reuse):
    m = [{"role": "user", "content": "List the files, then count the lines."}]
    m.append({"role": "assistant", "content": [call("call_1")]})
    m.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": text(150)}]})
    # The reply is aborted: its call never gets a result.
    m.append({"role": "assistant", "content": [{"type": "text", "text": "Counting."}, call("call_2")]})
    m.append({"role": "user", "content": "[Request interrupted by user] go on"})
    # With `reuse` the agent numbers its calls per turn: call_2 again.
    for s in range(2, 7):
        cid = f"call_{s}" if reuse else f"call_{s + 5}"
        m.append({"role": "assistant", "content": [call(cid)]})
        m.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": text(150)}]})
    m.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    return m


for name, session in [("agent.json", agent()), ("reused_id.json", aborted(True)), ("aborted.json", aborted(False))]:
    with open(name, "w", encoding="utf-8") as f:
        json.dump({"messages": session}, f, indent=1, ensure_ascii=False)
        f.write("\n")
