"""Write tests/import/fixtures/openhands_events/: a scripted OpenHands V1
conversation persisted by the openhands-sdk's own event store.

Every event is built with the SDK's own event classes and appended with its
own `EventLog` on a `LocalFileStore` (`event.model_dump_json(exclude_none=True)`
to `events/event-{idx:05d}-{event_id}.json`), as a `LocalConversation`
persists its events. No LLM runs: the model's responses are scripted with
fixed ids and times, so the output is the same on every run.

Run in a Python 3.12 virtualenv with the pinned SDK:

    python3.12 -m venv /tmp/ohsdk && /tmp/ohsdk/bin/pip install openhands-sdk==1.58.2
    /tmp/ohsdk/bin/python scripts/openhands_events_fixture.py tests/import/fixtures/openhands_events

The directory's `events/` is replaced.
"""

import json
import os
import shutil
import sys
from pathlib import Path

# `forgotten_event_ids` is a set: a fixed hash seed keeps its order, and so
# the fixture, the same on every run. No network: litellm's bundled prices.
_ENV = {
    "PYTHONHASHSEED": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OPENHANDS_SUPPRESS_BANNER": "1",
}
if any(os.environ.get(k) != v for k, v in _ENV.items()):
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **_ENV})

from pydantic import Field

from openhands.sdk.conversation.event_store import EventLog
from openhands.sdk.event import (
    ActionEvent,
    AgentErrorEvent,
    Condensation,
    CondensationRequest,
    MessageEvent,
    ObservationEvent,
    SystemPromptEvent,
)
from openhands.sdk.event.conversation_state import ConversationStateUpdateEvent
from openhands.sdk.io import LocalFileStore
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.tool import Action, Observation
from openhands.sdk.tool.builtins.finish import FinishAction, FinishObservation


class ScriptedBashAction(Action):
    """A shell command (the fixture's own tool: the SDK ships none)."""

    command: str = Field(description="The command to run.")


class ScriptedBashObservation(Observation):
    """What the command printed."""


def eid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def ts(n: int) -> str:
    return f"2026-05-01T10:00:{n:02d}.000000"


def text(t: str) -> TextContent:
    return TextContent(text=t)


def action(n, response, call_id, tool, args, act, thought=""):
    return ActionEvent(
        id=eid(n),
        timestamp=ts(n),
        thought=[text(thought)] if thought else [],
        action=act,
        tool_name=tool,
        tool_call_id=call_id,
        tool_call=MessageToolCall(
            id=call_id, name=tool, arguments=json.dumps(args), origin="completion"
        ),
        llm_response_id=response,
    )


def observation(n, action_n, call_id, tool, out, is_error=False):
    cls = FinishObservation if tool == "finish" else ScriptedBashObservation
    return ObservationEvent(
        id=eid(n),
        timestamp=ts(n),
        observation=cls(content=[text(out)], is_error=is_error),
        action_id=eid(action_n),
        tool_name=tool,
        tool_call_id=call_id,
    )


def bash(n, response, call_id, command, thought=""):
    act = ScriptedBashAction(command=command)
    return action(n, response, call_id, "bash", {"command": command}, act, thought)


def events():
    return [
        SystemPromptEvent(
            id=eid(0),
            timestamp=ts(0),
            system_prompt=text("You are OpenHands agent, a helpful AI assistant."),
            tools=[],
        ),
        MessageEvent(
            id=eid(1),
            timestamp=ts(1),
            source="user",
            llm_message=Message(
                role="user", content=[text("Fix the failing test in utils.py.")]
            ),
        ),
        ConversationStateUpdateEvent(
            id=eid(2), timestamp=ts(2), key="execution_status", value="running"
        ),
        bash(3, "resp-1", "call_01", "pytest -q", "Run the tests first."),
        observation(4, 3, "call_01", "bash", "1 failed: test_parse"),
        bash(5, "resp-2", "call_02", "cat utils.py", "Look at the code and the log."),
        bash(6, "resp-2", "call_03", "git log -1"),
        observation(7, 5, "call_02", "bash", "def parse(s):\n    return int(s)\n"),
        AgentErrorEvent(
            id=eid(8),
            timestamp=ts(8),
            tool_name="bash",
            tool_call_id="call_03",
            error="git: command timed out",
        ),
        CondensationRequest(id=eid(9), timestamp=ts(9)),
        Condensation(
            id=eid(10),
            timestamp=ts(10),
            forgotten_event_ids={eid(k) for k in range(3, 9)},
            summary="USER_CONTEXT: fix test_parse. DONE: ran tests (1 failure), read utils.py.",
            summary_offset=2,
            llm_response_id="resp-condense",
        ),
        bash(11, "resp-3", "call_04", "sed -i 's/int(s)/int(s.strip())/' utils.py"),
        observation(12, 11, "call_04", "bash", ""),
        MessageEvent(
            id=eid(13),
            timestamp=ts(13),
            source="agent",
            llm_message=Message(
                role="assistant", content=[text("The parser now strips spaces.")]
            ),
            llm_response_id="resp-4",
        ),
        action(
            14,
            "resp-5",
            "call_05",
            "finish",
            {"message": "Fixed test_parse."},
            FinishAction(message="Fixed test_parse."),
        ),
        observation(15, 14, "call_05", "finish", "Fixed test_parse."),
    ]


def main() -> None:
    out = Path(sys.argv[1])
    shutil.rmtree(out / "events", ignore_errors=True)
    log = EventLog(LocalFileStore(str(out)), "events")
    for e in events():
        log.append(e)
    # The store's bookkeeping (its lock, the count marker) is not an event.
    for extra in (out / "events").glob(".*"):
        extra.unlink()


if __name__ == "__main__":
    main()
