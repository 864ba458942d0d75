"""Loading graphs, machines and strategies from Python, and the NumPy views of a graph."""

import importlib.util
import json
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

import devplace
from devplace.__main__ import find_program
from helpers import SOURCE_DIR, TOPOLOGIES, k80, small_graph


class GraphTest(unittest.TestCase):
    def test_family_is_deterministic_by_seed(self):
        a, b, c = devplace.family("nmt", 1, 200), devplace.family("nmt", 1, 200), devplace.family("nmt", 2, 200)
        self.assertEqual(a.to_json(), b.to_json())
        self.assertNotEqual(a.to_json(), c.to_json())
        self.assertIn("nmt", devplace.family_names())

    def test_zoo_model_matches_its_json(self):
        g = devplace.zoo("vgg16", batch=32)
        self.assertEqual(g.name, "vgg16-b32")
        doc = json.loads(g.to_json())
        self.assertEqual(len(doc["ops"]), g.num_ops)
        self.assertAlmostEqual(g.flops.sum(), g.total_flops, delta=g.total_flops * 1e-12)
        self.assertEqual(int(g.param_bytes.sum()), g.total_param_bytes)
        self.assertEqual([op["name"] for op in doc["ops"]], g.op_names)
        self.assertIn("resnet50", devplace.zoo_names())

    def test_edges_are_read_only_views_of_the_graph(self):
        g = small_graph()
        edges, nbytes = g.edges, g.edge_bytes
        self.assertEqual(edges.shape, (g.num_edges, 2))
        self.assertEqual(edges.dtype, np.int32)
        self.assertEqual(nbytes.dtype, np.int64)
        self.assertFalse(edges.flags.writeable)
        self.assertFalse(edges.flags.owndata)  # a view: no copy was made
        with self.assertRaises(ValueError):
            edges[0, 0] = 1
        # The same edges as the JSON form lists ([src, dst, bytes] each).
        listed = [tuple(e) for e in json.loads(g.to_json())["edges"]]
        viewed = [(int(s), int(d), int(b)) for (s, d), b in zip(edges, nbytes)]
        self.assertEqual(listed, viewed)
        # The view keeps the graph alive after the last reference goes.
        view = devplace.family("ptb", 3, 100).edges
        self.assertEqual(view.shape[1], 2)
        self.assertTrue((view >= 0).all())

    def test_save_load_round_trip_and_errors(self):
        g = small_graph()
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "g.json")
            g.save(path)
            self.assertEqual(devplace.Graph.load(path).to_json(), g.to_json())
            Path(path).write_text('{"format": "devplace.graph", "version": 1, "name": "x", "ops": 3}')
            with self.assertRaisesRegex(ValueError, "g.json"):
                devplace.Graph.load(path)
        with self.assertRaisesRegex(ValueError, "unknown"):
            devplace.zoo("no-such-model")

    def test_onnx_import(self):
        g = devplace.Graph.from_onnx(str(SOURCE_DIR / "datasets" / "onnx" / "alexnet.onnx"), batch=8)
        self.assertGreater(g.num_ops, 10)
        self.assertGreater(g.total_param_bytes, 200e6)  # AlexNet has about 61 M parameters
        with self.assertRaises(ValueError):
            devplace.Graph.from_onnx(str(SOURCE_DIR / "datasets" / "onnx" / "alexnet.reference.json"))

    @unittest.skipUnless(importlib.util.find_spec("torch"), "needs PyTorch (Debian's python3-torch)")
    def test_from_torch(self):
        import torch
        module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        g = devplace.from_torch(module, (torch.randn(8, 16),), name="mlp")
        self.assertEqual(g.name, "mlp")
        self.assertEqual(g.total_param_bytes, 4 * sum(p.numel() for p in module.parameters()))
        forward = g.flops[g.roles == 0].sum()
        self.assertGreaterEqual(forward, 2 * 8 * (16 * 32 + 32 * 4))  # the two matmuls, at least
        self.assertLess(forward, 2 * 2 * 8 * (16 * 32 + 32 * 4))
        self.assertGreater(g.flops.sum(), 2 * forward)  # backward and update ops were derived
        self.assertTrue(module.training)  # the module's mode is restored
        bigger = devplace.from_torch(module, (torch.randn(8, 16),), batch=64)
        self.assertAlmostEqual(bigger.flops[bigger.roles == 0].sum() / forward, 8.0, delta=0.01)
        with self.assertRaises(ValueError):
            devplace.Graph.from_onnx_bytes(b"not a model")

    def test_op_accessors(self):
        g = small_graph()
        op = g.op(0)
        self.assertEqual(g.find(op.name), 0)
        self.assertEqual(g.find("no such op"), -1)
        self.assertEqual(op.role, "forward")
        self.assertEqual(sorted(g.topological_order.tolist()), list(range(g.num_ops)))
        with self.assertRaises(IndexError):
            g.op(g.num_ops)


class DotTest(unittest.TestCase):
    def test_python_and_cli_draw_the_same(self):
        g, t = small_graph(), k80()
        s = devplace.search("round-robin", g, t).strategy
        dot = g.to_dot(t, s)
        self.assertTrue(dot.startswith('digraph "%s"' % g.name))
        self.assertEqual(dot.count(" -> "), g.num_edges)
        self.assertIn("subgraph cluster_group", dot)
        self.assertEqual(dot.count("subgraph cluster_legend"), 1)
        collapsed = g.to_dot(t, s, max_ops=10)
        self.assertIn("layer0 [label=", collapsed)
        self.assertLess(collapsed.count("\n"), dot.count("\n"))
        self.assertNotIn("cluster_group", collapsed)
        with tempfile.TemporaryDirectory() as tmp:
            gp, pp, out = (str(Path(tmp) / n) for n in ("g.json", "p.json", "g.dot"))
            g.save(gp)
            s.save(pp, g, t)
            topo = str(TOPOLOGIES / "k80-8-pcie.yaml")
            cli = subprocess.run([find_program(), "graph", "export", gp, "--format", "dot", "-t", topo, "-p", pp],
                                 check=True, capture_output=True, text=True).stdout
            self.assertEqual(cli, dot)
            subprocess.run([find_program(), "graph", "export", gp, "--max-ops", "10", "-o", out], check=True,
                           capture_output=True)
            self.assertEqual(Path(out).read_text(), g.to_dot(max_ops=10))
            bad = subprocess.run([find_program(), "graph", "export", gp, "-p", pp], capture_output=True, text=True)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("--topology", bad.stderr)
        with self.assertRaises(ValueError):
            g.to_dot(None, s)


class TopologyStrategyTest(unittest.TestCase):
    def test_topology(self):
        t = k80()
        self.assertEqual(t.num_devices, 8)
        self.assertEqual(t.find_device("gpu3"), 3)
        self.assertEqual(devplace.Topology.from_yaml(t.to_yaml()).to_yaml(), t.to_yaml())
        with self.assertRaisesRegex(ValueError, "nope.yaml"):
            devplace.Topology.load(str(TOPOLOGIES / "nope.yaml"))

    def test_strategy_round_trip_and_validation(self):
        g, t = small_graph(), k80()
        s = devplace.search("round-robin", g, t).strategy
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "p.json")
            s.save(path, g, t)
            self.assertEqual(devplace.Strategy.load(path, g, t), s)
        self.assertTrue(s.is_plain_placement)
        self.assertEqual(len(set(s.placement.tolist())), 8)
        bad = devplace.Strategy.from_placement([9] * g.num_ops)
        with self.assertRaisesRegex(ValueError, "device 9"):
            bad.validate(g, t)


if __name__ == "__main__":
    unittest.main()
