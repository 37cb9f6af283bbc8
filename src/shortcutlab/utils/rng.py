"""Deterministic random streams derived from (seed, purpose, index...).

Never rely on global RNG state or iteration order: every stream is a pure function of its key.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _key_int(part: int | str) -> int:
    if isinstance(part, (int, np.integer)):
        if part < 0:
            raise ValueError(f"random-stream key parts must be non-negative, got {part}")
        return int(part)
    digest = hashlib.blake2b(str(part).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def seed_sequence(seed: int, *key: int | str) -> np.random.SeedSequence:
    """A SeedSequence for ``seed`` and a key of ints and strings (strings are hashed stably)."""
    return np.random.SeedSequence([_key_int(seed), *(_key_int(k) for k in key)])


def rng(seed: int, *key: int | str) -> np.random.Generator:
    """A numpy Generator (PCG64) for ``seed`` and ``key``, e.g. ``rng(0, "train", 17)``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *key)))


def torch_seed(seed: int, *key: int | str) -> int:
    """A 63-bit integer seed for torch generators, derived like :func:`rng`."""
    return int(seed_sequence(seed, *key).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
