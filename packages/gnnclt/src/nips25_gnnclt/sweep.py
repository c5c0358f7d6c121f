r"""The CLT checks as one traceable function, and its vmapped sweep over replicate graphs and degree scales.

:func:`clt_metrics` draws one CSBM graph with the padded sampler, forms :math:`A^k X` for each depth and returns
the sliced :math:`W_1` to the theorem's mixture and to the naive feature-only Gaussian, the relative covariance
error and the empirical collapse ratio. :func:`clt_sweep` maps it with ``jax.vmap`` over a batch of keys and a
vector of :math:`\nu`, in one compiled call; a key batch sharded with ``jax.sharding`` keeps its sharding, so
replicates spread over devices (the data-parallel form of the simulation grid of ``reproduce``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from nips25_gnnclt._checks import check_int, check_positive, is_traced
from nips25_gnnclt.csbm import CSBM
from nips25_gnnclt.limits import covariance_error, limit_covs, naive_covs, scaled_centered
from nips25_gnnclt.oversmoothing import empirical_collapse_ratio
from nips25_gnnclt.polynomial import graph_power
from nips25_gnnclt.sampling import sample_csbm
from nips25_gnnclt.wasserstein import sliced_w1_to_mixture

__all__ = ["METRICS", "clt_metrics", "clt_sweep"]

METRICS = ("w1_sliced", "w1_sliced_naive", "cov_error", "collapse_ratio")
"""Names of the arrays :func:`clt_metrics` and :func:`clt_sweep` return."""


def _statics(model: Any, ks: Sequence[int], n: int, n_proj: int, centering: str) -> tuple[int, tuple[int, ...], int]:
    if not isinstance(model, CSBM):
        raise TypeError(f"model must be a CSBM, got {type(model).__name__}")
    n = check_int(n, "n", minimum=16)
    depths = tuple(sorted({check_int(k, "ks[i]", minimum=1) for k in ks}))
    if not depths:
        raise ValueError("ks must name at least one depth")
    if centering not in ("plug-in", "population"):
        raise ValueError(f"centering must be 'plug-in' or 'population', got {centering!r}")
    return n, depths, check_int(n_proj, "n_proj", minimum=1)


def _one(
    model: CSBM, key: Array, nu: Array, *, n: int, ks: tuple[int, ...], capacity: int, n_proj: int, centering: str
) -> dict[str, Array]:
    k_graph, k_dir = jax.random.split(key)
    A, X, y = sample_csbm(model, k_graph, n=n, nu=nu, capacity=capacity)
    fitted = model.conditioned_on(y, X) if centering == "plug-in" else model
    zeros = jnp.zeros((model.n_classes, model.dim), X.dtype)
    out: dict[str, list[Array]] = {name: [] for name in METRICS}
    H, done = X, 0
    for k in ks:
        H, done = graph_power(A, H, k - done), k
        Z = scaled_centered(H, y, fitted, nu=nu, k=k)
        out["w1_sliced"].append(sliced_w1_to_mixture(Z, fitted.pi, zeros, limit_covs(fitted, k), k_dir, n_proj=n_proj))
        naive = naive_covs(fitted, k)
        out["w1_sliced_naive"].append(sliced_w1_to_mixture(Z, fitted.pi, zeros, naive, k_dir, n_proj=n_proj))
        out["cov_error"].append(covariance_error(Z, y, fitted, k))
        out["collapse_ratio"].append(empirical_collapse_ratio(H / nu**k, y, model.n_classes))
    return {name: jnp.stack(values) for name, values in out.items()}


_one_jit = jax.jit(_one, static_argnames=("n", "ks", "capacity", "n_proj", "centering"))


@functools.partial(jax.jit, static_argnames=("n", "ks", "capacity", "n_proj", "centering"))
def _sweep(model: CSBM, keys: Array, nus: Array, **statics: Any) -> dict[str, Array]:
    per_nu = jax.vmap(lambda key, nu: _one(model, key, nu, **statics), in_axes=(None, 0))
    return jax.vmap(per_nu, in_axes=(0, None))(keys, nus)


def _capacity(model: CSBM, n: int, nu_max: Any, capacity: int | None) -> int:
    if capacity is not None:
        return check_int(capacity, "capacity", minimum=1)
    if is_traced(nu_max):
        raise ValueError("capacity must be given when nu is traced (it fixes the edge list's length)")
    return model.edge_capacity(n=n, nu=float(nu_max))


def clt_metrics(
    model: CSBM,
    key: Array,
    *,
    n: int,
    nu: float | Array,
    ks: Sequence[int] = (1, 2, 3),
    capacity: int | None = None,
    n_proj: int = 32,
    centering: str = "plug-in",
) -> dict[str, Array]:
    r"""One CSBM draw and the CLT checks at every depth in ``ks``, compiled as one JAX function.

    For each :math:`k`: :math:`Z = (A^k X - \nu^k \hat m^{(k)}_y)/\nu^{k-1/2}`; ``w1_sliced`` is the sliced
    :math:`W_1` of :math:`Z` to :math:`\sum_c \hat\pi_c N(0, \Gamma^{(k)}_c)`, ``w1_sliced_naive`` the same to the
    feature-only Gaussian, ``cov_error`` :math:`\max|\widehat{\mathrm{Cov}}(Z\mid c) - \Gamma^{(k)}_c| /
    \max|\Gamma^{(k)}_c|`, ``collapse_ratio`` :math:`\sigma_2/\sigma_1` of the class means of
    :math:`A^k X/\nu^k`. The graph comes from the padded sampler (:func:`~nips25_gnnclt.sample_csbm` with
    ``capacity``), so its law is the exact Bernoulli CSBM; metrics are in float32 unless x64 is enabled.

    Args:
        model: the CSBM (its leaves may be traced, e.g. under ``jax.vmap`` over models).
        key: a JAX PRNG key.
        n: nodes, ``>= 16`` (static).
        nu: degree scale :math:`\nu > 0` (float or JAX scalar).
        ks: depths ``>= 1`` (static).
        capacity: static edge-list length; default ``model.edge_capacity(n=n, nu=nu)`` (needs a concrete ``nu``).
        n_proj: directions of the sliced :math:`W_1` (static).
        centering: ``"plug-in"`` (the draw's :math:`\hat\pi, \hat M, \hat\Sigma`) or ``"population"``.

    Returns:
        ``{name: (len(ks),) array}`` for the names in :data:`METRICS`; NaN everywhere if the capacity overflowed
        under tracing.

    Raises:
        TypeError, ValueError: on a bad model, key, size, depth, ``nu`` or ``centering``.

    Example (skipped by the doctest run to keep the test session short: each compile takes ~10-30 s on 2 shared
    cores; ``tests/test_sharding.py`` runs both functions):
        >>> from nips25_gnnclt import default_model
        >>> out = clt_metrics(default_model(), jax.random.key(0), n=2000, nu=20.0, ks=(1,), n_proj=4)  # doctest: +SKIP
        >>> sorted(out), out["w1_sliced"].shape  # doctest: +SKIP
        (['collapse_ratio', 'cov_error', 'w1_sliced', 'w1_sliced_naive'], (1,))
    """
    n, depths, n_proj = _statics(model, ks, n, n_proj, centering)
    nu = check_positive(nu, "nu")
    cap = _capacity(model, n, nu, capacity)
    return _one_jit(model, key, jnp.asarray(nu, jnp.float32), n=n, ks=depths, capacity=cap, n_proj=n_proj,
                    centering=centering)  # fmt: skip


def clt_sweep(
    model: CSBM,
    keys: Array,
    nus: Any,
    *,
    n: int,
    ks: Sequence[int] = (1, 2, 3),
    capacity: int | None = None,
    n_proj: int = 32,
    centering: str = "plug-in",
) -> dict[str, Array]:
    r""":func:`clt_metrics` for every replicate key and every :math:`\nu`, vmapped and compiled once.

    The data-parallel path of the simulation grid: ``keys`` may be sharded over devices (a ``NamedSharding``
    along its first axis); the outputs keep that sharding, each device drawing and measuring its own
    replicates. Equal, up to float32 reduction order, to looping :func:`clt_metrics` over keys and ``nus``.

    Args:
        model: the CSBM.
        keys: ``(R,)`` batch of JAX PRNG keys (``jax.random.split(key, R)``).
        nus: ``(V,)`` degree scales :math:`\nu > 0`.
        n, ks, capacity, n_proj, centering: as in :func:`clt_metrics`; the default capacity covers ``max(nus)``.

    Returns:
        ``{name: (R, V, len(ks)) array}`` for the names in :data:`METRICS`.

    Raises:
        TypeError, ValueError: as :func:`clt_metrics`, and on a non-1-D ``keys`` or ``nus``.

    Example (skipped by the doctest run, see :func:`clt_metrics`):
        >>> from nips25_gnnclt import default_model
        >>> keys = jax.random.split(jax.random.key(0), 2)
        >>> out = clt_sweep(default_model(), keys, [10.0, 20.0], n=1000, ks=(1, 2), n_proj=4)  # doctest: +SKIP
        >>> out["cov_error"].shape  # doctest: +SKIP
        (2, 2, 2)
    """
    n, depths, n_proj = _statics(model, ks, n, n_proj, centering)
    if not (isinstance(keys, Array) and jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)) or keys.ndim != 1:
        raise TypeError("keys must be a 1-D batch of typed JAX PRNG keys, e.g. jax.random.split(jax.random.key(0), R)")
    nu_arr = nus if isinstance(nus, Array) else np.asarray(nus, np.float64)
    if nu_arr.ndim != 1 or nu_arr.shape[0] == 0:
        raise ValueError(f"nus must be a non-empty 1-D array, got shape {nu_arr.shape}")
    if not is_traced(nu_arr):
        for i, value in enumerate(np.asarray(nu_arr, np.float64)):
            check_positive(float(value), f"nus[{i}]")
    cap = _capacity(model, n, nu_arr.max(), capacity)
    return _sweep(model, keys, jnp.asarray(nu_arr, jnp.float32), n=n, ks=depths, capacity=cap, n_proj=n_proj,
                  centering=centering)  # fmt: skip
