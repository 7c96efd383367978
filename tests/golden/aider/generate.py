"""Golden fixtures for `aider-chat-summary`, produced by aider's own `ChatSummary`.

Not run by CI. Needs only python3 (no network, no install):

    git -C aider show 5dc9490bb35f9729ef2c95d00a19ccd30c26339c:aider/history.py > /tmp/aider_history.py
    git -C aider show 5dc9490bb35f9729ef2c95d00a19ccd30c26339c:aider/prompts.py > /tmp/aider_prompts.py
    python3 tests/golden/aider/generate.py /tmp/aider_history.py /tmp/aider_prompts.py > tests/golden/aider/expected.json

`aider.models` and `aider.dump` are stubbed (history.py uses only the model's
`token_count`, `info`, `name` and `simple_send_with_retries`); the real
`prompts.py` is loaded. The stub model counts a message as
ceil(len(json.dumps(msg)) / 4) tokens (a list: the sum over its messages),
the lab's `Approx` counter on the same JSON, and replies with the case's
scripted summaries in order, recording the text it was sent.
"""
import importlib.util
import json
import math
import sys
import types


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Model:
    name = "stub"

    def __init__(self, replies, max_input_tokens):
        self.replies = list(replies)
        self.sent = []
        self.info = {"max_input_tokens": max_input_tokens}

    def token_count(self, messages):
        if isinstance(messages, list):
            return sum(self.token_count(m) for m in messages)
        return math.ceil(len(json.dumps(messages)) / 4)

    def simple_send_with_retries(self, messages):
        self.sent.append(messages[1]["content"])
        return self.replies.pop(0)


def chat(sizes):
    roles = ["user", "assistant"]
    return [
        {"role": roles[i % 2], "content": f"m{i} " + "w" * n}
        for i, n in enumerate(sizes)
    ]


CASES = {
    "under-budget": dict(messages=chat([10, 10, 10]), max_tokens=100, max_input_tokens=None,
                         replies=[]),
    "four-messages-summarised-whole": dict(messages=chat([200, 200, 200, 200]), max_tokens=100,
                                           max_input_tokens=None, replies=["all four"]),
    "split-keeps-a-tail": dict(messages=chat([120, 80, 100, 60, 90, 40, 30, 20, 50, 10]),
                               max_tokens=150, max_input_tokens=None, replies=["head summary"]),
    "recursion-to-depth-limit": dict(messages=chat([120, 80, 100, 60, 90, 40, 30, 20, 50, 10, 20, 30]),
                                     max_tokens=150, max_input_tokens=None,
                                     replies=["x" * 500, "y" * 500, "z" * 500, "v" * 500, "last"]),
    "head-cut-by-max-input-tokens": dict(messages=chat([300, 300, 300, 300, 300, 300, 10, 10]),
                                         max_tokens=200, max_input_tokens=700, replies=["cut"]),
}


def main():
    aider = types.ModuleType("aider")
    sys.modules["aider"] = aider
    aider.prompts = load(sys.argv[2], "aider.prompts")
    aider.models = types.ModuleType("aider.models")
    sys.modules["aider.models"] = aider.models
    dump = types.ModuleType("aider.dump")
    dump.dump = lambda *a: None
    sys.modules["aider.dump"] = dump
    history = load(sys.argv[1], "aider.history")
    out = {}
    for name, case in CASES.items():
        model = Model(case["replies"], case["max_input_tokens"])
        summary = history.ChatSummary([model], max_tokens=case["max_tokens"])
        result = summary.summarize([dict(m) for m in case["messages"]])
        out[name] = {
            "messages": case["messages"],
            "max_tokens": case["max_tokens"],
            "max_input_tokens": case["max_input_tokens"],
            "replies": case["replies"],
            "result": result,
            "sent": model.sent,
        }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
