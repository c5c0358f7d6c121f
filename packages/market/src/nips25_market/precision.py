"""Float64 for the market's numerics without changing JAX's global state on import.

JAX computes in float32 unless ``jax_enable_x64`` is on. Prices near 0 or 1 and states with ``|q/b|`` in the
thousands need float64 (README, Choices), but a library must not flip a process-wide flag when it is imported.
So ``import nips25_market`` leaves ``jax.config.jax_enable_x64`` as it was; the user turns float64 on either for
the whole program (``jax.config.update("jax_enable_x64", True)`` at start-up, what the CLI and the tests do) or
for a block (``with nips25_market.float64(): ...``). A market built while float64 is off warns once
(``UserWarning``), since its results are then float32.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import jax

__all__ = ["float64", "warn_if_float32", "x64_enabled"]

_warned = False


def x64_enabled() -> bool:
    """True when JAX creates float64 arrays here (global flag or an enclosing :func:`float64` block)."""
    return bool(getattr(jax.config, "jax_enable_x64"))  # noqa: B009 - untyped attribute


@contextlib.contextmanager
def _global_x64() -> Iterator[None]:  # pragma: no cover - only for JAX releases without jax.enable_x64
    old = getattr(jax.config, "jax_enable_x64")  # noqa: B009 - untyped attribute
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


def float64() -> Any:
    """Context manager: float64 JAX arrays inside the block, the previous setting restored after it.

    Uses JAX's thread-local ``jax.enable_x64(True)`` where it exists. Arrays made inside the block stay float64
    after it; new arithmetic on them outside the block follows the setting outside.

    Example:
        >>> import jax, numpy as np
        >>> from nips25_market import LMSR, float64
        >>> before = jax.config.jax_enable_x64
        >>> with float64():
        ...     p = LMSR(2, b=1.0).price(np.array([40.0, 0.0]))
        >>> str(p.dtype), jax.config.jax_enable_x64 == before
        ('float64', True)
    """
    ctx = getattr(jax, "enable_x64", None)
    return ctx(True) if ctx is not None else _global_x64()


def warn_if_float32(name: str) -> None:
    """Warn once per process (``UserWarning``) that market ``name`` was built with float64 off."""
    global _warned
    if _warned or x64_enabled():
        return
    _warned = True
    warnings.warn(
        f"{name}: jax_enable_x64 is off, so the market computes in float32 (prices near 0/1 and large |q/b| lose "
        "precision); call jax.config.update('jax_enable_x64', True) at start-up or use "
        "`with nips25_market.float64():`",
        UserWarning,
        stacklevel=3,
    )
