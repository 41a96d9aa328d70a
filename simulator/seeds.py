"""Random streams named by a string, stable across runs, processes and Python versions."""

from __future__ import annotations

import hashlib

import numpy as np


def named_seed(seed: int, replicate: int, tag: int, name: str) -> np.random.SeedSequence:
    """``SeedSequence(seed, spawn_key=(replicate, tag, h))``, ``h`` the first 8 bytes of
    ``sha256(name)`` (little-endian): one stream per name, so adding a named thing (a
    link direction, a unit's variation) changes no other stream; ``tag`` keeps families
    of names apart from each other and from the apps' ``(replicate, i)`` keys."""
    digest = hashlib.sha256(name.encode()).digest()
    key = int.from_bytes(digest[:8], "little")
    return np.random.SeedSequence(seed, spawn_key=(replicate, tag, key))
