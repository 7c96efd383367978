"""Drive the Python prototype's probe over the oracle grid in one process.

Usage: python3 oracle.py PROTOTYPE_DIR LMIN LMAX
Prints one JSON object: cells, seconds (wall), cpu_seconds (user + system), user_seconds (the
interpreter's own CPU time: no kernel time, no time of the child processes its tools run), per cell the verdict triple
(lost_forever, pointer_lost, pairs_intact), and per cell its wall seconds (cell_seconds). Runs in a temp dir: roots are
relative padding folders, so `root/tool-results/a1.txt` is exactly L chars.
"""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
os.chdir(sys.argv[1])
import cc_harness_lab as lab  # noqa: E402

CONFIGS = [
    {},
    {"compact_order_swapped": True},
    {"pair_protection": False},
    {"compact_order_swapped": True, "unseen_guard": False},
    {"unseen_guard": False},
]
SUFFIX = len("/tool-results/a1.txt")
lo, hi = int(sys.argv[2]), int(sys.argv[3])
cells = []
cell_seconds = []
start = time.perf_counter()
cpu_start = time.process_time()
user_start = os.times().user
for changes in CONFIGS:
    for name, value in changes.items():
        setattr(lab.SW, name, value)
    for length in range(lo, hi + 1):
        root = lab.Path("r" * (length - SUFFIX))
        t = time.perf_counter()
        out = lab.probe(root)
        cell_seconds.append(time.perf_counter() - t)
        cells.append([out["lost_forever"], out["pointer_lost"], out["pairs_intact"]])
    for name in changes:
        setattr(lab.SW, name, getattr(lab.Switches(), name))
seconds = time.perf_counter() - start
cpu_seconds = time.process_time() - cpu_start
user_seconds = os.times().user - user_start
print(json.dumps({"cells": len(cells), "seconds": seconds, "cpu_seconds": cpu_seconds,
                  "user_seconds": user_seconds, "verdicts": cells,
                  "cell_seconds": cell_seconds}))
