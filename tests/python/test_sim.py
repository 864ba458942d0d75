"""simulate() and search() from Python agree with the C++ program."""

import json
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import numpy as np

import devplace
from devplace.__main__ import find_program
from helpers import TOPOLOGIES, CountingThread, k80, small_graph


class SimulateTest(unittest.TestCase):
    def test_single_device(self):
        g, t = small_graph(), k80()
        r = devplace.simulate(g, t, devplace.Strategy.all_on(g, 2))
        self.assertGreater(r.step_time, 0)
        self.assertFalse(r.oom)
        self.assertEqual(r.bytes_moved, 0)
        busy = r.busy_time
        self.assertEqual(busy.shape, (8,))
        self.assertGreater(busy[2], 0)
        self.assertEqual(np.count_nonzero(busy), 1)
        self.assertAlmostEqual(r.step_time, busy[2], delta=busy[2] * 1e-9)  # one device: no gaps
        self.assertEqual(np.flatnonzero(r.peak_memory).tolist(), [2])

    def test_matches_the_cli_and_writes_a_trace(self):
        g, t = small_graph(), k80()
        s = devplace.search("round-robin", g, t).strategy
        r = devplace.simulate(g, t, s, trace=True)
        self.assertGreater(r.bytes_moved, 0)
        with tempfile.TemporaryDirectory() as tmp:
            gp, pp, trace = (str(Path(tmp) / n) for n in ("g.json", "p.json", "trace.json"))
            g.save(gp)
            s.save(pp, g, t)
            out = subprocess.run([find_program(), "simulate", "-g", gp, "-t", str(TOPOLOGIES / "k80-8-pcie.yaml"),
                                  "-p", pp, "--json"], check=True, capture_output=True, text=True).stdout
            cli = json.loads(out)
            self.assertEqual(cli["step_time_ms"], r.step_time * 1e3)
            self.assertEqual(cli["bytes_moved"], r.bytes_moved)
            self.assertEqual([cli["peak_memory_bytes"][d] for d in t.device_names], r.peak_memory.tolist())
            r.write_trace(trace)
            events = json.loads(Path(trace).read_text())["traceEvents"]
            self.assertGreater(len(events), g.num_ops)
        with self.assertRaisesRegex(ValueError, "trace=True"):
            devplace.simulate(g, t, s).write_trace("/tmp/never-written.json")

    def test_invalid_strategy_raises(self):
        g, t = small_graph(), k80()
        with self.assertRaises(ValueError):
            devplace.simulate(g, t, devplace.Strategy.from_placement([0] * (g.num_ops - 1)))


class SearchTest(unittest.TestCase):
    def test_baselines_give_valid_strategies(self):
        g, t = small_graph(), k80()
        for algo in ("single", "round-robin", "expert", "m-etf"):
            with self.subTest(algo=algo):
                result = devplace.search(algo, g, t, seed=1)
                result.strategy.validate(g, t)
                self.assertGreater(devplace.simulate(g, t, result.strategy).step_time, 0)

    def test_mcmc_respects_budget_and_seed(self):
        g, t = small_graph(), k80()
        a = devplace.search("mcmc", g, t, budget_evals=150, seed=4)
        b = devplace.search("mcmc", g, t, budget_evals=150, seed=4)
        self.assertLessEqual(a.evaluations, 150)
        self.assertEqual(a.strategy, b.strategy)
        start = devplace.search("single", g, t).strategy
        refined = devplace.search("mcmc", g, t, budget_evals=150, seed=4, initial=start).strategy
        self.assertLessEqual(devplace.simulate(g, t, refined).step_time, devplace.simulate(g, t, start).step_time)

    def test_search_releases_the_gil(self):
        g, t = small_graph(), k80()
        with CountingThread() as counter:
            start = time.perf_counter()
            devplace.search("mcmc", g, t, budget_evals=3000, seed=1)
            end = time.perf_counter()
        self.assertGreater(end - start, 0.03)  # a few 5 ms switch intervals at least
        self.assertTrue(counter.ran_inside(start, end))  # another Python thread ran while the C++ search did

    def test_unknown_algorithm_lists_the_known_ones(self):
        with self.assertRaisesRegex(ValueError, "mcmc"):
            devplace.search("no-such-algo", small_graph(), k80())
        self.assertIn("mcmc", devplace.search_algorithms())


class CliTest(unittest.TestCase):
    def test_python_m_devplace_runs_the_program(self):
        out = subprocess.run([sys.executable, "-m", "devplace", "--help"], check=True, capture_output=True,
                             text=True).stdout
        self.assertIn("simulate", out)
        bad = subprocess.run([sys.executable, "-m", "devplace", "graph", "info", "/nonexistent.json"],
                             capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("/nonexistent.json", bad.stderr)


if __name__ == "__main__":
    unittest.main()


class PlaceTest(unittest.TestCase):
    def test_zero_shot_with_the_shipped_policy_matches_the_cli(self):
        g = devplace.family("nmt", 3, 300)
        t = devplace.Topology.load(str(Path(__file__).resolve().parents[2] / "configs/topologies/dgx1-v100.yaml"))
        strategy, info = devplace.place(g, t)
        self.assertEqual(info["graph"], g.name)
        self.assertGreater(info["step_time"], 0)
        simulated = devplace.simulate(g, t, strategy)
        self.assertAlmostEqual(simulated.step_time, info["step_time"], delta=info["step_time"] * 1e-9)
        again, _ = devplace.place(g, t)
        self.assertEqual(again.to_json(g, t), strategy.to_json(g, t))
        # By default the fastest uniform split (simulated while the environment was built) is kept when it beats
        # the policy; uniform=False is the policy's own placement, with the same number of evaluations.
        plain, plain_info = devplace.place(g, t, uniform=False)
        self.assertEqual(plain_info["uniform_step_time"], 0)
        self.assertGreater(info["uniform_step_time"], 0)
        self.assertEqual(info["evaluations"], plain_info["evaluations"])
        self.assertEqual(info["zero_shot_step_time"], plain_info["step_time"])
        self.assertEqual(info["step_time"], min(plain_info["step_time"], info["uniform_step_time"]))
        self.assertAlmostEqual(devplace.simulate(g, t, plain).step_time, plain_info["step_time"],
                               delta=plain_info["step_time"] * 1e-9)
        sampled, sampled_info = devplace.place(g, t, samples=4, seed=1, uniform=False)
        self.assertEqual(sampled_info["evaluations"], 5)
        self.assertEqual(sampled_info["zero_shot_step_time"], plain_info["step_time"])
        self.assertLessEqual(sampled_info["step_time"], plain_info["step_time"])
        self.assertAlmostEqual(devplace.simulate(g, t, sampled).step_time, sampled_info["step_time"],
                               delta=sampled_info["step_time"] * 1e-9)
        # The shipped policy decodes its coherence pass twice; once is the CLI's --coherence-passes 1.
        once, once_info = devplace.place(g, t, coherence_passes=1)
        self.assertAlmostEqual(devplace.simulate(g, t, once).step_time, once_info["step_time"],
                               delta=once_info["step_time"] * 1e-9)
        with self.assertRaises(ValueError) as raised:
            devplace.place(g, t, coherence_passes=9)
        self.assertIn("--coherence-passes", str(raised.exception))

    def test_bad_policy_raises_with_the_programs_message(self):
        g, t = small_graph(), k80()
        with self.assertRaises(ValueError) as raised:
            devplace.place(g, t, policy="/nonexistent/ckpt")
        self.assertIn("/nonexistent/ckpt", str(raised.exception))
