"""Seeding: one call fixes Python's, numpy's and (when installed) torch's random state."""

from __future__ import annotations

import importlib.util
import operator
import os
import random
from typing import Any

import numpy as np

__all__ = ["jax_key", "seed_everything"]

_MAX_SEED = 2**32 - 1


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = operator.index(seed)
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**32 - 1], got {seed}")
    return seed


def seed_everything(seed: int, *, deterministic_torch: bool = False) -> np.random.Generator:
    """Seed Python's ``random``, numpy's legacy global state and torch (CPU and CUDA) when installed.

    Prefer the returned generator over the global state in new code.

    ``PYTHONHASHSEED`` is set in ``os.environ`` too, which fixes string hashing (and so ``set``/``dict``
    iteration order of strings) only in *child* processes started after the call (``subprocess``,
    ``multiprocessing`` with spawn, ``accelerate launch``). The running interpreter chose its hash seed at start
    and keeps it: to make this process's string hashing reproducible, start Python with ``PYTHONHASHSEED`` set.

    Args:
        seed: integer in ``[0, 2**32 - 1]``.
        deterministic_torch: also ask torch for deterministic algorithms (slower on GPU).

    Returns:
        ``numpy.random.default_rng(seed)``: a fresh ``Generator`` whose stream depends only on ``seed``.

    Raises:
        TypeError: if ``seed`` is not an integer.
        ValueError: if ``seed`` is out of range.

    Example:
        >>> a = seed_everything(3).normal(size=2)
        >>> b = seed_everything(3).normal(size=2)
        >>> bool((a == b).all())
        True
    """
    seed = _check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - legacy global state, for libraries that still read it
    os.environ["PYTHONHASHSEED"] = str(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        if deterministic_torch:
            torch.use_deterministic_algorithms(True, warn_only=True)
    return np.random.default_rng(seed)


def jax_key(seed: int) -> Any:
    """Return ``jax.random.key(seed)``, a typed PRNG key.

    Args:
        seed: integer in ``[0, 2**32 - 1]``.

    Returns:
        A scalar JAX key array (``jax.random.key``).

    Raises:
        TypeError: if ``seed`` is not an integer.
        ValueError: if ``seed`` is out of range.
        ModuleNotFoundError: if JAX is not installed (``pip install jax``).
    """
    seed = _check_seed(seed)
    if importlib.util.find_spec("jax") is None:
        raise ModuleNotFoundError("jax_key needs JAX: pip install jax")
    import jax

    return jax.random.key(seed)
