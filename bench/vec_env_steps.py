#!/usr/bin/python3
"""Environment steps per second of devplace.PlacementVecEnv, with the Python loop choosing random legal actions
(docs/python.md has the figures):

    PYTHONPATH=build/python /usr/bin/python3 bench/vec_env_steps.py --mdp one-shot --threads 2

8 environments of the nmt family (seed 1, about 2,000 ops) on dgx1-v100; prints steps per second over all
environments and the process's CPU time over wall time.
"""
import argparse
import os
import time

import numpy as np

import devplace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mdp", default="one-shot", choices=["one-shot", "iterative"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    topology = devplace.Topology.load(os.path.join(ROOT, "configs", "topologies", "dgx1-v100.yaml"))
    graph = devplace.family("nmt", 1, 2000)
    vec = devplace.PlacementVecEnv(graph, topology, args.envs, args.mdp, seed=0, num_threads=args.threads)
    _, info = vec.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < args.seconds:
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]], dtype=np.int32)
        _, _, _, _, info = vec.step(actions)
        steps += args.envs
    wall = time.perf_counter() - wall0
    print(f"{args.mdp}, {args.threads} thread(s), {graph.num_ops} ops: {steps / wall:.0f} env steps/s, "
          f"cpu/wall {(time.process_time() - cpu0) / wall:.2f}")


if __name__ == "__main__":
    main()
