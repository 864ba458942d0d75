"""devplace: device placement of deep-learning training graphs, from Python (docs/python.md).

A thin layer over the C++ libraries: graphs, machines and strategies (Graph, Topology, Strategy), the simulator
(simulate), the search registry (search) and the placement environments in Gymnasium's shape (PlacementEnv,
PlacementVecEnv). Errors in inputs raise ValueError with the libraries' one-line message."""

import numpy as np

from . import spaces
from ._devplace import (CostModel, Graph, Op, SearchResult, SimulationResult, Strategy, Topology, family,
                        family_names, search, search_algorithms, simulate, zoo, zoo_names)
from ._devplace import _PlacementEnv, _PlacementVecEnv

__all__ = ["CostModel", "from_torch", "place", "Graph", "Op", "PlacementEnv", "PlacementVecEnv", "SearchResult", "SimulationResult",
           "Strategy", "Topology", "family", "family_names", "search", "search_algorithms", "simulate", "spaces",
           "zoo", "zoo_names"]


def from_torch(module, example_inputs, name=None, batch=None):
    """The training graph of a PyTorch nn.Module: exported through torch.onnx in memory (in eval mode, with
    `example_inputs`, a tuple of tensors, fixing the shapes) and imported like Graph.from_onnx. `batch` re-sets the
    batch dimension (docs/importers.md); the graph is named `name` (default: the module's class name)."""
    import io

    import torch

    buffer = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            torch.onnx.export(module, tuple(example_inputs), buffer)
    finally:
        module.train(was_training)
    return Graph.from_onnx_bytes(buffer.getvalue(), name or type(module).__name__, batch)


def place(graph, topology, policy=None, finetune_evals=0, seed=0, samples=0, uniform=True, coherence_passes=0):
    """Places `graph` on `topology` with a trained policy: `policy` is a checkpoint directory (RUN/ckpt; None: the
    shipped default policy, models/soap-context) or an ensemble's (ensemble.json naming checkpoints, e.g.
    models/soap-ensemble), zero-shot (greedy, or with `samples` > 0 the best of that and
    `samples` placements sampled from the policy) or fine-tuned with at most `finetune_evals` simulations (seeded by
    `seed`); `uniform` (default True) also tries the fastest uniform sample split (every group on one split, e.g.
    data parallelism, simulated while the environment is built) and keeps it when faster; False returns the policy's
    placements only (`devplace place --no-uniform`); `coherence_passes` > 0 runs the policy's
    coherence pass that many times instead of its own count (`devplace place --coherence-passes`).
    Returns (Strategy, info), info being the `devplace place --json` object (step time, OOM, evaluations, ...).

    The policy runs in LibTorch, which this module does not load (it imports in a fraction of a second), so this
    runs the devplace program's `place` command on temporary files; errors raise ValueError with its message."""
    import json
    import os
    import subprocess
    import tempfile

    from .__main__ import find_program

    program = find_program()
    if program is None:
        raise RuntimeError("devplace.place needs the devplace program (build it, or set DEVPLACE_PROGRAM)")
    with tempfile.TemporaryDirectory() as tmp:
        graph_path, topology_path, output = (os.path.join(tmp, n) for n in ("graph.json", "topology.yaml", "p.json"))
        graph.save(graph_path)
        with open(topology_path, "w") as f:
            f.write(topology.to_yaml())
        args = [program, "place", "-g", graph_path, "-t", topology_path, "-o", output, "--json", "--seed", str(seed)]
        if policy is not None:
            args += ["--policy", str(policy)]
        if finetune_evals:
            args += ["--finetune-evals", str(finetune_evals)]
        if samples:
            args += ["--samples", str(samples)]
        if not uniform:
            args.append("--no-uniform")
        if coherence_passes:
            args += ["--coherence-passes", str(coherence_passes)]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            lines = run.stderr.strip().splitlines()
            raise ValueError(lines[-1] if lines else "devplace place failed with status %d" % run.returncode)
        return Strategy.load(output, graph, topology), json.loads(run.stdout)


def _observation_space(env, batch=None):
    def box(low, high, shape, dtype):
        return spaces.Box(low, high, shape if batch is None else (batch,) + tuple(shape), dtype)
    nodes, devices = env.num_nodes, env.num_devices
    return spaces.Dict({
        "node_features": box(0.0, np.inf, (nodes, env.node_feature_dim), np.float32),
        "edge_index": box(0, nodes - 1, (2, env.num_edges), np.int32),
        "device_features": box(0.0, np.inf, (devices, env.device_feature_dim), np.float32),
        "placement": box(-1, env.num_actions - 1, (nodes,), np.int32),
        # -1 once the episode is over
        "current_node": spaces.Discrete(nodes + 1, start=-1) if batch is None else box(-1, nodes - 1, (), np.int32),
    })


class PlacementEnv(_PlacementEnv):
    """A placement MDP over one graph and machine, in the shape of a Gymnasium Env (docs/environments.md).

    PlacementEnv(graph, topology, mdp="one-shot" | "iterative", seed=0, *, initial_placement="single",
    oom_penalty=1.0, memory_aware_mask=True, data_parallel_action=False, costs=None)

    Each step places (one-shot) or moves (iterative) the observation's current_node on the device `action`;
    an episode has num_nodes steps and ends with terminated=True (truncated is always False). info["action_mask"]
    marks the legal actions (int8); an illegal action raises ValueError and changes nothing.
    Observations: node_features [nodes, 13], edge_index [2, edges], device_features [devices, 6],
    placement [nodes] (action per node, -1 unplaced) and current_node."""

    metadata = {"render_modes": []}
    render_mode = None

    def __init__(self, graph, topology, mdp="one-shot", seed=0, **options):
        super().__init__(graph, topology, mdp, seed, **options)
        self.action_space = spaces.Discrete(self.num_actions, seed=seed)
        self.observation_space = _observation_space(self)

    def close(self):
        pass


class PlacementVecEnv(_PlacementVecEnv):
    """num_envs copies of a PlacementEnv stepped together on C++ threads with the GIL released.

    PlacementVecEnv(graph, topology, num_envs, mdp="one-shot", seed=0, num_threads=0, **options)

    step(actions) takes one action per env and returns batched (obs, rewards, terminated, truncated, info);
    an env whose episode ends restarts at once (its obs is then the next episode's first), and
    info["episode_return"] / info["final_step_time"] hold the finished episode's figures (NaN elsewhere).
    Env i draws its episodes from seed + i, so results do not depend on num_threads (0: all cores)."""

    def __init__(self, graph, topology, num_envs, mdp="one-shot", seed=0, num_threads=0, **options):
        super().__init__(graph, topology, num_envs, mdp, seed, num_threads, **options)
        self.single_action_space = spaces.Discrete(self.num_actions, seed=seed)
        self.single_observation_space = _observation_space(self)
        self.observation_space = _observation_space(self, batch=num_envs)

    def close(self):
        pass
