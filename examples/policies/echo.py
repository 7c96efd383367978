"""The smallest ctxlab.policy/1 policy: it sends the history unchanged.

    lab replay SESSION --policy exec:'python3 examples/policies/echo.py'

Its replay equals `--policy none`; `make bench` times the protocol with it.
"""
import json
import sys

PROTOCOL = "ctxlab.policy/1"

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        answer = {"protocol": PROTOCOL, "summary": "sends the history unchanged"}
    else:
        answer = {"id": msg["id"]}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
