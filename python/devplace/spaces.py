"""Descriptions of observation and action spaces with the attribute names of Gymnasium's spaces
(``Discrete.n``, ``Box.shape``/``dtype``/``low``/``high``, ``Dict.spaces``), so agents written against Gymnasium
read them unchanged. Only what the environments need: no Gymnasium dependency."""

import numpy as np


class Discrete:
    """Integers start .. start+n-1 (actions: start 0)."""

    def __init__(self, n, seed=None, start=0):
        self.n, self.start = int(n), int(start)
        self.shape = ()
        self.dtype = np.int64
        self._rng = np.random.default_rng(seed)

    def sample(self, mask=None):
        """A uniformly drawn action; with a mask (int8 array of length n), one whose mask entry is 1."""
        if mask is None:
            return self.start + int(self._rng.integers(self.n))
        legal = np.flatnonzero(np.asarray(mask))
        if legal.size == 0:
            raise ValueError("sample: the mask allows no action")
        return self.start + int(self._rng.choice(legal))

    def contains(self, x):
        return isinstance(x, (int, np.integer)) and self.start <= int(x) < self.start + self.n

    def __repr__(self):
        return f"Discrete({self.n}, start={self.start})" if self.start else f"Discrete({self.n})"


class Box:
    """Arrays of a fixed shape and dtype with elements in [low, high]."""

    def __init__(self, low, high, shape, dtype):
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), np.dtype(dtype)

    def contains(self, x):
        x = np.asarray(x)
        return x.shape == self.shape and x.dtype == self.dtype and bool(np.all((x >= self.low) & (x <= self.high)))

    def __repr__(self):
        return f"Box({self.low}, {self.high}, {self.shape}, {self.dtype})"


class Dict:
    """A dictionary of named spaces."""

    def __init__(self, spaces):
        self.spaces = dict(spaces)

    def __getitem__(self, key):
        return self.spaces[key]

    def contains(self, x):
        return all(self.spaces[k].contains(x[k]) for k in self.spaces)

    def __repr__(self):
        return "Dict(" + ", ".join(f"{k}: {v}" for k, v in self.spaces.items()) + ")"
