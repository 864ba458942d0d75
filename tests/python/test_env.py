"""Conformance of the Gymnasium-shaped environments: masks respected, determinism by seed, terminated at the end,
observations inside their spaces, and the vectorised env independent of its thread count."""

import math
import time
import unittest

import numpy as np

import devplace
from helpers import CountingThread, k80, small_graph, two_devices

MDPS = ("one-shot", "iterative")


def play(env, seed, rng):
    """One episode with uniformly drawn legal actions; returns the trajectory (rewards, observations, flags)."""
    obs, info = env.reset(seed=seed)
    trajectory = [obs]
    rewards, terminated = [], False
    while not terminated:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
        assert truncated is False
        trajectory.append(obs)
        rewards.append(reward)
    return rewards, trajectory, info


def same_obs(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


class PlacementEnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph, cls.topology = small_graph(), k80()

    def test_episode_ends_after_every_node_with_observations_in_space(self):
        for mdp in MDPS:
            with self.subTest(mdp=mdp):
                env = devplace.PlacementEnv(self.graph, self.topology, mdp, seed=1)
                self.assertEqual(env.action_space.n, 8)
                rewards, trajectory, info = play(env, 5, np.random.default_rng(0))
                self.assertEqual(len(rewards), env.num_nodes)
                for obs in trajectory:
                    self.assertTrue(env.observation_space.contains(obs), mdp)
                self.assertEqual(trajectory[-1]["current_node"], -1)
                self.assertFalse(info["action_mask"].any())  # nothing is legal at the end
                self.assertAlmostEqual(sum(rewards), info["episode_return"], places=9)
                self.assertGreater(info["step_time"], 0)
                strategy = env.strategy()
                strategy.validate(self.graph, self.topology)
                self.assertEqual(devplace.simulate(self.graph, self.topology, strategy).step_time, info["step_time"])
                with self.assertRaises(ValueError):  # the episode is over
                    env.step(0)

    def test_one_shot_reward_is_minus_sqrt_of_normalised_time(self):
        env = devplace.PlacementEnv(self.graph, self.topology, "one-shot", seed=2)
        rewards, _, info = play(env, 3, np.random.default_rng(1))
        self.assertTrue(all(r == 0 for r in rewards[:-1]))
        penalty = env.reference_time if info["oom"] else 0.0
        self.assertAlmostEqual(rewards[-1], -math.sqrt((info["step_time"] + penalty) / env.reference_time), places=9)

    def test_masks_are_enforced(self):
        # Two 1.5 GiB devices cannot hold VGG-16's weights and optimizer state: once the first fills up, the
        # memory-aware mask forbids it.
        g = devplace.zoo("vgg16", batch=64)
        env = devplace.PlacementEnv(g, two_devices(1.5), "one-shot", seed=0)
        obs, info = env.reset()
        forbidden_seen = False
        while True:
            mask = info["action_mask"]
            illegal = np.flatnonzero(mask == 0)
            if illegal.size:
                forbidden_seen = True
                with self.assertRaisesRegex(ValueError, "legal"):
                    env.step(int(illegal[0]))
            with self.assertRaises(ValueError):
                env.step(env.num_actions)  # out of range
            obs, _, terminated, _, info = env.step(int(np.flatnonzero(mask)[0]))
            if terminated:
                break
        self.assertTrue(forbidden_seen)

    def test_illegal_action_changes_nothing(self):
        env = devplace.PlacementEnv(self.graph, self.topology, "iterative", seed=1, memory_aware_mask=False)
        obs, info = env.reset(seed=9)
        with self.assertRaises(ValueError):
            env.step(-1)
        after_error = env.step(3)
        env.reset(seed=9)
        clean = env.step(3)
        self.assertTrue(same_obs(after_error[0], clean[0]))
        self.assertEqual(after_error[1], clean[1])

    def test_determinism_by_seed(self):
        for mdp in MDPS:
            with self.subTest(mdp=mdp):
                runs = []
                for _ in range(2):
                    env = devplace.PlacementEnv(self.graph, self.topology, mdp, seed=7, initial_placement="random")
                    runs.append(play(env, 11, np.random.default_rng(3)))
                (ra, ta, ia), (rb, tb, ib) = runs
                self.assertEqual(ra, rb)
                self.assertTrue(all(same_obs(a, b) for a, b in zip(ta, tb)))
                self.assertEqual(ia["step_time"], ib["step_time"])
        # The iterative MDP's random initial placement depends on the episode seed.
        env = devplace.PlacementEnv(self.graph, self.topology, "iterative", initial_placement="random")
        first = env.reset(seed=1)[0]["placement"]
        self.assertTrue(np.array_equal(first, env.reset(seed=1)[0]["placement"]))
        self.assertFalse(np.array_equal(first, env.reset(seed=2)[0]["placement"]))

    def test_bad_settings_raise(self):
        with self.assertRaisesRegex(ValueError, "mdp"):
            devplace.PlacementEnv(self.graph, self.topology, "two-shot")
        with self.assertRaisesRegex(ValueError, "oom_penalty"):
            devplace.PlacementEnv(self.graph, self.topology, oom_penalty=-1.0)


class PlacementVecEnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph, cls.topology = small_graph(), k80()

    def run_envs(self, mdp, num_threads, steps):
        vec = devplace.PlacementVecEnv(self.graph, self.topology, 4, mdp, seed=5, num_threads=num_threads,
                                       initial_placement="random")
        obs, info = vec.reset()
        rng = np.random.default_rng(0)
        out = []
        for _ in range(steps):
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]], dtype=np.int32)
            obs, rewards, terminated, truncated, info = vec.step(actions)
            self.assertFalse(truncated.any())
            out.append((obs, rewards, terminated, info))
        return vec, out

    def test_independent_of_thread_count_and_autoresets(self):
        for mdp in MDPS:
            with self.subTest(mdp=mdp):
                vec, one = self.run_envs(mdp, 1, self.graph_steps() + 2)
                _, two = self.run_envs(mdp, 3, self.graph_steps() + 2)
                for (oa, ra, ta, ia), (ob, rb, tb, ib) in zip(one, two):
                    self.assertTrue(same_obs(oa, ob))
                    self.assertTrue(np.array_equal(ra, rb))
                    self.assertTrue(np.array_equal(ta, tb))
                    self.assertTrue(np.array_equal(ia["episode_return"], ib["episode_return"], equal_nan=True))
                self.assertTrue(vec.observation_space.contains(one[0][0]))
                # Every env finishes its episode at step num_nodes, reports it, and restarts.
                nodes = vec.num_nodes
                for step, (obs, rewards, terminated, info) in enumerate(one, start=1):
                    self.assertEqual(terminated.all(), step == nodes)
                    self.assertEqual(terminated.any(), step == nodes)
                    if step == nodes:
                        sums = np.sum([o[1] for o in one[:nodes]], axis=0)
                        np.testing.assert_allclose(info["episode_return"], sums, rtol=1e-9, atol=1e-12)
                        self.assertTrue((info["final_step_time"] > 0).all())
                        self.assertTrue((obs["current_node"] == 0).all())  # the next episode's first node
                    else:
                        self.assertTrue(np.isnan(info["episode_return"]).all())

    def graph_steps(self):
        return devplace.PlacementEnv(self.graph, self.topology).num_nodes

    def test_step_releases_the_gil(self):
        # The last step of a one-shot episode simulates the whole placement: 8 simulations of a 20k-op graph
        # spread over the 8 devices (about 7-8 ms each since plain placements are simulated on the op graph).
        g = devplace.family("transformer", 42, 20000)
        vec = devplace.PlacementVecEnv(g, self.topology, 8, "one-shot", seed=0, num_threads=1,
                                       memory_aware_mask=False)
        vec.reset()
        for step in range(vec.num_nodes - 1):
            vec.step(np.full(8, step % 8, dtype=np.int32))
        with CountingThread() as counter:
            start = time.perf_counter()
            _, _, terminated, _, _ = vec.step(np.zeros(8, dtype=np.int32))
            end = time.perf_counter()
        self.assertTrue(terminated.all())
        # The call must outlast a few of CPython's 5 ms switch intervals for the middle-half check to mean anything
        # (about 60 ms on a quiet machine, more under load).
        self.assertGreater(end - start, 0.03)
        self.assertTrue(counter.ran_inside(start, end))

    def test_illegal_action_raises_and_changes_nothing(self):
        vec = devplace.PlacementVecEnv(self.graph, self.topology, 2, "one-shot", seed=0)
        obs, _ = vec.reset()
        with self.assertRaisesRegex(ValueError, "env 1"):
            vec.step(np.array([0, 99], dtype=np.int32))
        with self.assertRaises(ValueError):
            vec.step(np.array([0], dtype=np.int32))
        obs2, *_ = vec.step(np.array([0, 0], dtype=np.int32))
        self.assertTrue((obs2["current_node"] == 1).all())
        self.assertTrue((obs2["placement"][:, 0] == 0).all())


if __name__ == "__main__":
    unittest.main()
