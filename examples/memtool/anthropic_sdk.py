#!/usr/bin/env python3
"""The Anthropic Python SDK's own memory tool behind ctxlab.memtool/1.

`BetaLocalFilesystemMemoryTool` (anthropic.lib.tools) keeps `/memories` in
`<base_path>/memories`; ctxlab passes that directory as each request's
`root`, so the SDK's base path is its parent. Every command goes through the
SDK's own `call` (its dispatch and validation); a `ToolError` is the tool's
error text, as the SDK's tool runner returns it; any other exception is
reported as an error naming its type (the runner would surface it too).

Installed by `scripts/memtools.sh`; run by
`lab memcheck --exec 'VENV/bin/python examples/memtool/anthropic_sdk.py'`.
"""

import json
import os
import sys

from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from anthropic.lib.tools._beta_functions import ToolError


def main():
    tool = None
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if tool is None:
            tool = BetaLocalFilesystemMemoryTool(base_path=os.path.dirname(req["root"]))
        answer = {"id": req["id"]}
        try:
            result = tool.call(req["input"])
            answer["result"] = result if isinstance(result, str) else json.dumps(result)
        except ToolError as e:
            answer["error"] = str(e)
        except Exception as e:  # noqa: BLE001 - reported, never hidden
            answer["error"] = "%s: %s" % (type(e).__name__, e)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
