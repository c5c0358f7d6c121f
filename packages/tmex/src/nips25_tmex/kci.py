"""The kernel conditional-independence (KCI) test, through causal-learn when it is installed (Zhang et al. 2011)."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from nips25_tmex.gcm import CITestResult
from nips25_tmex.validation import as_yxz

__all__ = ["kci_available", "kci_test"]

_MISSING = "kci_test needs causal-learn: pip install 'nips25-tmex[kci]' (or pip install causal-learn)"


def kci_available() -> bool:
    """Whether causal-learn (which provides KCI) is importable."""
    return importlib.util.find_spec("causallearn") is not None


def kci_test(Y: Any, X: Any, Z: Any = None, *, est_width: str = "median", approx: bool = True) -> CITestResult:
    r"""Kernel conditional-independence test of :math:`H_0: Y \perp X \mid Z` via causal-learn's ``KCI_CInd``.

    The statistic is the trace of the product of the centred (conditional) kernel matrices; its null
    distribution is approximated by a Gamma law (``approx=True``) as in causal-learn. Time and memory are
    :math:`O(n^3)` and :math:`O(n^2)` (causal-learn issue #73), so keep ``n`` in the low thousands.

    Args:
        Y: ``(n,)`` or ``(n, d_Y)``.
        X: ``(n,)`` or ``(n, d_X)``.
        Z: ``(n, d_Z)`` or ``None`` (marginal test, ``KCI_UInd``). Constant columns of ``Z`` are dropped (they
            carry no information and make causal-learn's kernel matrix singular); a ``Z`` with no varying column
            gives the marginal test, as conditioning on a constant does in :func:`~nips25_tmex.gcm.gcm_test`.
        est_width: kernel-width rule of causal-learn: ``"median"`` (the paper's call), ``"empirical"``,
            ``"manual"`` is not supported here.
        approx: Gamma approximation of the null (``True``) or simulated null (``False``).

    Returns:
        :class:`~nips25_tmex.gcm.CITestResult` (``df = 0``: not applicable).

    Raises:
        ImportError: if causal-learn is not installed (the message says how to install it).
        ValueError: wrong shapes, NaN/inf, mismatched ``n``, unknown ``est_width``.

    References:
        Zhang, Peters, Janzing & Schölkopf, "Kernel-based conditional independence test and application in
        causal discovery", UAI 2011. Yao et al., NeurIPS 2025, Sec. 5.1 (KCI as an alternative test).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=200); y = x + rng.normal(size=200)
        >>> kci_test(y, x).pvalue < 0.01  # doctest: +SKIP
        True
    """
    if est_width not in ("median", "empirical"):
        raise ValueError(f"est_width must be 'median' or 'empirical', got {est_width!r}")
    y, x, z = as_yxz(Y, X, Z, min_rows=3)
    if not kci_available():
        raise ImportError(_MISSING)
    from causallearn.utils.KCI.KCI import KCI_CInd, KCI_UInd

    if z is not None:
        varying = np.ptp(z, axis=0) > 0
        # a constant column carries no information and makes causal-learn's kernel matrix singular (LinAlgError);
        # drop it, and test marginally when nothing varies (the GCM's regression on a constant is the same thing)
        z = z[:, varying] if varying.any() else None
    if z is None:
        p, stat = KCI_UInd(est_width=est_width, approx=approx).compute_pvalue(x, y)
    else:
        p, stat = KCI_CInd(est_width=est_width, approx=approx).compute_pvalue(x, y, z)
    return CITestResult(pvalue=float(min(max(p, 0.0), 1.0)), statistic=float(stat), df=0, test="kci")
