#!/usr/bin/env python3
"""Bring your own agent: a small PPO loop in PyTorch against devplace's PlacementVecEnv (docs/python.md).

The policy sees, at each step, the features of the node to place, of its neighbourhood (mean over the nodes it
exchanges data with) and of every device (including the load placed there so far), and scores the devices with a
shared MLP; illegal devices are masked out. PPO with GAE, clipping, value and entropy terms.

    PYTHONPATH=build/python python3 examples/ppo.py --family nmt --seed 1 --target-ops 200 --iterations 30

Prints, per iteration, the mean return of the episodes that finished and the best simulated step time so far,
against the best single device's step time."""

import argparse
import time

import numpy as np
import torch
from torch import nn

import devplace


class Policy(nn.Module):
    """Scores each device for the current node from (node, neighbourhood, device) features; a value head reads
    the node, neighbourhood and the machine's mean device features."""

    def __init__(self, node_dim, device_dim, hidden=64):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(2 * node_dim + device_dim, hidden), nn.Tanh(),
                                   nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.value = nn.Sequential(nn.Linear(2 * node_dim + device_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, node, neighbourhood, devices, mask):
        # node, neighbourhood: [B, F]; devices: [B, D, Fd]; mask: [B, D] (bool)
        context = torch.cat([node, neighbourhood], dim=1)
        d = devices.shape[1]
        logits = self.score(torch.cat([context.unsqueeze(1).expand(-1, d, -1), devices], dim=2)).squeeze(2)
        logits = logits.masked_fill(~mask, -1e9)
        value = self.value(torch.cat([context, devices.mean(dim=1)], dim=1)).squeeze(1)
        return logits, value


def features(obs, adjacency):
    """Tensors of the current node, its neighbourhood and the devices, from a batched observation."""
    current = np.maximum(obs["current_node"], 0)
    nodes = obs["node_features"]                       # [N, G, F]
    rows = np.arange(nodes.shape[0])
    node = nodes[rows, current]
    neighbourhood = np.einsum("ng,ngf->nf", adjacency[current], nodes)
    return (torch.from_numpy(node), torch.from_numpy(neighbourhood.astype(np.float32)),
            torch.from_numpy(obs["device_features"]))


def normalised_adjacency(edge_index, num_nodes):
    a = np.zeros((num_nodes, num_nodes), dtype=np.float32)
    a[edge_index[0], edge_index[1]] = 1
    a[edge_index[1], edge_index[0]] = 1
    return a / np.maximum(a.sum(axis=1, keepdims=True), 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="nmt")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target-ops", type=int, default=200)
    parser.add_argument("--topology", default="configs/topologies/k80-8-pcie.yaml")
    parser.add_argument("--mdp", default="one-shot", choices=["one-shot", "iterative"])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    graph = devplace.family(args.family, args.seed, args.target_ops)
    topology = devplace.Topology.load(args.topology)
    env = devplace.PlacementVecEnv(graph, topology, args.envs, args.mdp, seed=args.seed)
    single = min(devplace.simulate(graph, topology, devplace.Strategy.all_on(graph, d)).step_time
                 for d in range(topology.num_devices))
    print(f"{graph.name}: {graph.num_ops} ops, {env.num_nodes} nodes to place on {topology.num_devices} devices; "
          f"best single device {single * 1e3:.3f} ms")

    policy = Policy(env.node_feature_dim, env.device_feature_dim)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    obs, info = env.reset()
    adjacency = normalised_adjacency(obs["edge_index"][0], env.num_nodes)
    horizon = env.num_nodes  # one whole episode per env per iteration
    best = float("inf")
    start = time.time()
    for iteration in range(args.iterations):
        batch = {k: [] for k in ("node", "neigh", "dev", "mask", "action", "logp", "value", "reward", "done")}
        returns = []
        with torch.no_grad():
            for _ in range(horizon):
                node, neigh, dev = features(obs, adjacency)
                mask = torch.from_numpy(info["action_mask"].astype(bool))
                logits, value = policy(node, neigh, dev, mask)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
                obs, reward, terminated, _, info = env.step(action.numpy().astype(np.int32))
                for k, v in (("node", node), ("neigh", neigh), ("dev", dev), ("mask", mask), ("action", action),
                             ("logp", dist.log_prob(action)), ("value", value),
                             ("reward", torch.from_numpy(reward).float()),
                             ("done", torch.from_numpy(terminated).float())):
                    batch[k].append(v)
                finished = ~np.isnan(info["episode_return"])
                returns += info["episode_return"][finished].tolist()
                if finished.any():
                    best = min(best, float(info["final_step_time"][finished].min()))
        # GAE over the horizon (gamma 1: the return is the episode's reward; lambda 0.95).
        rewards, values, dones = (torch.stack(batch[k]) for k in ("reward", "value", "done"))
        advantages = torch.zeros_like(rewards)
        last = torch.zeros(args.envs)
        for t in reversed(range(horizon)):
            next_value = values[t + 1] if t + 1 < horizon else torch.zeros(args.envs)
            delta = rewards[t] + next_value * (1 - dones[t]) - values[t]
            last = delta + 0.95 * (1 - dones[t]) * last
            advantages[t] = last
        targets = (advantages + values).flatten()
        advantages = advantages.flatten()
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        flat = {k: torch.cat(batch[k]) for k in ("node", "neigh", "dev", "mask", "action", "logp")}
        for _ in range(args.epochs):
            logits, value = policy(flat["node"], flat["neigh"], flat["dev"], flat["mask"])
            dist = torch.distributions.Categorical(logits=logits)
            ratio = torch.exp(dist.log_prob(flat["action"]) - flat["logp"])
            policy_loss = -torch.min(ratio * advantages, ratio.clamp(0.8, 1.2) * advantages).mean()
            loss = policy_loss + 0.5 * (value - targets).pow(2).mean() - 0.01 * dist.entropy().mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
        print(f"iter {iteration:3d}  {time.time() - start:6.1f} s  mean return {np.mean(returns):+.4f} "
              f"({len(returns)} episodes)  best step time {best * 1e3:.3f} ms ({single / best:.2f}x single)",
              flush=True)


if __name__ == "__main__":
    main()
