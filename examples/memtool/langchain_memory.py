#!/usr/bin/env python3
"""LangChain's filesystem memory tool (langchain-anthropic's
`FilesystemClaudeMemoryMiddleware`) behind ctxlab.memtool/1.

The middleware maps a virtual path `/x` to `<root_path>/x` and allows only
paths under `/memories`, so its root path is the parent of the directory
ctxlab passes as `root`. Each command goes to the middleware's own handler,
with the arguments its tool function builds from the model's input: only
its declared parameters pass (so the API's `insert_text`, and `old_path` of a
rename, never reach the handlers; a rename without `path` fails validation). The exceptions that tool function catches (ValueError,
FileNotFoundError, PermissionError) are tool errors here; LangChain returns
their text to the model as ordinary content. Any other exception is reported
as an error naming its type.

Installed by `scripts/memtools.sh`. (Not named after the package: a file
beside this one called `langchain_anthropic.py` would shadow it.)
"""

import json
import os
import sys

from langchain_anthropic.middleware import FilesystemClaudeMemoryMiddleware


# The parameters of the middleware's tool function: what LangChain passes on
# from the model's input (others, such as the API's `insert_text` and
# `old_path`, are not parameters and do not reach the handlers).
PARAMS = ("file_text", "old_str", "new_str", "insert_line", "new_path", "view_range")


def args_of(command):
    if "path" not in command:
        # LangChain's tool-input validation refuses it; this text is the adapter's.
        raise ValueError("path: Field required (tool-input validation)")
    args = {"path": command["path"], "old_path": command["path"]}
    for key in PARAMS:
        if key in command:
            args[key] = command[key]
    return args


def content_of(result):
    if isinstance(result, str):
        return result
    messages = result.update.get("messages", [])
    return "\n".join(str(m.content) for m in messages)


def main():
    tool = None
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if tool is None:
            tool = FilesystemClaudeMemoryMiddleware(root_path=os.path.dirname(req["root"]))
        command = req["input"]
        answer = {"id": req["id"]}
        handler = getattr(tool, "_handle_" + command["command"], None)
        try:
            if handler is None:
                raise ValueError("Unknown command: %s" % command["command"])
            answer["result"] = content_of(handler(args_of(command), "call-%d" % req["id"]))
        except (ValueError, FileNotFoundError, PermissionError) as e:
            answer["error"] = str(e)
        except Exception as e:  # noqa: BLE001 - reported, never hidden
            answer["error"] = "%s: %s" % (type(e).__name__, e)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
