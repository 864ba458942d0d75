#!/usr/bin/env python3
"""One line per method of scripts/soap_eval.sh's results.csv or scripts/soap_validate.sh's validation.csv
(docs/results.md Seventh pass): geometric means of step time / single-device time per set, the members lost to
the expert, and the ptb graphs' times.

Usage: scripts/soap_summary.py CSV METHOD [METHOD ...]
Sets: held-out members (nmt, transformer seeds 100-107 on dgx1-v100) and each family alone, ptb, dgx-h100,
p100-4x4-ib; validation members (nmt and transformer seeds below 100, any machine), validation RNN-LMs (rnnlm*),
validation lstmlm members (val-lstmlm) and the validation family (val-family: cifar10). A set is printed only when
every one of its cases has the method. A method that ran out of memory is marked '*'.
"""
import csv
import math
import sys
from collections import defaultdict


def set_of(case, topo):
    family, _, seed = case.rpartition("-")
    if family.startswith("rnnlm"):
        return ["val-rnnlm"]
    if not seed.isdigit():
        return []
    if family == "lstmlm":
        return ["val-lstmlm"]
    if family == "cifar10":
        return ["val-family"]
    if int(seed) < 100:
        return ["val-members", "val-" + family]
    if topo != "dgx1-v100":
        return [topo]
    return ["ptb"] if family == "ptb" else ["members", family]


ORDER = ["members", "nmt", "transformer", "ptb", "dgx-h100", "p100-4x4-ib", "val-members", "val-nmt",
         "val-transformer", "val-rnnlm", "val-lstmlm", "val-family"]


def main():
    times, ooms = defaultdict(dict), defaultdict(dict)
    for r in csv.DictReader(open(sys.argv[1])):
        times[(r["case"], r["topology"])][r["method"]] = float(r["step_time_ms"])
        ooms[(r["case"], r["topology"])][r["method"]] = r["oom"] == "1"
    sets = defaultdict(list)
    for key in times:
        for s in set_of(*key):
            sets[s].append(key)
    for m in sys.argv[2:]:
        cells = []
        for s in ORDER:
            keys = sets.get(s, [])
            if not keys or any(m not in times[k] or "single" not in times[k] for k in keys):
                continue
            logs = [math.log(times[k][m] / times[k]["single"]) for k in keys]
            cells.append("%s %.3f%s" % (s, math.exp(sum(logs) / len(logs)), "*" if any(ooms[k][m] for k in keys) else ""))
        lost = [k[0] for k in sets.get("members", []) if m in times[k] and "expert" in times[k]
                and times[k][m] > times[k]["expert"]]
        ptb = ["%s %.2f" % (k[0], times[k][m]) for k in sorted(sets.get("ptb", [])) if m in times[k]]
        print("%s: %s; members lost to the expert: %d%s%s" % (m, ", ".join(cells), len(lost),
              " (" + ", ".join(sorted(lost)) + ")" if lost else "", "; " + ", ".join(ptb) if ptb else ""))


main()
