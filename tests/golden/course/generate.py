#!/usr/bin/env python3
"""Golden fixtures: the course's own compaction code on generated conversations.

NOT run by CI. It needs the course's `s08_context_compact/code.py` at three
revisions, which are not committed (only this generator and its outputs are):

    f9e8b28  the seed's revision, as published at tingman2/beauty-mirror-hackathon @ 8db2b3a
    main     shareAI-lab/learn-claude-code @ 182c658
    old      snake-fan/learn-claude-code @ 35a99f9 (no unseen guard)

e.g. `git -C learn-claude-code show 182c658:s08_context_compact/code.py > main.py`.
Then, from the repository root:

    python3 tests/golden/course/generate.py \\
        --code course-f9e8b28=f9e8b28.py --code course-main=main.py \\
        --code course-old=old.py --out tests/golden/course/fixtures

The code is imported unmodified. Only its environment is stubbed: the
`anthropic` and `dotenv` modules (no network, no key), the model (a
deterministic stub, below), the `bash` tool's handler (returns the scripted
result), and `uuid.uuid4` (counter-derived 32-hex names, as ctxlab names its
transcripts, so that every run is reproducible). The conversation is driven by
the course's own `agent_loop`, one call per user prompt.

The stub model answers the scripted turns in order; a `prompt_too_long` action
makes the next call raise `prompt_too_long`. As the summary model it answers
`stub summary <call>: <n> input chars, head <first 48> tail <last 48>` (ctxlab's
`Summarizer::Stub`), and raises from call `fail_from` on. Assistant content
blocks are dicts that also answer attribute access, so `json.dumps` writes them
as the API's JSON (the real SDK's objects would be written with `default=str`).

Each fixture records, per conversation: the script (ctxlab's scenario syntax),
the size estimate of every request, the history after every action (except
`prompt_too_long`, which changes nothing by itself), whether the session ended
on an exception, and every result file and archive. Paths are redacted to
`$RESULTS` / `$TRANSCRIPTS`; texts are stored as `[chars, fnv1a64]` (the exact
UTF-8 bytes hashed) to keep the fixtures small; a history also keeps its
message count, to make a mismatch easy to locate.
"""

import argparse
import contextlib
import importlib.util
import io
import json
import os
import random
import sys
import tempfile
import types
from pathlib import Path

RESULTS_SUFFIX = "/.task_outputs/tool-results"
# Results-dir lengths: 48 gives a 60-char result path for a 7-char id (short
# placeholders stay under the 120-char rule), 148 gives 160 (they do not).
RESULTS_DIR_CHARS = [48, 148]


def fnv(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def digest(text):
    return [len(text), fnv(text)]


class Block(dict):
    """An API content block: a dict for json.dumps, attributes for the loop."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(name) from e


def install_stub_modules():
    anthropic = types.ModuleType("anthropic")

    class Anthropic:
        def __init__(self, **_):
            self.messages = types.SimpleNamespace(create=None)

    anthropic.Anthropic = Anthropic
    dotenv = types.ModuleType("dotenv")
    dotenv.load_dotenv = lambda **_: None
    sys.modules["anthropic"] = anthropic
    sys.modules["dotenv"] = dotenv
    os.environ["MODEL_ID"] = "stub"
    os.environ.pop("ANTHROPIC_BASE_URL", None)


def result_text(call):
    if "text" in call:
        return call["text"]
    return call.get("fill", "X") * call.get("chars", 0)


def expand(value):
    """`{"repeat": s, "times": n}` anywhere in a script stands for `s * n`."""
    if isinstance(value, dict):
        if set(value) == {"repeat", "times"}:
            return value["repeat"] * value["times"]
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def segments(script):
    """Split a script into (prompt, queue) per user prompt."""
    out = []
    for action in script:
        if isinstance(action, dict) and "user" in action:
            out.append((action["user"], []))
        else:
            out[-1][1].append(action)
    return out


class Run:
    """One conversation through one revision of the course code."""

    def __init__(self, code_path, workdir, fail_from):
        self.workdir = workdir
        self.fail_from = fail_from
        self.summary_calls = 0
        self.summary_log = []
        self.summary_cut = False
        self.main_calls = 0
        self.requests = []
        self.histories = []
        self.pending = False
        self.queue = []
        self.outputs = []
        self.mod = self.load(code_path)

    def load(self, code_path):
        os.chdir(self.workdir)
        spec = importlib.util.spec_from_file_location("course_code", code_path)
        mod = importlib.util.module_from_spec(spec)
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(mod)
        counter = iter(range(1, 1 << 30))
        mod.uuid = types.SimpleNamespace(
            uuid4=lambda: types.SimpleNamespace(hex=f"{next(counter):032x}"))
        mod.client.messages.create = self.create
        mod.TOOL_HANDLERS["bash"] = lambda **_: self.outputs.pop(0)
        original = mod.COMPACTOR.prepare

        def prepare(messages, active_request):
            if self.pending:
                self.snapshot(messages)
            return original(messages, active_request)

        mod.COMPACTOR.prepare = prepare
        return mod

    def redact(self, text):
        return (text.replace(str(self.mod.TOOL_RESULTS_DIR), "$RESULTS")
                .replace(str(self.mod.TRANSCRIPT_DIR), "$TRANSCRIPTS"))

    def snapshot(self, messages):
        text = json.dumps(messages, default=str, ensure_ascii=False)
        self.histories.append([len(messages), *digest(self.redact(text))])
        self.pending = False

    def create(self, **kw):
        if "tools" not in kw:
            return self.summary(kw["messages"][0]["content"])
        self.main_calls += 1
        self.requests.append(self.mod.COMPACTOR.estimate_chars(kw["messages"]))
        action = self.queue.pop(0)
        if action == "prompt_too_long":
            raise RuntimeError("prompt_too_long (scripted)")
        content = []
        if action == "compact_tool":
            content.append(Block(type="tool_use", id=f"compact_{self.main_calls}",
                                 name="compact", input={}))
        else:
            turn = action["assistant"]
            if turn.get("text") is not None:
                content.append(Block(type="text", text=turn["text"]))
            for call in turn.get("calls", []):
                content.append(Block(type="tool_use", id=call["id"],
                                     name=call.get("name", "bash"), input={}))
                self.outputs.append(result_text(call))
        self.pending = True
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return types.SimpleNamespace(content=content, stop_reason=stop)

    def summary(self, text):
        call = self.summary_calls
        self.summary_calls += 1
        self.summary_log.append(self.main_calls)
        self.summary_cut |= len(text) > self.mod.ContextCompactor.SUMMARY_INPUT_CHAR_LIMIT
        if self.fail_from is not None and call >= self.fail_from:
            raise RuntimeError("summary model unavailable (injected)")
        answer = f"stub summary {call}: {len(text)} input chars, head {text[:48]} tail {text[-48:]}"
        return types.SimpleNamespace(content=[Block(type="text", text=answer)])

    def play(self, script):
        history = []
        ended = False
        with contextlib.redirect_stdout(io.StringIO()):
            for prompt, queue in segments(expand(script)):
                history.append({"role": "user", "content": prompt})
                self.snapshot(history)
                self.queue = list(queue)
                try:
                    self.mod.agent_loop(history, prompt)
                except RuntimeError:
                    self.snapshot(history)
                    ended = True
                    break
                self.snapshot(history)
        return ended

    def files(self, directory):
        d = Path(directory)
        if not d.is_dir():
            return []
        # Bytes, not read_text(): text mode would turn the course's "\r\n" into "\n".
        return [[p.name, *digest(self.redact(p.read_bytes().decode("utf-8")))]
                for p in sorted(d.iterdir())]


WORKDIRS = iter(range(1 << 16))


def workdir_for(base, results_chars):
    """A fresh workdir whose results dir is exactly `results_chars` long."""
    root = Path(base) / f"{next(WORKDIRS):04x}"
    want = results_chars - len(RESULTS_SUFFIX)
    pad = want - len(str(root))
    if pad == 1 or pad < 0:
        raise SystemExit(f"base dir {base} too long for {results_chars}")
    path = root
    while pad > 0:
        seg = min(pad - 1, 200)
        if pad - (seg + 1) == 1:
            seg -= 1
        path = path / ("p" * seg)
        pad -= seg + 1
    path.mkdir(parents=True)
    assert len(str(path)) + len(RESULTS_SUFFIX) == results_chars
    return path


def run_case(code, base, case, results_chars):
    run = Run(code, workdir_for(base, results_chars), case.get("fail_from"))
    ended = run.play(case["script"])
    return run, ended


# -- Conversations --------------------------------------------------------

class Ids:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return f"toolu_{self.n - 1}"


def turn(ids, sizes, text=None, fill="X"):
    t = {"calls": [{"id": ids(), "chars": s, "fill": fill} for s in sizes]}
    if text is not None:
        t["text"] = text
    return {"assistant": t}


def done(text="done"):
    return {"assistant": {"text": text, "calls": []}}


def limit_case(rng, last, prompt=0):
    """Results that fill the context, then one result of `last` chars."""
    ids = Ids()
    script = [{"user": {"repeat": "u", "times": prompt or rng.randrange(1, 200)}}]
    for _ in range(rng.randrange(1, 28)):
        script.append(turn(ids, [rng.choice([10, 120, 121, 500, 2_000])
                                 for _ in range(rng.randrange(1, 3))]))
    script.append(turn(ids, [last], text="last"))
    if rng.random() < 0.3:
        script.append("prompt_too_long")
    if rng.random() < 0.3:
        script.append(turn(ids, [rng.choice([10, 121, 3_000])]))
    if rng.random() < 0.3:
        script.append("compact_tool")
    script.append(done())
    if rng.random() < 0.4:
        script.append({"user": "second request"})
        script.append(turn(ids, [rng.choice([10, 200, 31_000])]))
        script.append(done("done again"))
    return script


def snip_case(rng, turns):
    """Many small turns: the history crosses snip's 50-message limit."""
    ids = Ids()
    script = [{"user": "many small steps"}]
    script.append(turn(ids, [10] * rng.randrange(1, 4)))
    for i in range(turns):
        sizes = [rng.choice([10, 121, 300])]
        script.append(turn(ids, sizes, text=None if i % 3 else f"step {i}"))
        if rng.random() < 0.05:
            script.append("prompt_too_long")
    script.append(done())
    return script


def batch_case(rng, sizes):
    """One batch near the per-item (30 000) and batch (200 000) thresholds."""
    ids = Ids()
    script = [{"user": "one big batch"}]
    for _ in range(rng.randrange(0, 5)):
        script.append(turn(ids, [rng.choice([10, 500, 5_000])]))
    script.append(turn(ids, sizes))
    script.append(turn(ids, [10]))
    if rng.random() < 0.5:
        script.append(turn(ids, [10, 20]))
    script.append(done())
    return script


def crlf_case(prompt_chars, lines):
    """Course main re-reads a saved preview in text mode: \\r\\n becomes \\n."""
    return [
        {"user": {"repeat": "p", "times": prompt_chars}},
        {"assistant": {"calls": [{"id": "toolu_0",
                                  "text": {"repeat": "crlf line\r\n", "times": lines}}]}},
        done(),
    ]


def calibrate(code, base, make, results_chars, flipped, lo=1, hi=120_000):
    """Smallest size in [lo, hi] at which `flipped(run)` holds, or None."""
    def test(size):
        run, _ = run_case(code, base, {"script": make(size)}, results_chars)
        return flipped(run)
    if not test(hi) or test(lo):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid
        else:
            lo = mid
    return hi


def cases_for(code, base, results_chars, seed):
    rng = random.Random(seed)
    out = []

    def near(name, make, flipped, fail_from=None):
        at = calibrate(code, base, make, results_chars, flipped)
        if at is None:
            return
        for d in (-1, 0, 1):
            out.append({"name": f"{name}@{d:+d}", "script": make(at + d), "fail_from": fail_from})

    for k in range(8):
        state = random.Random(seed * 100 + k).getstate()

        def make(size, state=state):
            g = random.Random()
            g.setstate(state)
            return limit_case(g, size)

        def make_prompt(size, state=state):
            g = random.Random()
            g.setstate(state)
            return limit_case(g, 200, prompt=size)
        # The auto summary right after the `last` turn: its call is the K-th.
        k_last = next(i for i, a in enumerate(make(1)) if isinstance(a, dict)
                      and a.get("assistant", {}).get("text") == "last")
        fail = [None, None, 0, 1][k % 4]
        near(f"limit{k}", make, lambda run, k=k_last: k in run.summary_log, fail)
        near(f"prompt{k}", make_prompt, lambda run, k=k_last: k in run.summary_log, fail)
        near(f"cap{k}", make, lambda run: run.summary_cut)
        # Course main: micro (over the limit, down to 80 %) and fit save files.
        for n in (1, 2, 3):
            near(f"saved{n}_{k}", make_prompt,
                 lambda run, n=n: len(run.files(run.mod.TOOL_RESULTS_DIR)) >= n)
    for turns in range(21, 28):
        out.append({"name": f"snip{turns}", "script": snip_case(rng, turns),
                    "fail_from": None})
    for sizes in ([30_000, 10], [30_001, 10], [200_000], [200_001],
                  [30_001] * 6 + [19_994], [30_001] * 6 + [19_995],
                  [30_000] * 6 + [20_001], [100_000, 100_001], [29_999, 171_000]):
        out.append({"name": f"batch{'_'.join(map(str, sizes))}",
                    "script": batch_case(rng, sizes), "fail_from": None})
    for prompt in (48_000, 48_500, 49_000):
        out.append({"name": f"crlf{prompt}", "script": crlf_case(prompt, 18_182),
                    "fail_from": None})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--code", action="append", required=True,
                    help="PROFILE=path/to/code.py (ctxlab profile name)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    install_stub_modules()
    base = tempfile.mkdtemp(dir="/tmp", prefix="g")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for spec in args.code:
        profile, code = spec.split("=", 1)
        code = str(Path(code).resolve())
        fixtures = []
        for results_chars in RESULTS_DIR_CHARS:
            for case in cases_for(code, base, results_chars, args.seed):
                run, ended = run_case(code, base, case, results_chars)
                fixtures.append({
                    **case,
                    "results_dir_chars": results_chars,
                    "requests": run.requests,
                    "histories": run.histories,
                    "ended": ended,
                    "results": run.files(run.mod.TOOL_RESULTS_DIR),
                    "archives": run.files(run.mod.TRANSCRIPT_DIR),
                })
        path = out / f"{profile}.json"
        lines = [json.dumps(f, ensure_ascii=False) for f in fixtures]
        path.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
        print(f"{path}: {len(fixtures)} conversations", file=sys.stderr)


if __name__ == "__main__":
    main()
