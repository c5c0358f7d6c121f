"""T-MEX: the test-based measurement-exclusivity score of learned representations (Yao et al. 2025, Sec. 4).

A learned block :math:`\\hat Z_i` is a *measurement* of the latents it should stand for, given by the intended
measurement graph :math:`W \\in \\{0,1\\}^{m \\times k}`: :math:`\\hat Z_i` must depend on :math:`Z_j` given the
other latents iff :math:`W_{ij} = 1`. T-MEX estimates the graph with conditional-independence tests and counts
the mismatches.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from nips25_shared import progress
from nips25_tmex.gcm import (
    TEST_TYPES,
    CITestResult,
    DegenerateResidualWarning,
    degenerate_columns,
    gcm_from_residuals,
    gcm_univariate_columns,
)
from nips25_tmex.kci import kci_test
from nips25_tmex.pcm import pcm_test
from nips25_tmex.regression import is_linear, make_regressor, residuals
from nips25_tmex.validation import as_matrix, check_probability

__all__ = ["TMEX", "TMEXResult", "as_blocks", "tmex"]

CITest = Literal["gcm", "pcm", "kci"] | Callable[..., CITestResult | float]
Correction = Literal["bonferroni", "holm"] | None
TESTS = ("gcm", "pcm", "kci")


@dataclass(frozen=True)
class TMEXResult:
    """The T-MEX score of one representation.

    Attributes:
        score: :math:`\\sum_{ij} 1[\\hat W_{ij} \\ne W_{ij}]`, in ``[0, m k]``; 0 is perfect exclusivity.
        estimated_graph: ``(m, k)`` bool, :math:`\\hat W_{ij} = 1[p_{ij} < \\alpha]` (after any correction).
        p_values: ``(m, k)`` float, raw p-value of :math:`H_0: \\hat Z_i \\perp Z_j \\mid Z_{-j}`.
        measurement_graph: ``(m, k)`` bool, the intended graph :math:`W`.
        alpha: the level of every test.
    """

    score: int
    estimated_graph: NDArray[np.bool_]
    p_values: NDArray[np.float64]
    measurement_graph: NDArray[np.bool_]
    alpha: float

    @property
    def false_positives(self) -> int:
        """Edges found where :math:`W` has none (a block measures a latent it should not)."""
        return int(np.sum(self.estimated_graph & ~self.measurement_graph))

    @property
    def false_negatives(self) -> int:
        """Edges of :math:`W` that the tests did not find (a block fails to measure its latent)."""
        return int(np.sum(~self.estimated_graph & self.measurement_graph))


@contextmanager
def _one_degenerate_warning() -> Iterator[None]:
    """Collect the per-pair :class:`DegenerateResidualWarning` of one T-MEX call into one warning.

    A block that is an exact function of the conditioning latents (e.g. a perfect measurement of another latent)
    has a zero residual: its p-value is set to 1, which is the right answer there, but the test did not run, so
    the user is told once per call how many pairs were decided that way. Other warnings pass through unchanged.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateResidualWarning)
        yield
    degenerate = [w for w in caught if issubclass(w.category, DegenerateResidualWarning)]
    for w in caught:
        if not issubclass(w.category, DegenerateResidualWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if degenerate:
        warnings.warn(
            f"{len(degenerate)} (block, latent) pair(s) had a numerically zero residual (the block is a function "
            "of the conditioning latents); their p-values were set to 1",
            DegenerateResidualWarning,
            stacklevel=4,
        )


def as_blocks(blocks: Any, n: int | None = None) -> list[NDArray[np.float64]]:
    """Validate ``blocks``: a sequence of ``(n, d_i)`` arrays, or one ``(n, m)`` array whose columns are blocks.

    Raises:
        TypeError: if ``blocks`` is not a sequence of arrays or an array.
        ValueError: if it is empty, a block is malformed (NaN/inf, empty) or the blocks disagree on ``n``.
    """
    if isinstance(blocks, np.ndarray):
        if blocks.ndim != 2:
            raise ValueError(f"blocks as one array must be 2-D (n, m), got shape {blocks.shape}")
        items: list[Any] = [blocks[:, i] for i in range(blocks.shape[1])]
    elif isinstance(blocks, Sequence) and not isinstance(blocks, (str, bytes)):
        items = list(blocks)
    else:
        raise TypeError(f"blocks must be a sequence of (n, d_i) arrays, got {type(blocks).__name__}")
    if not items:
        raise ValueError("blocks must hold at least one block")
    out = [as_matrix(b, f"blocks[{i}]", min_rows=3) for i, b in enumerate(items)]
    n0 = out[0].shape[0] if n is None else n
    for i, b in enumerate(out):
        if b.shape[0] != n0:
            raise ValueError(f"blocks[{i}] has {b.shape[0]} rows, expected n = {n0} (the rows of latents)")
    return out


def _graph(measurement_graph: Any, m: int, k: int) -> NDArray[np.bool_]:
    if measurement_graph is None:
        if m != k:
            raise ValueError(
                f"measurement_graph is required when the number of blocks ({m}) differs from the tested latents ({k})"
            )
        return np.eye(k, dtype=bool)
    w = np.asarray(measurement_graph)
    if w.shape != (m, k):
        raise ValueError(f"measurement_graph must have shape (m, t) = ({m}, {k}), got {w.shape}")
    if not np.all(np.isin(w, (0, 1))):
        raise ValueError("measurement_graph must hold only 0/1 (or bool) entries")
    return w.astype(bool)


def _reject(p: NDArray[np.float64], alpha: float, correction: Correction) -> NDArray[np.bool_]:
    if correction is None:
        return p < alpha
    flat = p.ravel()
    total = flat.size
    if correction == "bonferroni":
        return (p * total) < alpha
    order = np.argsort(flat, kind="stable")
    reject = np.zeros(total, dtype=bool)
    for rank, idx in enumerate(order):
        if flat[idx] < alpha / (total - rank):
            reject[idx] = True
        else:
            break
    return reject.reshape(p.shape)


def _gcm_pvalues(
    z: NDArray[np.float64],
    hz: list[NDArray[np.float64]],
    targets: list[int],
    *,
    regressor: Any,
    test_type: str,
    B: int,
    degenerate_tol: float,
    random_state: int | None,
) -> NDArray[np.float64]:
    """GCM p-values, reusing each latent's residual for every block (and one joint OLS fit for LM)."""
    k = z.shape[1]
    sizes = [b.shape[1] for b in hz]
    edges = np.cumsum([0, *sizes])
    stacked = np.hstack(hz)
    p = np.ones((len(hz), len(targets)))
    for col, j in enumerate(targets):
        rest = np.delete(z, j, axis=1) if k > 1 else None
        x = z[:, [j]]
        r_x = residuals(x, rest, regressor, random_state=random_state)
        keep_x = degenerate_columns(r_x, x, degenerate_tol)
        if is_linear(regressor) or rest is None:
            r_all = residuals(stacked, rest, regressor, random_state=random_state)
            r_blocks = [r_all[:, edges[i] : edges[i + 1]] for i in range(len(hz))]
        else:
            r_blocks = [residuals(b, rest, regressor, random_state=random_state) for b in hz]
        if all(size == 1 for size in sizes):  # 1-D blocks: every test of latent j in one vectorised pass
            r_y = np.hstack(r_blocks)
            keep_y = degenerate_columns(r_y, stacked, degenerate_tol)
            p[:, col], _, n_degenerate = gcm_univariate_columns(r_x, r_y, keep_x=bool(keep_x[0]), keep_y=keep_y)
            for _ in range(n_degenerate):  # one per pair, as gcm_from_residuals: _one_degenerate_warning counts them
                warnings.warn(
                    "every residual product is degenerate (a residual is numerically zero); p-value set to 1",
                    DegenerateResidualWarning,
                    stacklevel=3,
                )
            continue
        for i, (block, r_y) in enumerate(zip(hz, r_blocks)):
            seed = None if random_state is None else [random_state, i, j]
            needs_rng = block.shape[1] > 1 and test_type == "max"
            p[i, col] = gcm_from_residuals(
                r_x,
                r_y,
                test_type=test_type,  # type: ignore[arg-type]
                B=B,
                rng=np.random.default_rng(seed) if needs_rng else None,
                keep_x=keep_x,
                keep_y=degenerate_columns(r_y, block, degenerate_tol),
            ).pvalue
    return p


def tmex(
    latents: Any,
    blocks: Any,
    measurement_graph: Any = None,
    *,
    alpha: float = 0.05,
    test: CITest = "gcm",
    regressor: Any = "lm",
    test_type: str = "max",
    B: int = 499,
    correction: Correction = None,
    degenerate_tol: float = 1e-10,
    targets: Sequence[int] | None = None,
    random_state: int | None = 0,
    **test_kw: Any,
) -> TMEXResult:
    r"""T-MEX score of learned blocks against latents (Yao et al. 2025, Sec. 4, Def. "T-MEX").

    For every block :math:`i` and latent :math:`j`, test :math:`H_0: \hat Z_i \perp Z_j \mid Z_{-j}` and set
    :math:`\hat W_{ij} = 1[p_{ij} < \alpha]`; the score is

    .. math:: \mathrm{T\text{-}MEX} = \sum_{i=1}^{m}\sum_{j=1}^{k} 1[\hat W_{ij} \neq W_{ij}] \in [0, mk].

    Args:
        latents: ``(n, k)`` latent variables :math:`Z` (all of them observed; :math:`Z_{-j}` is every other
            column; ``k = 1`` gives marginal tests).
        blocks: ``m`` learned blocks, a sequence of ``(n, d_i)`` arrays, or one ``(n, m)`` array of 1-D blocks.
        measurement_graph: ``(m, t)`` 0/1 intended graph :math:`W` over the ``t`` tested latents (``t = k``
            unless ``targets`` is given); ``None`` means the identity (``m == t``).
        alpha: level of each test, in ``(0, 1)`` (paper: 0.05).
        test: ``"gcm"`` (paper's default), ``"pcm"``, ``"kci"`` (needs causal-learn) or a callable
            ``test(Y, X, Z) -> CITestResult | float`` returning a p-value.
        regressor: regression of the GCM/PCM: ``"lm"`` (paper's default), ``"krr"``, ``"rf"`` or a
            scikit-learn regressor.
        test_type: GCM statistic for multi-dimensional blocks, ``"max"`` (paper) or ``"quadratic"``.
        B: multiplier-bootstrap draws of the ``"max"`` GCM (paper: 499).
        correction: ``None`` (paper), ``"bonferroni"`` or ``"holm"`` over the ``m k`` tests.
        degenerate_tol: see :func:`~nips25_tmex.gcm.gcm_test`; a block that is an exact function of
            :math:`Z_{-j}` gets :math:`p_{ij} = 1`.
        targets: indices of the latents :math:`j` to test (default: all ``k``); every test still conditions on
            all other ``k - 1`` latents. The paper's Sec. 5.1 score tests ``z0, z1, z2`` of five latents.
        random_state: seed of bootstraps, sample splits and randomised regressions.
        **test_kw: passed to ``pcm_test`` / ``kci_test`` / the callable.

    Returns:
        :class:`TMEXResult` with ``score``, ``estimated_graph`` and ``p_values``.

    Raises:
        ValueError: malformed arrays (shape, NaN/inf, mismatched ``n``), a wrongly shaped or non-binary
            ``measurement_graph``, ``alpha`` outside ``(0, 1)``, unknown ``test``/``test_type``/``correction``.
        TypeError: non-numeric input or ``blocks`` of the wrong type.

    References:
        Yao, Huang, Cadei, Zhang & Locatello, "The Third Pillar of Causal Analysis? A Measurement Perspective on
        Causal Representations", NeurIPS 2025, arXiv:2505.17708, Sec. 4.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> z = rng.normal(size=(500, 3))
        >>> tmex(z, [z[:, [0]], z[:, [1]], z[:, [2]]]).score
        0
    """
    alpha = check_probability(alpha, "alpha")
    if correction not in (None, "bonferroni", "holm"):
        raise ValueError(f"correction must be None, 'bonferroni' or 'holm', got {correction!r}")
    if test_type not in TEST_TYPES:
        raise ValueError(f"test_type must be one of {TEST_TYPES}, got {test_type!r}")
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ValueError(f"B must be a positive integer, got {B!r}")
    if not 0.0 <= float(degenerate_tol) < 1.0:
        raise ValueError(f"degenerate_tol must be in [0, 1), got {degenerate_tol}")
    if not (callable(test) or test in TESTS):
        raise ValueError(f"test must be one of {TESTS} or a callable, got {test!r}")
    if isinstance(regressor, str) or not callable(test):
        make_regressor(regressor)  # validates the name early
    z = as_matrix(latents, "latents", min_rows=3)
    hz = as_blocks(blocks, z.shape[0])
    k = z.shape[1]
    if targets is None:
        cols = list(range(k))
    else:
        cols = [int(t) for t in np.asarray(targets, dtype=int).ravel()]
        if not cols or len(set(cols)) != len(cols) or min(cols) < 0 or max(cols) >= k:
            raise ValueError(f"targets must be distinct latent indices in [0, {k}), got {targets!r}")
    w = _graph(measurement_graph, len(hz), len(cols))
    with _one_degenerate_warning():
        if test == "gcm":
            if test_kw:
                raise TypeError(f"unexpected keyword arguments for test='gcm': {sorted(test_kw)}")
            p = _gcm_pvalues(
                z,
                hz,
                cols,
                regressor=regressor,
                test_type=test_type,
                B=B,
                degenerate_tol=degenerate_tol,
                random_state=random_state,
            )
        else:
            p = np.ones((len(hz), len(cols)))
            name = test if isinstance(test, str) else "custom"
            for col, j in enumerate(progress(cols, total=len(cols), desc=f"T-MEX ({name})")):
                rest = np.delete(z, j, axis=1) if k > 1 else None
                for i, block in enumerate(hz):
                    if test == "pcm":
                        res: Any = pcm_test(
                            block, z[:, j], rest, regressor=regressor, random_state=random_state, **test_kw
                        )
                    elif test == "kci":
                        res = kci_test(block, z[:, j], rest, **test_kw)
                    else:
                        res = test(block, z[:, j], rest, **test_kw)  # type: ignore[operator]
                    pv = float(res.pvalue if isinstance(res, CITestResult) else res)
                    if not 0.0 <= pv <= 1.0:
                        raise ValueError(f"test returned a p-value outside [0, 1]: {pv}")
                    p[i, col] = pv
    w_hat = _reject(p, alpha, correction)
    return TMEXResult(
        score=int(np.sum(w_hat != w)), estimated_graph=w_hat, p_values=p, measurement_graph=w, alpha=alpha
    )


class TMEX(BaseEstimator):  # type: ignore[misc]
    """scikit-learn estimator wrapper of :func:`tmex`: ``fit(representation, latents)`` then read ``score_``.

    ``fit(X, y)`` takes the learned representation ``X`` ``(n, d)`` and the latents ``y`` ``(n, k)``; ``blocks``
    splits the ``d`` columns into ``m`` blocks (``None``: one block per column; a list of ints: consecutive
    block sizes; a list of index lists: explicit columns). :meth:`score` returns ``-T-MEX`` so that greater is
    better, as scikit-learn scorers expect. Parameters are those of :func:`tmex`.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> z = rng.normal(size=(400, 2))
        >>> TMEX().fit(z @ np.array([[1.0, 0.5], [0.5, 1.0]]), z).score_
        2
    """

    def __init__(
        self,
        *,
        blocks: Sequence[int] | Sequence[Sequence[int]] | None = None,
        measurement_graph: Any = None,
        alpha: float = 0.05,
        test: CITest = "gcm",
        regressor: Any = "lm",
        test_type: str = "max",
        B: int = 499,
        correction: Correction = None,
        random_state: int | None = 0,
    ) -> None:
        self.blocks = blocks
        self.measurement_graph = measurement_graph
        self.alpha = alpha
        self.test = test
        self.regressor = regressor
        self.test_type = test_type
        self.B = B
        self.correction = correction
        self.random_state = random_state

    def _split(self, X: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        d = X.shape[1]
        if self.blocks is None:
            return [X[:, [c]] for c in range(d)]
        spec = list(self.blocks)
        if not spec:
            raise ValueError("blocks must not be empty")
        if all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in spec):
            sizes = [int(s) for s in spec]  # type: ignore[call-overload]
            if min(sizes) < 1 or sum(sizes) != d:
                raise ValueError(f"blocks as sizes must be positive and sum to the {d} columns of X, got {sizes}")
            edges = np.cumsum([0, *sizes])
            return [X[:, edges[i] : edges[i + 1]] for i in range(len(sizes))]
        out = []
        seen: dict[int, int] = {}
        for i, cols in enumerate(spec):
            idx = np.asarray(cols, dtype=int).ravel()
            if idx.size == 0 or idx.min() < 0 or idx.max() >= d:
                raise ValueError(f"blocks[{i}] must list column indices in [0, {d}), got {cols!r}")
            for c in idx.tolist():
                if c in seen:
                    raise ValueError(
                        f"blocks must not overlap: column {c} is in blocks[{seen[c]}] and blocks[{i}] ({self.blocks!r})"
                    )
                seen[c] = i
            out.append(X[:, idx])
        return out

    def _run(self, X: Any, y: Any) -> tuple[TMEXResult, int]:
        x = as_matrix(X, "X", min_rows=3)
        z = as_matrix(y, "y", min_rows=3)
        if x.shape[0] != z.shape[0]:
            raise ValueError(f"X has {x.shape[0]} rows but y has {z.shape[0]}: every input needs the same n")
        result = tmex(
            z,
            self._split(x),
            self.measurement_graph,
            alpha=self.alpha,
            test=self.test,
            regressor=self.regressor,
            test_type=self.test_type,
            B=self.B,
            correction=self.correction,
            random_state=self.random_state,
        )
        return result, x.shape[1]

    def fit(self, X: Any, y: Any) -> TMEX:
        """Score the representation ``X`` ``(n, d)`` against the latents ``y`` ``(n, k)``; sets ``result_``."""
        self.result_, self.n_features_in_ = self._run(X, y)
        self.score_ = self.result_.score
        self.estimated_graph_ = self.result_.estimated_graph
        self.p_values_ = self.result_.p_values
        return self

    def score(self, X: Any, y: Any) -> float:
        """``-T-MEX`` of ``X`` against ``y`` (greater is better; 0 is perfect exclusivity); no refit of state.

        Raises:
            sklearn.exceptions.NotFittedError: if called before :meth:`fit`.
            ValueError: if ``X`` has a different number of columns than the ``X`` seen in :meth:`fit`.
        """
        check_is_fitted(self, "result_")
        n_cols = np.asarray(X).shape[1] if np.ndim(X) == 2 else None
        if n_cols is not None and n_cols != self.n_features_in_:
            raise ValueError(f"X has {n_cols} columns, but TMEX was fitted with {self.n_features_in_}")
        return -float(self._run(X, y)[0].score)
