"""LangChain's ClearToolUsesEdit, run live as a ctxlab.policy/1 policy.

    pip install langchain==1.5.0
    lab replay SESSION --policy exec:'python3 examples/policies/langchain_clear_tool_uses.py'

Each model call, the history is turned into LangChain messages (one
ToolMessage per tool result), `ClearToolUsesEdit().apply` edits that list
as `ContextEditingMiddleware` does before each model call, and every result
it cleared is cleared in a copy of the history: the request. The token
counter is ctxlab's (the `prepare` line's `tokens.history`), as the built-in
port `langchain-clear-tool-uses` counts; with the defaults
(`clear_at_least` 0) `apply` counts once, before it edits.
"""
import copy
import json
import sys

from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

PROTOCOL = "ctxlab.policy/1"
EDIT = ClearToolUsesEdit()


def blocks(message):
    content = message["content"]
    return content if isinstance(content, list) else []


def to_lc(history):
    """LangChain messages, and for each ToolMessage where its result sits."""
    out, where = [], {}
    for i, m in enumerate(history):
        if m["role"] == "assistant":
            calls = [
                {"name": b["name"], "id": b["id"], "type": "tool_call",
                 "args": b["input"] if isinstance(b["input"], dict) else {"input": b["input"]}}
                for b in blocks(m) if b["type"] == "tool_use"
            ]
            out.append(AIMessage(content="", tool_calls=calls))
            continue
        results = [(j, b) for j, b in enumerate(blocks(m)) if b["type"] == "tool_result"]
        for j, b in results:
            where[len(out)] = (i, j)
            out.append(ToolMessage(content=b["content"], tool_call_id=b["tool_use_id"]))
        if not results or len(results) < len(blocks(m)):
            out.append(HumanMessage(content="(text)"))
    return out, where


def prepare(history, tokens):
    lc, where = to_lc(history)
    before = list(lc)
    EDIT.apply(lc, count_tokens=lambda _messages: tokens)
    request, events = None, []
    for k, (old, new) in enumerate(zip(before, lc)):
        if new is old or k not in where:
            continue
        request = request or copy.deepcopy(history)
        i, j = where[k]
        request[i]["content"][j]["content"] = new.content
        events.append({"event": "cleared", "id": new.tool_call_id, "part": "result",
                       "placeholder": EDIT.placeholder})
    return request, events


def main():
    history = []
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            answer = {"protocol": PROTOCOL, "summary": "LangChain ClearToolUsesEdit (live)",
                      "constants": {"trigger": EDIT.trigger, "keep": EDIT.keep,
                                    "placeholder": EDIT.placeholder}}
        else:
            history = history[: msg["keep"]] + msg["append"]
            request, events = prepare(history, msg["tokens"]["history"])
            answer = {"id": msg["id"], "events": events}
            if request is not None:
                answer["request"] = request
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


main()
