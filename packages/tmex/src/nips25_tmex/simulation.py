"""The paper's simulation designs: location-scale SCMs, measurement kinds, the five-latent treatment model.

Everything here is a faithful re-implementation (numpy) of the generators of the paper's code
(``run_tmex_demonstration.py``, ``scm.py`` after Causal Component Analysis, Sec. 5.1 of the paper); the
coefficients of the five-latent SCM are ours (the paper's are not published) and are recorded in
:class:`FiveLatentSCM`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "KINDS",
    "FiveLatentSCM",
    "MultiViewMixing",
    "corrupt_with_descendants",
    "leaky_tanh",
    "location_scale_scm",
    "measurements",
    "random_dag",
]

Kind = Literal["perfect", "noisy", "nonlinear", "nonlinear_noisy", "partial", "full"]
KINDS: tuple[str, ...] = ("perfect", "noisy", "nonlinear", "nonlinear_noisy", "partial", "full")


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def leaky_tanh(x: NDArray[np.float64], alpha: float = 1.0, beta: float = 0.1) -> NDArray[np.float64]:
    r""":math:`\tanh(\alpha x) + \beta x`, the invertible nonlinearity of the paper's SCMs."""
    return np.asarray(np.tanh(alpha * x) + beta * x, dtype=np.float64)


def random_dag(k: int, rng: np.random.Generator, *, edge_prob: float = 0.5) -> NDArray[np.int_]:
    """Random DAG on ``k`` nodes as a strictly lower-triangular 0/1 matrix (``generate_adjmat`` of the paper).

    ``adjacency[i, j] = 1`` means :math:`Z_j \\to Z_i` (so ``0, 1, ..., k-1`` is a topological order).

    Raises:
        ValueError: if ``k < 1`` or ``edge_prob`` is not in ``[0, 1]``.
    """
    k = _check_int(k, "k", 1)
    if not 0.0 <= edge_prob <= 1.0:
        raise ValueError(f"edge_prob must be in [0, 1], got {edge_prob}")
    adj = np.zeros((k, k), dtype=int)
    rows, cols = np.tril_indices(k, -1)
    adj[rows, cols] = rng.random(rows.size) < edge_prob
    return adj


def _random_mlp(
    d_in: int, n_nonlinearities: int, rng: np.random.Generator
) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    mats = [rng.standard_normal((d_in, d_in)) for _ in range(n_nonlinearities - 1)]
    mats.append(rng.standard_normal((1, d_in)))

    def f(v: NDArray[np.float64]) -> NDArray[np.float64]:
        out = v.T
        for m in mats:
            out = leaky_tanh(m @ out)
        return np.asarray(out[0], dtype=np.float64)

    return f


def location_scale_scm(
    n: int,
    adjacency: NDArray[np.int_],
    rng: np.random.Generator,
    *,
    n_nonlinearities: int = 3,
    snr: float = 1.0,
) -> NDArray[np.float64]:
    r"""Sample ``n`` draws of a random location-scale SCM on the DAG ``adjacency``.

    Root nodes are :math:`Z_i = U_i`; the others :math:`Z_i = \mathrm{snr}\cdot f^{loc}_i(Z_{pa(i)}) +
    f^{scale}_i(Z_{pa(i)})\,U_i` with :math:`U_i \sim N(0, 1)` and :math:`f^{loc}_i, f^{scale}_i` random MLPs of
    ``n_nonlinearities`` leaky-tanh layers with :math:`N(0,1)` weights (paper's ``LocationScaleSCM``).

    Args:
        n: number of samples, ``>= 1``.
        adjacency: ``(k, k)`` strictly lower-triangular 0/1 matrix (see :func:`random_dag`).
        rng: random generator (draws the mechanisms, then the noise).
        n_nonlinearities: layers of each random MLP, ``>= 1``.
        snr: weight of the location function.

    Returns:
        ``(n, k)`` latent samples.

    Raises:
        ValueError: if ``adjacency`` is not square, strictly lower-triangular and 0/1, or ``n`` is invalid.
    """
    n = _check_int(n, "n", 1)
    n_nonlinearities = _check_int(n_nonlinearities, "n_nonlinearities", 1)
    adj = np.asarray(adjacency)
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] == 0:
        raise ValueError(f"adjacency must be a non-empty square matrix, got shape {adj.shape}")
    if not np.all(np.isin(adj, (0, 1))) or np.any(np.triu(adj) != 0):
        raise ValueError("adjacency must be 0/1 and strictly lower-triangular (a DAG in topological order)")
    k = adj.shape[0]
    mechanisms: list[tuple[NDArray[np.int_], Callable[..., NDArray[np.float64]], Callable[..., NDArray[np.float64]]]]
    mechanisms = []
    for i in range(k):
        parents = np.flatnonzero(adj[i])
        if parents.size:
            mechanisms.append(
                (
                    parents,
                    _random_mlp(parents.size, n_nonlinearities, rng),
                    _random_mlp(parents.size, n_nonlinearities, rng),
                )
            )
        else:
            mechanisms.append((parents, _identity, _identity))
    u = rng.standard_normal((n, k))
    z = np.zeros((n, k))
    for i, (parents, loc, scale) in enumerate(mechanisms):
        if parents.size == 0:
            z[:, i] = u[:, i]
        else:
            pa = z[:, parents]
            z[:, i] = snr * loc(pa) + scale(pa) * u[:, i]
    return z


def _identity(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return v


def measurements(
    latents: NDArray[np.float64],
    kind: Kind,
    rng: np.random.Generator,
    *,
    noise_sd: float = 0.2,
    mix_weight: float = 0.2,
) -> list[NDArray[np.float64]]:
    r"""One 1-D measurement block per latent, of a given kind (paper's ``gen_measurement_data_*``).

    * ``"perfect"``: :math:`\hat Z_i = Z_i`.
    * ``"noisy"``: :math:`\hat Z_i = Z_i + \varepsilon_i`, :math:`\varepsilon_i \sim N(0, \sigma^2)`.
    * ``"nonlinear"``: :math:`\hat Z_i = Z_i + Z_i^2/2`; ``"nonlinear_noisy"`` adds :math:`\varepsilon_i`.
    * ``"partial"`` (ours, the partially mixed case): :math:`\hat Z_i = (1-w) Z_i + w Z_{(i+1) \bmod k} +
      \varepsilon_i`, one extra latent leaks into each block.
    * ``"full"``: :math:`\hat Z_i = (1-w) Z_i + w \sum_l Z_l` (paper: :math:`w = 0.2`, no noise).

    Args:
        latents: ``(n, k)`` latents.
        kind: one of :data:`KINDS`.
        rng: generator of the measurement noise.
        noise_sd: :math:`\sigma` (paper: 0.2).
        mix_weight: :math:`w` of the mixed kinds (paper: 0.2), in ``(0, 1)``.

    Returns:
        ``k`` arrays of shape ``(n, 1)``.

    Raises:
        ValueError: unknown ``kind``, non-finite or non-2-D ``latents``, negative ``noise_sd``, bad ``mix_weight``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    z = np.asarray(latents, dtype=np.float64)
    if z.ndim != 2 or z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError(f"latents must be a finite, non-empty (n, k) array, got shape {z.shape}")
    if not noise_sd >= 0.0:
        raise ValueError(f"noise_sd must be >= 0, got {noise_sd}")
    if not 0.0 < mix_weight < 1.0:
        raise ValueError(f"mix_weight must be in (0, 1), got {mix_weight}")
    n, k = z.shape

    def eps() -> NDArray[np.float64]:
        return np.asarray(noise_sd * rng.standard_normal(n), dtype=np.float64)

    out = []
    for i in range(k):
        zi = z[:, i]
        if kind == "perfect":
            col = zi.copy()
        elif kind == "noisy":
            col = zi + eps()
        elif kind == "nonlinear":
            col = zi + 0.5 * zi**2
        elif kind == "nonlinear_noisy":
            col = zi + 0.5 * zi**2 + eps()
        elif kind == "partial":
            col = (1 - mix_weight) * zi + mix_weight * z[:, (i + 1) % k] + eps()
        else:
            col = (1 - mix_weight) * zi + mix_weight * z.sum(axis=1)
        out.append(col[:, None])
    return out


@dataclass(frozen=True)
class FiveLatentSCM:
    r"""The five-latent treatment-outcome SCM of the paper's Sec. 5.1, linear-Gaussian (our coefficients).

    .. math::
        z_0 = u_0,\quad x = a_{x0} z_0 + u_x,\quad y = a_{y0} z_0 + \tau x + u_y,\quad
        z_1 = a_{10} z_0 + a_{1y} y + u_1,\quad z_2 = a_{20} z_0 + a_{21} z_1 + u_2

    with independent :math:`u \sim N(0, \sigma_u^2)`. :math:`z_0` is the confounder of the treatment
    :math:`x` (:math:`= z_3`) and the outcome :math:`y` (:math:`= z_4`); :math:`z_1, z_2` are descendants of
    :math:`y`. The ATE of :math:`x` on :math:`y` is :math:`\tau`. Columns are ordered ``[z0, z1, z2, x, y]`` as in
    the paper's data files.
    """

    a_x0: float = 0.8
    a_y0: float = 0.6
    tau: float = 1.0
    a_10: float = 0.5
    a_1y: float = 0.5
    a_20: float = 0.4
    a_21: float = 0.6
    noise_sd: float = 1.0

    COLUMNS = ("z0", "z1", "z2", "x", "y")

    def __post_init__(self) -> None:
        for name in ("a_x0", "a_y0", "tau", "a_10", "a_1y", "a_20", "a_21", "noise_sd"):
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)}")
        if self.noise_sd <= 0:
            raise ValueError(f"noise_sd must be > 0, got {self.noise_sd}")

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """``(n, 5)`` samples, columns ``[z0, z1, z2, x, y]``."""
        n = _check_int(n, "n", 1)
        u = self.noise_sd * rng.standard_normal((n, 5))
        z0 = u[:, 0]
        x = self.a_x0 * z0 + u[:, 3]
        y = self.a_y0 * z0 + self.tau * x + u[:, 4]
        z1 = self.a_10 * z0 + self.a_1y * y + u[:, 1]
        z2 = self.a_20 * z0 + self.a_21 * z1 + u[:, 2]
        return np.column_stack([z0, z1, z2, x, y])


def corrupt_with_descendants(
    z0_hat: NDArray[np.float64], latents: NDArray[np.float64], *, w1: float = 0.2, w2: float = -0.1
) -> NDArray[np.float64]:
    """Model C of the paper: :math:`\\hat z_0 + 0.2 z_1 - 0.1 z_2`, leaking descendants of the outcome."""
    z = np.asarray(latents, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != 5:
        raise ValueError(f"latents must be (n, 5) with columns [z0, z1, z2, x, y], got shape {z.shape}")
    return np.asarray(z0_hat, dtype=np.float64).reshape(-1) + w1 * z[:, 1] + w2 * z[:, 2]


@dataclass(frozen=True)
class MultiViewMixing:
    r"""Two views of the five-latent SCM sharing only :math:`z_0` (the multi-view CRL setting, Yao et al. 2024).

    View 1 is :math:`g_1(z_0, z_1, z_2)`, view 2 is :math:`g_2(z_0, x, y)`, each :math:`g` an invertible map of
    ``layers`` leaky-tanh layers with random orthogonal-plus-identity weights drawn from ``seed``.
    """

    seed: int = 0
    layers: int = 2

    def _weights(self) -> list[list[NDArray[np.float64]]]:
        rng = np.random.default_rng(self.seed)
        out = []
        for _ in range(2):
            mats = []
            for _ in range(self.layers):
                q, _r = np.linalg.qr(rng.standard_normal((3, 3)))
                mats.append(q + 0.5 * np.eye(3))
            out.append(mats)
        return out

    def views(self, latents: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(n, 3)`` views 1 and 2 of ``(n, 5)`` latents ``[z0, z1, z2, x, y]``."""
        z = np.asarray(latents, dtype=np.float64)
        if z.ndim != 2 or z.shape[1] != 5:
            raise ValueError(f"latents must be (n, 5) with columns [z0, z1, z2, x, y], got shape {z.shape}")
        w1, w2 = self._weights()
        inputs = (z[:, [0, 1, 2]], z[:, [0, 3, 4]])
        out = []
        for x, mats in zip(inputs, (w1, w2)):
            h = x
            for m in mats:
                h = leaky_tanh(h @ m.T)
            out.append(h)
        return out[0], out[1]
