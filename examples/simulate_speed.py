#!/usr/bin/env python3
"""Python half of the Python-overhead measurement (docs/python.md): times devplace.simulate() on the same graph and
strategy as examples/simulate_speed.cc.

    PYTHONPATH=build/python python3 examples/simulate_speed.py configs/topologies/dgx1-v100.yaml transformer 10000 20
"""

import sys
import time

import numpy as np

import devplace


def main():
    topology_path, family, target_ops, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    topology = devplace.Topology.load(topology_path)
    graph = devplace.family(family, 42, target_ops)
    n, d = graph.num_ops, topology.num_devices
    strategy = devplace.Strategy.from_placement([i * d // n for i in range(n)])
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = devplace.simulate(graph, topology, strategy)
        seconds.append(time.perf_counter() - start)
    print(f"{graph.name}: {n} ops, step time {result.step_time * 1e3:.6f} ms, "
          f"simulate median {np.median(seconds) * 1e3:.3f} ms over {repeats} runs")


if __name__ == "__main__":
    main()
