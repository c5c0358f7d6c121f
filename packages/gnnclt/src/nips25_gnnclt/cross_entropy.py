r"""Cross-entropy training on embeddings versus on the limiting Gaussian mixture.

For a linear head :math:`(W, b)`, :math:`\ell(h, c) = \log\sum_j e^{(W^\top h + b)_j} - (W^\top h + b)_c` is
Lipschitz in :math:`h` with constant :math:`\sqrt 2\,\|W\|_2` (its gradient is :math:`W(\mathrm{softmax} - e_c)`).
By Kantorovich-Rubinstein, for laws :math:`P, G` with equal class proportions,
:math:`|R_P(W) - R_G(W)| \le \sqrt 2\|W\|_2 \sum_c \pi_c W_1(P_c, G_c)`, uniformly over :math:`\|W\|_2 \le R`;
hence the minimal (regularised) risks differ by at most :math:`\sqrt2 R\sum_c\pi_c W_1(P_c, G_c)` too.

``ce_risk``, ``ce_lipschitz``, ``train_ce_head`` and ``sample_mixture`` are traceable (``jax.vmap`` over keys,
embeddings or ``l2`` trains a batch of heads in one call); ``risk_gap`` needs the exact matching :math:`W_1`
(scipy's assignment solver) and runs on the host.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from nips25_gnnclt._checks import (
    array_module,
    as_float_matrix,
    as_labels,
    check_int,
    concretely,
    is_traced,
    real_array,
    scalar_out,
)
from nips25_gnnclt.wasserstein import w1_matching

__all__ = ["CEHead", "RiskGap", "ce_lipschitz", "ce_risk", "risk_gap", "sample_mixture", "train_ce_head"]


class CEHead(NamedTuple):
    """A linear softmax head (a pytree): logits ``h @ W + b``; ``W`` is ``(d, K)``, ``b`` is ``(K,)``."""

    W: Array
    b: Array


class RiskGap(NamedTuple):
    """``gap = |R_P(W) - R_G(W)|`` and its bound ``lipschitz * sum_c pi_c W1(P_c, G_c)``."""

    gap: float
    bound: float
    lipschitz: float
    w1: float


def _risk(head: CEHead, H: Array, y: Array) -> Array:
    logits = H @ head.W + head.b
    return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0])


def ce_risk(head: CEHead, H: Any, y: Any) -> Array:
    r"""Empirical cross-entropy risk :math:`\frac1n\sum_i \ell((W, b); h_i, y_i)`.

    Args:
        head: the :class:`CEHead`.
        H: ``(n, d)`` embeddings.
        y: ``(n,)`` integer labels in ``[0, K)``.

    Returns:
        Scalar array.

    Raises:
        ValueError: on mismatched shapes, NaN/inf or labels out of range.
    """
    h = as_float_matrix(H, "H")
    if head.W.ndim != 2 or head.W.shape[0] != h.shape[1]:
        raise ValueError(f"head.W must have shape ({h.shape[1]}, K), got {head.W.shape}")
    lab = as_labels(y, "y", n=h.shape[0], n_classes=head.W.shape[1])
    return _risk(head, h, jnp.asarray(lab))


def ce_lipschitz(W: Any) -> Any:
    r"""Lipschitz constant :math:`\sqrt2\,\|W\|_2` of the cross-entropy loss in the embedding.

    The gradient in :math:`h` is :math:`W(\mathrm{softmax} - e_c)` and :math:`\|\mathrm{softmax} - e_c\|_2 \le \sqrt2`.

    Args:
        W: ``(d, K)`` head weights (the bias does not enter).

    Returns:
        A non-negative float (a JAX scalar for JAX input).

    Raises:
        ValueError: if ``W`` is not 2-dimensional, empty, or holds NaN/inf.

    Example:
        >>> round(ce_lipschitz(np.diag([3.0, 1.0])), 6)  # sqrt(2) * 3
        4.242641
    """
    w = real_array(W, "W", ndim=2)
    return scalar_out(np.sqrt(2.0) * array_module(w).linalg.norm(w, 2))


def train_ce_head(H: Any, y: Any, key: Array, *, n_classes: int, l2: float = 1e-3, steps: int = 200) -> CEHead:
    r"""Fit a linear softmax head by L-BFGS (optax, backtracking line search).

    Minimises :math:`R_n(W, b) + \frac{l_2}{2}\|W\|_F^2`.

    Args:
        H: ``(n, d)`` embeddings.
        y: ``(n,)`` labels in ``[0, n_classes)``.
        key: JAX PRNG key (initialisation ``N(0, 0.01^2)``).
        n_classes: number of classes ``K >= 2``.
        l2: ridge weight ``>= 0`` (``> 0`` makes the minimiser unique and bounded).
        steps: L-BFGS iterations ``>= 1`` (static).

    Returns:
        The trained :class:`CEHead`. Traceable: ``jax.vmap`` over ``key``, ``H``/``y`` or ``l2`` fits a batch of
        heads in one compiled call.

    Raises:
        ValueError: on bad shapes, labels out of range, ``l2 < 0``, ``steps < 1`` or ``n_classes < 2`` (values
            checked when concrete).

    Example:
        >>> H = jnp.array([[-2.0], [-1.0], [1.0], [2.0]])
        >>> head = train_ce_head(H, jnp.array([0, 0, 1, 1]), jax.random.key(0), n_classes=2, steps=50)
        >>> (jnp.argmax(H @ head.W + head.b, axis=1) == jnp.array([0, 0, 1, 1])).all().item()
        True
    """
    h = as_float_matrix(H, "H")
    k = check_int(n_classes, "n_classes", minimum=2)
    lab = jnp.asarray(as_labels(y, "y", n=h.shape[0], n_classes=k))
    if isinstance(l2, Array):
        if l2.shape != () or not jnp.issubdtype(l2.dtype, jnp.floating):
            raise ValueError(f"l2 must be a finite float scalar >= 0, got shape {l2.shape} dtype {l2.dtype}")
        if concretely(lambda: not (jnp.isfinite(l2) and l2 >= 0), l2):
            raise ValueError(f"l2 must be a finite number >= 0, got {float(l2)!r}")
    elif isinstance(l2, bool) or not isinstance(l2, (int, float)) or not np.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    steps = check_int(steps, "steps", minimum=1)
    init = CEHead(W=0.01 * jax.random.normal(key, (h.shape[1], k), h.dtype), b=jnp.zeros(k, h.dtype))
    return _fit(init, h, lab, jnp.asarray(l2, h.dtype), steps)


@jax.jit(static_argnames=("steps",))
def _fit(init: CEHead, H: Array, y: Array, l2: Array, steps: int) -> CEHead:
    def objective(head: CEHead) -> Array:
        return _risk(head, H, y) + 0.5 * l2 * jnp.sum(head.W**2)

    # backtracking (Armijo) line search: the same minimiser as the default zoom search, half the compile time
    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(max_backtracking_steps=20, store_grad=True))
    value_and_grad = optax.value_and_grad_from_state(objective)

    def step(carry: tuple[CEHead, Any], _: None) -> tuple[tuple[CEHead, Any], None]:
        params, state = carry
        value, grad = value_and_grad(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=objective)
        return (optax.apply_updates(params, updates), state), None

    (params, _), _ = jax.lax.scan(step, (init, opt.init(init)), None, length=steps)
    return params


def sample_mixture(key: Array, means: Any, covs: Any, y: Any) -> Array:
    r"""One draw :math:`x_i \sim N(m_{y_i}, \Gamma_{y_i})` per label: a sample of the Gaussian mixture with the
    class counts of ``y``.

    Args:
        key: JAX PRNG key.
        means: ``(K, d)`` component means.
        covs: ``(K, d, d)`` PSD component covariances.
        y: ``(n,)`` labels in ``[0, K)``.

    Returns:
        ``(n, d)`` float32 sample (traceable: ``jax.vmap`` over keys draws replicate samples).

    Raises:
        ValueError: on mismatched shapes or indefinite covariances (definiteness checked when concrete).

    Example:
        >>> x = sample_mixture(jax.random.key(0), np.array([[5.0]]), np.zeros((1, 1, 1)), np.array([0, 0]))
        >>> x.tolist()  # zero covariance: every draw is the mean
        [[5.0], [5.0]]
    """
    mu = real_array(means, "means", ndim=2)
    cv = real_array(covs, "covs", ndim=3)
    if cv.shape != (mu.shape[0], mu.shape[1], mu.shape[1]):
        raise ValueError(f"covs must have shape {(mu.shape[0], mu.shape[1], mu.shape[1])}, got {cv.shape}")
    lab = as_labels(y, "y", n_classes=mu.shape[0])
    xp = array_module(cv)
    w, v = xp.linalg.eigh(cv)
    if concretely(lambda: w.min() < -1e-8 * xp.maximum(1.0, xp.abs(cv).max()), w, cv):
        raise ValueError("covs must be positive semi-definite")
    roots = xp.einsum("kij,kj,klj->kil", v, xp.sqrt(xp.clip(w, 0, None)), v)
    g = jax.random.normal(key, (lab.shape[0], mu.shape[1]), jnp.float32)
    return jnp.asarray(mu, jnp.float32)[lab] + jnp.einsum("nj,nij->ni", g, jnp.asarray(roots, jnp.float32)[lab])


def risk_gap(head: CEHead, P: Any, y_p: Any, G: Any, y_g: Any) -> RiskGap:
    r""":math:`|R_P(W) - R_G(W)|` next to its Kantorovich-Rubinstein bound
    :math:`\sqrt2\|W\|_2\sum_c \hat\pi_c W_1(P_c, G_c)`, with per-class :math:`W_1` exact by optimal matching.

    Args:
        head: the :class:`CEHead`.
        P: ``(n, d)`` embeddings with labels ``y_p``.
        G: ``(n, d)`` mixture sample with labels ``y_g``; every class must have the same count in both.

    Returns:
        :class:`RiskGap` (the bound holds for every head, as a theorem about these two empirical laws). Host only
        (exact assignment by scipy); a traced input raises ``TypeError``.

    Raises:
        ValueError: if class counts differ between ``y_p`` and ``y_g`` or shapes mismatch.
    """
    if is_traced(P, G, y_p, y_g, head.W, head.b):
        raise TypeError("risk_gap runs on the host (exact W1 by scipy's assignment solver); call it outside jit")
    p, g = np.asarray(as_float_matrix(P, "P")), np.asarray(as_float_matrix(G, "G"))
    k = head.W.shape[1]
    lp = np.asarray(as_labels(y_p, "y_p", n=p.shape[0], n_classes=k))
    lg = np.asarray(as_labels(y_g, "y_g", n=g.shape[0], n_classes=k))
    if not np.array_equal(np.bincount(lp, minlength=k), np.bincount(lg, minlength=k)):
        raise ValueError("y_p and y_g must have the same count in every class (equal class proportions)")
    w1 = sum((lp == c).mean() * w1_matching(p[lp == c], g[lg == c]) for c in range(k) if np.any(lp == c))
    lip = float(ce_lipschitz(np.asarray(head.W)))
    gap = abs(float(ce_risk(head, p, lp)) - float(ce_risk(head, g, lg)))
    return RiskGap(gap=gap, bound=lip * float(w1), lipschitz=lip, w1=float(w1))
