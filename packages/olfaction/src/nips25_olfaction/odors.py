"""Odour inputs: receptor (ORN) responses, the ORN-to-PN transform, and odour sets (Hallem-Carlson or synthetic)."""

from __future__ import annotations

import importlib.util
import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["hard_subset", "load_hallem", "olsen_pn", "synthetic_odors"]

R_MAX = 165.0
SIGMA = 12.0
M_INPUT_GAIN = 10.63
LFP_SCALE = 190.0


def _check_matrix(x: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (odours, glomeruli), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def olsen_pn(orn: ArrayLike) -> NDArray[np.float64]:
    r"""Projection-neuron rates from receptor rates by input gain control (Olsen, Luo & Wilson 2010).

    .. math::
        \mathrm{PN}_i = R_{max} \frac{\mathrm{ORN}_i^{1.5}}{\mathrm{ORN}_i^{1.5} + \sigma^{1.5} + s^{1.5}},
        \qquad s = m \sum_j \mathrm{ORN}_j / 190,

    with :math:`R_{max} = 165` Hz, :math:`\sigma = 12`, :math:`m = 10.63`. Negative receptor rates are clipped to 0.

    Args:
        orn: receptor rates (Hz), shape ``(K, n_glomeruli)``.

    Returns:
        PN rates (Hz), shape ``(K, n_glomeruli)``, in ``[0, R_max)``.

    Raises:
        ValueError: if ``orn`` is not a finite, non-empty 2-D array.

    References:
        Olsen, Bhandawat & Wilson, Neuron 2010 (eq. 6); used by Li et al., NeurIPS 2025, as the PN stage.

    Example:
        >>> round(float(olsen_pn([[12.0, 0.0]])[0, 0]), 3)
        81.958
    """
    orn = np.clip(_check_matrix(orn, "orn"), 0.0, None)
    s = M_INPUT_GAIN * orn.sum(axis=1, keepdims=True) / LFP_SCALE
    p = orn**1.5
    return R_MAX * p / (p + SIGMA**1.5 + s**1.5)


def load_hallem() -> tuple[NDArray[np.float64], list[str]]:
    """Hallem & Carlson (2006) receptor responses of 110 odours x 24 receptors, with spontaneous rates added.

    Needs the optional extra ``hallem`` (``pip install 'nips25-olfaction[hallem]'``, which installs the GPLv3
    package ``drosolf``); the data are read from it at run time and never copied into this package.

    Returns:
        ``(orn, odour_names)``: rates in Hz, shape ``(110, 24)``, clipped at 0; and the 110 odour names.

    Raises:
        ModuleNotFoundError: if ``drosolf`` is not installed, naming the extra to install.
    """
    if importlib.util.find_spec("drosolf") is None:
        raise ModuleNotFoundError(
            "the Hallem-Carlson data need the optional extra: pip install 'nips25-olfaction[hallem]' (drosolf, GPLv3)"
        )
    from drosolf import orns

    with warnings.catch_warnings():  # drosolf uses a pandas keyword that pandas 3 deprecates
        warnings.simplefilter("ignore")
        frame = orns.orns()
    return np.clip(frame.to_numpy(dtype=np.float64), 0.0, None), [str(i) for i in frame.index]


def synthetic_odors(
    rng: np.random.Generator,
    n_odors: int,
    *,
    n_glomeruli: int = 24,
    n_families: int = 4,
    similarity: float = 0.7,
    spontaneous: float = 8.0,
    scale: float = 60.0,
) -> NDArray[np.float64]:
    r"""A synthetic receptor-response set with controlled similarity (used when Hallem-Carlson is not installed).

    Each odour belongs to one of ``n_families``; its log-response is
    :math:`\sqrt{\rho}\,f_{fam} + \sqrt{1-\rho}\,e`, with family and private patterns i.i.d. standard normal, and
    the receptor rate is ``spontaneous + scale * exp(log-response - 1)``: heavy-tailed, non-negative, with a within-
    family correlation controlled by ``similarity``.

    Args:
        rng: numpy generator (from ``nips25_shared.seed_everything``).
        n_odors: number of odours ``K >= 2``.
        n_glomeruli: number of receptor types (24 as in Hallem-Carlson).
        n_families: number of odour families (groups of similar odours).
        similarity: :math:`\rho \in [0, 1)`, the share of the family pattern.
        spontaneous: spontaneous rate (Hz) added to every receptor.
        scale: rate scale (Hz).

    Returns:
        Receptor rates (Hz), shape ``(n_odors, n_glomeruli)``.

    Raises:
        ValueError: on out-of-range arguments.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if isinstance(n_odors, bool) or not isinstance(n_odors, numbers.Integral) or n_odors < 2:
        raise ValueError(f"n_odors must be >= 2, got {n_odors}")
    if n_glomeruli < 1 or n_families < 1:
        raise ValueError(f"n_glomeruli and n_families must be >= 1, got {n_glomeruli}, {n_families}")
    if not 0.0 <= similarity < 1.0:
        raise ValueError(f"similarity must be in [0, 1), got {similarity}")
    if spontaneous < 0 or scale <= 0:
        raise ValueError(f"spontaneous must be >= 0 and scale > 0, got {spontaneous}, {scale}")
    families = rng.standard_normal((n_families, n_glomeruli))
    which = np.arange(n_odors) % n_families
    private = rng.standard_normal((n_odors, n_glomeruli))
    log_resp = np.sqrt(similarity) * families[which] + np.sqrt(1.0 - similarity) * private
    return spontaneous + scale * np.exp(log_resp - 1.0)


def hard_subset(pn: ArrayLike, k: int) -> NDArray[np.intp]:
    """Indices of a fixed set of ``k`` similar odours: the most "central" odour and its ``k-1`` nearest neighbours.

    Similarity is the Pearson correlation of PN response vectors; the centre is the odour of highest mean
    correlation to all others. Deterministic (ties broken by index).

    Args:
        pn: PN rates, shape ``(K, n_glomeruli)``.
        k: subset size, ``2 <= k <= K``.

    Returns:
        Sorted indices, shape ``(k,)``.

    Raises:
        ValueError: if ``k`` is out of range or ``pn`` malformed.
    """
    pn = _check_matrix(pn, "pn")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 2 <= k <= pn.shape[0]:
        raise ValueError(f"k must be in [2, {pn.shape[0]}], got {k}")
    corr = np.nan_to_num(np.atleast_2d(np.corrcoef(pn)), nan=0.0)
    centre = int(np.argmax(corr.mean(axis=1)))
    order = np.argsort(-corr[centre], kind="stable")
    return np.sort(order[:k])
