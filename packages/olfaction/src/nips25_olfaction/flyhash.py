"""FlyHash: sparse random expansion plus k-winners-take-all, the non-spiking sparsification baseline."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nips25_olfaction.odors import dense

__all__ = ["kwta_hash"]


def kwta_hash(x: ArrayLike, connectivity: ArrayLike, *, k: int) -> NDArray[np.float64]:
    r"""FlyHash code: project with the 0/1 PN-to-KC matrix, keep the ``k`` largest KCs of each input.

    :math:`h(x) = \mathrm{WTA}_k(Cx)`: exactly ``k`` ones per row (ties broken by KC index), zeros elsewhere.

    Args:
        x: inputs, shape ``(N, n_pn)``, dense or a scipy sparse matrix.
        connectivity: 0/1 matrix ``(n_kc, n_pn)``.
        k: winners per input, ``1 <= k <= n_kc`` (the number of active KCs, not a block length).

    Returns:
        Binary codes, shape ``(N, n_kc)``, float64, each row summing to ``k``.

    Raises:
        ValueError: on shape mismatches, non-finite input or ``k`` out of range.

    References:
        Dasgupta, Stevens & Navlakha, "A neural algorithm for a fundamental computing problem", Science 2017.
    """
    xs = np.asarray(dense(x), dtype=np.float64)
    c = np.asarray(connectivity, dtype=np.float64)
    if xs.ndim != 2 or c.ndim != 2 or xs.shape[1] != c.shape[1] or xs.shape[0] == 0:
        raise ValueError(f"x (N, n_pn) and connectivity (n_kc, n_pn) disagree: {xs.shape}, {c.shape}")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(c))):
        raise ValueError("x and connectivity must be finite")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= c.shape[0]:
        raise ValueError(f"k must be in [1, n_kc={c.shape[0]}], got {k}")
    proj = xs @ c.T
    order = np.argsort(-proj, axis=1, kind="stable")[:, :k]
    out = np.zeros_like(proj)
    np.put_along_axis(out, order, 1.0, axis=1)
    return out
