"""Shared inputs of the Python tests: the repository's files, and small graphs and machines."""

import os
import threading
import time
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("DEVPLACE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TOPOLOGIES = SOURCE_DIR / "configs" / "topologies"


def k80():
    import devplace
    return devplace.Topology.load(str(TOPOLOGIES / "k80-8-pcie.yaml"))


def small_graph():
    """A ~200-op training graph of the nmt family (fast to simulate, with colocation groups)."""
    import devplace
    return devplace.family("nmt", seed=1, target_ops=200)


def two_devices(memory_gib):
    """Two identical GPUs of `memory_gib` joined by one link."""
    import devplace
    return devplace.Topology.from_yaml(f"""
name: two
devices:
  - {{name: g0, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: {memory_gib}}}
  - {{name: g1, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: {memory_gib}}}
links:
  - {{between: [g0, g1], bandwidth_gbs: 25, latency_us: 2, kind: nvlink}}
""")


class CountingThread(threading.Thread):
    """A Python thread that notes the time every few hundred loops: it can only do so while no other thread holds
    the GIL. ran_inside(start, end) says whether it ran in the middle half of [start, end] (a thread holding the
    GIL through a call still lets it run for a switch interval or two at either end)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.times, self.stop = [], False

    def run(self):
        count = 0
        while not self.stop:
            count += 1
            if count % 200 == 0:
                self.times.append(time.perf_counter())

    def ran_inside(self, start, end):
        quarter = (end - start) / 4
        return any(start + quarter < t < end - quarter for t in self.times)

    def __enter__(self):
        self.start()
        while not self.times:
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.join()
