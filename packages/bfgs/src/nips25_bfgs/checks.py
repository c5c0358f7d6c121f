"""Input validation shared by the public entry points: shapes, finiteness, positive definiteness.

Checks run only on concrete values; under ``jax.jit`` or ``jax.vmap`` the inputs are tracers and pass through, so
every entry point stays traceable.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "as_float_array",
    "check_matrix_spd",
    "check_positive",
    "check_scalar_output",
    "check_secant_pair",
    "check_square",
    "check_vector",
    "is_concrete",
]


def is_concrete(x: Any) -> bool:
    """Whether ``x`` holds values (not a tracer inside ``jit``/``vmap``/``grad``)."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x))


def as_float_array(x: Any, name: str) -> Any:
    """Read a (nested) list or tuple of real numbers, or a NumPy array, as a JAX array; other values pass through.

    A list of Python numbers becomes an array of JAX's default float dtype (float64 under ``jax.enable_x64``), so
    ``x0=[1, 2]`` means the point ``(1.0, 2.0)``, not a pytree of two scalars. Lists holding arrays stay pytrees.
    """
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, (int, float, np.number)) for v in _scalars(x)):
        if any(isinstance(v, bool) for v in _scalars(x)):
            raise TypeError(f"{name} must hold real numbers, got a bool")
        return jnp.asarray(np.asarray(x, dtype=np.float64), dtype=jnp.result_type(float))
    if isinstance(x, np.ndarray):
        return jnp.asarray(x)
    return x


def _scalars(x: Any) -> list[Any]:
    """The entries of a nested list/tuple (the containers themselves are not entries)."""
    out: list[Any] = []
    for v in x:
        out.extend(_scalars(v) if isinstance(v, (list, tuple)) else [v])
    return out


def check_vector(x: Any, name: str, *, ndim: int = 1) -> None:
    """Raise unless ``x`` is a non-empty, finite, real floating array of rank ``ndim`` (when concrete)."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{name} must be an array, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if x.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not np.issubdtype(np.dtype(x.dtype), np.floating):
        raise TypeError(f"{name} must have a real floating dtype, got {x.dtype}")
    if is_concrete(x) and not np.all(np.isfinite(np.asarray(x))):
        raise ValueError(f"{name} must be finite (no NaN or inf)")


def check_matrix_spd(M: Any, name: str, d: int) -> None:
    """Raise unless ``M`` is a finite, symmetric, positive-definite ``(d, d)`` matrix (when concrete)."""
    check_vector(M, name, ndim=2)
    if tuple(M.shape) != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}), got {tuple(M.shape)}")
    if not is_concrete(M):
        return
    a = np.asarray(M, dtype=np.float64)
    scale = max(float(np.max(np.abs(a))), np.finfo(np.float64).tiny)
    if np.max(np.abs(a - a.T)) > 1e-8 * scale:
        raise ValueError(f"{name} must be symmetric")
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite (Cholesky failed)") from None


def check_square(M: Any, name: str) -> int:
    """Return ``d`` after checking ``M`` is a non-empty real floating ``(d, d)`` array (finite when concrete)."""
    check_vector(M, name, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be square (d, d), got shape {tuple(M.shape)}")
    return int(M.shape[0])


def check_secant_pair(M: Any, s: Any, y: Any, name: str) -> None:
    """Check the arguments of a BFGS update: ``M`` ``(d, d)``, ``s`` and ``y`` ``(d,)``; :math:`s^\\top y > 0`
    when concrete."""
    d = check_square(M, name)
    for vec, vname in ((s, "s"), (y, "y")):
        check_vector(vec, vname)
        if vec.shape[0] != d:
            raise ValueError(f"{vname} must have shape ({d},) to match {name} {tuple(M.shape)}, got {tuple(vec.shape)}")
    if is_concrete((s, y)):
        sy = float(np.vdot(np.asarray(s, np.float64), np.asarray(y, np.float64)))
        if not sy > 0:
            raise ValueError(f"s and y must satisfy the curvature condition s^T y > 0, got s^T y = {sy!r}")


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``float(value)`` after checking it is a finite real number ``> 0`` (``>= 0`` with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def check_scalar_output(fun: Any, x: Any, name: str = "fun") -> None:
    """Raise ``ValueError`` unless ``fun(x)`` is a real floating scalar (shape ``()``); traced without running it.

    Works under ``jit``/``vmap`` too: only the output's shape and dtype are read (``jax.eval_shape``).
    """
    out = jax.eval_shape(fun, x)
    shape = getattr(out, "shape", None)
    if shape != ():
        got = f"shape {tuple(shape)}" if shape is not None else type(out).__name__
        raise ValueError(f"{name} must return a scalar (shape ()), got {got}")
    if not np.issubdtype(np.dtype(out.dtype), np.floating):
        raise ValueError(f"{name} must return a real floating scalar, got dtype {out.dtype}")
