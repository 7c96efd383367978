"""Golden fixtures for `langchain-summarization` and `langchain-clear-tool-uses`,
produced by the `langchain` package itself.

Not run by CI. Installs into a temporary virtual environment outside the repo:

    python3 -m venv /tmp/lc && /tmp/lc/bin/pip install langchain==1.5.0
    /tmp/lc/bin/python tests/golden/langchain/generate.py > tests/golden/langchain/expected.json

The scripted histories are built here in the lab's (Anthropic) shape, turned
into LangChain messages (one ToolMessage per result), run through
`SummarizationMiddleware.before_model` (with a `summarizer` function that
answers `S1`, `S2`, ... and records how many messages it got) and through
`ClearToolUsesEdit.apply`, and turned back. The token counter counts as the
lab's `Approx` does on the same messages: ceil(chars / 4) per text, per tool
name, per compact JSON input and per result.
"""
import json
import math
import sys

from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage


def ceil4(s):
    return math.ceil(len(s) / 4)


def count(messages):
    total = 0
    for m in messages:
        if isinstance(m, AIMessage):
            total += ceil4(m.content) if m.content else 0
            for c in m.tool_calls:
                total += ceil4(c["name"]) + ceil4(json.dumps(c["args"], separators=(",", ":")))
        else:
            total += ceil4(m.content)
    return total


def history(steps, parallel_every):
    """Task, then steps; every `parallel_every`-th step calls three tools at once."""
    h = [{"role": "user", "content": "task: fix the parser"}]
    for s in range(steps):
        n = 3 if parallel_every and s % parallel_every == parallel_every - 1 else 1
        ids = [f"c{s}_{k}" for k in range(n)]
        h.append({"role": "assistant", "content": [{"type": "text", "text": f"step {s}"}] + [
            {"type": "tool_use", "id": i, "name": "grep" if k else "bash", "input": {"q": f"q{s}"}}
            for k, i in enumerate(ids)]})
        h.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": f"result {i} " + "x" * (20 + 7 * s)}
            for i in ids]})
    return h


def to_lc(h):
    out = []
    for m in h:
        c = m["content"]
        if m["role"] == "assistant":
            text = "".join(b["text"] for b in c if b["type"] == "text")
            calls = [{"name": b["name"], "args": b["input"], "id": b["id"], "type": "tool_call"}
                     for b in c if b["type"] == "tool_use"]
            out.append(AIMessage(content=text, tool_calls=calls))
        elif isinstance(c, list):
            for b in c:
                out.append(ToolMessage(content=b["content"], tool_call_id=b["tool_use_id"]))
        else:
            out.append(HumanMessage(content=c))
    return out


def from_lc(msgs):
    out = []
    for m in msgs:
        if isinstance(m, ToolMessage):
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif isinstance(m, AIMessage):
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                       for c in m.tool_calls]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m.content})
    return out


def summarise(h, trigger, keep):
    seen = []

    def summarizer(messages):
        seen.append(len(messages))
        return f"S{len(seen)}"

    mw = SummarizationMiddleware(
        FakeListChatModel(responses=["unused"]),
        trigger=("tokens", trigger),
        keep=("messages", keep),
        token_counter=count,
        trim_tokens_to_summarize=None,
        summarizer=summarizer,
    )
    update = mw.before_model({"messages": to_lc(h)}, None)
    if update is None:
        return {"result": h, "summarised": seen}
    msgs = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
    return {"result": from_lc(msgs), "summarised": seen}


def clear(h, **kw):
    msgs = to_lc(h)
    ClearToolUsesEdit(**kw).apply(msgs, count_tokens=count)
    return {"result": from_lc(msgs)}


def main():
    cases = {}
    for name, (steps, par, trigger, keep) in {
        "under-trigger": (4, 0, 10_000, 3),
        "cut-on-an-ai-message": (8, 0, 100, 6),
        "cut-inside-parallel-results": (8, 3, 100, 5),
        "keep-everything": (3, 0, 10, 50),
    }.items():
        h = history(steps, par)
        cases["summarization/" + name] = dict(history=h, trigger=trigger, keep=keep,
                                              **summarise(h, trigger, keep))
    for name, (steps, par, kw) in {
        "defaults-under-trigger": (6, 0, {}),
        "keep-2": (6, 3, dict(trigger=50, keep=2)),
        "clear-at-least": (6, 0, dict(trigger=50, keep=0, clear_at_least=30)),
        "exclude-and-inputs": (6, 3, dict(trigger=50, keep=1, exclude_tools=["grep"],
                                          clear_tool_inputs=True)),
    }.items():
        h = history(steps, par)
        cases["clear/" + name] = dict(history=h, edit=kw, **clear(h, **kw))
    json.dump(cases, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
