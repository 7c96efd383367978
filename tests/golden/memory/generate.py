#!/usr/bin/env python3
"""Golden fixtures for ctxlab's memory frontmatter, made with PyYAML.

NOT run by CI. Needs PyYAML in a virtualenv outside the repository:

    python3 -m venv /tmp/pyyaml-venv && /tmp/pyyaml-venv/bin/pip install pyyaml
    /tmp/pyyaml-venv/bin/python tests/golden/memory/generate.py          # 1
    UPDATE_GOLDEN=1 cargo test --test memory memory_golden::                  # 2
    /tmp/pyyaml-venv/bin/python tests/golden/memory/generate.py          # 3

Outputs (all committed, all read by tests/memory/memory_golden.rs):
- values.json: the tricky field values (input of both sides).
- course_written/NNN.md: each value written the way the course's write path
  writes a memory file: `---`, yaml.safe_dump of name/description/type with
  allow_unicode=True and sort_keys=False (so PyYAML folds long descriptions
  and quotes `a: b`), `---`, a blank line, the body. The course's exact
  dump call is an assumption stated here; these are PyYAML's own choices.
- course_read.json: what PyYAML reads back from each course_written file.
  PyYAML does not round-trip its own output for every value (NEL, U+2029
  are YAML 1.1 line breaks), so the Rust test compares ctxlab's reading of
  these files with PyYAML's reading, not with values.json.
- ctxlab_written/NNN.md: written by step 2 (ctxlab's renderer); step 3
  reads them back with yaml.safe_load into pyyaml_read.json, which the Rust
  test compares with values.json: every value must come back identical.
"""

import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

VALUES = [
    "user-preference-tabs", "1_000", "12:30", "1:20:30", "0x1A", "0o17", "0b101",
    ".inf", "-.inf", ".nan", "1e3", "+1", "-1", "2026-12-03", "=", "<<", "~",
    "null", "Null", "yes", "No", "on", "OFF", "y", "n", "True", "FALSE",
    "a: b", "C: compiler flags", "- dash", "? q", "#hash", "x #y", "trailing ",
    " leading", "tab\there", "DEL\x7f", "ls\u2028sep", "ps\u2029sep", "nel\x85",
    "bom\ufeff", "nul\x00", "cr\rret", "quote'single", 'quote"double',
    "back\\slash", "用户偏好：缩进", "Notes…", "emoji 😀", "[list]", "{map}",
    "&anchor", "*alias", "!tag", "%pct", "@at", "`tick", "|pipe", ">gt",
    "multi\nline", "a, b. c", "Ⓐ circled", "कि",
    "A description long enough that PyYAML folds it onto a second line when it writes the course's frontmatter",
    # LINE and PARAGRAPH SEPARATOR next to line breaks: PyYAML writes them raw
    # inside single quotes, where YAML 1.1 folds the breaks around them.
    "a\u2028\nb", "a\n\u2028b", "a\u2029\n\nb", "a\n\u2028\nb", "a\u2028", "\u2029b",
    "x\u2028\u2029y", "a\u2028 \nb", "a \u2029 b", "a\n\n\u2029\n\nb", "a\r\n\u2028b",
    "PyYAML folds a description this long onto a second line even with a line separator\u2028 in the middle",
]


def memory(i, v):
    return {"name": v, "description": v, "type": "user", "body": "Body %d." % i}


def course_text(m):
    head = yaml.safe_dump(
        {"name": m["name"], "description": m["description"], "type": m["type"]},
        allow_unicode=True,
        sort_keys=False,
    )
    return "---\n" + head + "---\n\n" + m["body"] + "\n"


def read_back(text):
    """What the course's reader would take: the frontmatter via safe_load."""
    lines = text.split("\n")
    end = lines.index("---", 1)
    data = yaml.safe_load("\n".join(lines[1:end]))
    body = "\n".join(lines[end + 1:]).strip()
    return {"name": data["name"], "description": data["description"], "type": data["type"], "body": body}


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def main():
    mems = [memory(i, v) for i, v in enumerate(VALUES)]
    write(os.path.join(HERE, "values.json"), json.dumps(mems, ensure_ascii=False, indent=1) + "\n")
    course = os.path.join(HERE, "course_written")
    os.makedirs(course, exist_ok=True)
    course_read = []
    for i, m in enumerate(mems):
        text = course_text(m)
        course_read.append(read_back(text))
        write(os.path.join(course, "%03d.md" % i), text)
    write(os.path.join(HERE, "course_read.json"), json.dumps(course_read, ensure_ascii=False, indent=1) + "\n")
    changed = [i for i, (a, b) in enumerate(zip(mems, course_read)) if a != b]
    print("course write path: %d values, %d changed by PyYAML's own round trip: %s" % (len(mems), len(changed), changed))
    ours = os.path.join(HERE, "ctxlab_written")
    if not os.path.isdir(ours):
        print("no ctxlab_written/ yet: run step 2, then this script again", file=sys.stderr)
        return
    read = []
    for i in range(len(mems)):
        with open(os.path.join(ours, "%03d.md" % i), encoding="utf-8", newline="") as f:
            read.append(read_back(f.read()))
    write(os.path.join(HERE, "pyyaml_read.json"), json.dumps(read, ensure_ascii=False, indent=1) + "\n")
    bad = [i for i, (a, b) in enumerate(zip(mems, read)) if a != b]
    print("%d values, %d read back differently by PyYAML: %s" % (len(mems), len(bad), bad))


if __name__ == "__main__":
    main()
