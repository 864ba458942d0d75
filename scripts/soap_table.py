#!/usr/bin/env python3
"""Markdown table of scripts/soap_eval.sh's results.csv (docs/results.md "Learned placement and partitioning").

Usage: scripts/soap_table.py OUT_DIR/results.csv [METHOD ...]
Rows: each (case, topology), then geometric means over the held-out members, the held-out family and the held-out
topologies, each method's step time over the single-device time. A method that ran out of memory is marked '*'.
"""
import csv
import math
import sys
from collections import defaultdict

path = sys.argv[1]
methods = sys.argv[2:] or ["single", "expert", "data-parallel", "tofu-dp", "mcmc-2000", "general", "soap"]
times = defaultdict(dict)
ooms = defaultdict(dict)
for r in csv.DictReader(open(path)):
    key = (r["case"], r["topology"])
    times[key][r["method"]] = float(r["step_time_ms"])
    ooms[key][r["method"]] = r["oom"] == "1"


def group_of(key):
    case, topo = key
    if topo != "dgx1-v100":
        return "held-out topology (" + topo + ")"
    return "held-out family (ptb)" if case.startswith("ptb") else "held-out members (nmt, transformer)"


print("| graph | machine | " + " | ".join(methods) + " | soap / Tofu-DP | soap / expert |")
print("|---|---|" + "---|" * (len(methods) + 2))
groups = defaultdict(list)
for key in times:
    groups[group_of(key)].append(key)
    t = times[key]
    cells = []
    for m in methods:
        cells.append(("%.2f" % t[m] + ("*" if ooms[key].get(m) else "")) if m in t else "-")
    ratio = lambda a, b: "%.3f" % (t[a] / t[b]) if a in t and b in t else "-"
    print("| %s | %s | %s | %s | %s |" % (key[0], key[1], " | ".join(cells), ratio("soap", "tofu-dp"), ratio("soap", "expert")))
for name, keys in groups.items():
    cells = []
    for m in methods:
        vals = [times[k][m] / times[k]["single"] for k in keys if m in times[k]]
        cells.append("%.3f" % math.exp(sum(map(math.log, vals)) / len(vals)) if len(vals) == len(keys) else "-")
    def gm(a, b):
        vals = [times[k][a] / times[k][b] for k in keys if a in times[k] and b in times[k]]
        return "%.3f" % math.exp(sum(map(math.log, vals)) / len(vals)) if len(vals) == len(keys) else "-"
    print("| geo. mean %s (/ single) | | %s | %s | %s |" % (name, " | ".join(cells), gm("soap", "tofu-dp"), gm("soap", "expert")))
