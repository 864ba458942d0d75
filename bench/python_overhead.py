#!/usr/bin/python3
"""Python against C++ on the same simulator call (issue 24: a 10k-op graph simulated from Python costs within 10%
of the same call in C++). Results and the command are in docs/performance.md.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--build build] [--rounds 7]

Each round runs build/bench/simulate_call_bench (Google Benchmark: Simulate() on transformer seed 42 at about 10k
ops, contiguous blocks over dgx1-v100's devices, analytic costs), then times devplace.simulate() in this process
on the same graph, strategy and machine for as many calls as the C++ run made. Alternating the two in rounds
pairs them under the same machine load; the report is each round's mean time per call and the ratio of the
medians over the rounds. Both must give the same step time (the same call), or the script fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import devplace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpp_round(binary):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=1"], check=True,
                         capture_output=True, text=True).stdout
    run = json.loads(out)["benchmarks"][0]
    return run["real_time"] / 1e3, int(run["iterations"]), run["step_time_ms"], int(run["ops"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    binary = os.path.join(args.build, "bench", "simulate_call_bench")
    topology = devplace.Topology.load(os.path.join(ROOT, "configs", "topologies", "dgx1-v100.yaml"))
    graph = devplace.family("transformer", 42, 10000)
    n, d = graph.num_ops, topology.num_devices
    strategy = devplace.Strategy.from_placement([i * d // n for i in range(n)])
    cpp, py = [], []
    for r in range(args.rounds):
        cpp_seconds, calls, cpp_step_ms, cpp_ops = cpp_round(binary)
        start = time.perf_counter()
        for _ in range(calls):
            result = devplace.simulate(graph, topology, strategy)
        py_seconds = (time.perf_counter() - start) / calls
        if cpp_ops != n or abs(result.step_time * 1e3 - cpp_step_ms) > 1e-9 * cpp_step_ms:
            sys.exit(f"not the same call: C++ {cpp_ops} ops, step {cpp_step_ms} ms; "
                     f"Python {n} ops, step {result.step_time * 1e3} ms")
        cpp.append(cpp_seconds)
        py.append(py_seconds)
        print(f"round {r + 1}: C++ {cpp_seconds * 1e3:.2f} ms, Python {py_seconds * 1e3:.2f} ms per call "
              f"({calls} calls each)", flush=True)
    ratio = statistics.median(py) / statistics.median(cpp)
    print(f"{graph.name}: {n} ops, step time {result.step_time * 1e3:.6f} ms; median per call: C++ "
          f"{statistics.median(cpp) * 1e3:.2f} ms, Python {statistics.median(py) * 1e3:.2f} ms, "
          f"Python / C++ = {ratio:.3f}")


if __name__ == "__main__":
    main()
