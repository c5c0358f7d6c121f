"""The paper's baselines in the same harness: Random, Greedy/KNN-Perf/Cost, BatchSplit, offline LP (Sec. 5)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from nips25_routing.dual import lp_oracle
from nips25_routing.estimation import ANNEstimator
from nips25_routing.ties import TIE_RTOL, argmax_random_ties
from nips25_routing.validation import as_matrix, as_vector, check_nonnegative_int, check_positive_int

__all__ = ["BatchSplitRouter", "GreedyRouter", "RandomRouter", "batch_assignment", "offline_lp_actions"]

_STDOUT_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_native_stdout() -> Iterator[None]:
    """Send what native code writes to file descriptor 1 to ``/dev/null`` for the duration of the block.

    scipy's bundled HiGHS MIP solver prints a leftover debug line
    (``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``) with a bare ``printf``, whatever
    its ``disp``/output options say, and it landed in the middle of ``nips25-routing run``'s table. Python-level
    output is flushed first; C stdio is flushed before the descriptor is restored, so nothing leaks out later.
    Where descriptor 1 cannot be duplicated (an embedded interpreter without one), the block runs unchanged.
    """
    with _STDOUT_LOCK:
        try:
            sys.stdout.flush()
            saved: int | None = os.dup(1)
        except (OSError, ValueError, AttributeError):
            saved = None
        if saved is None:
            yield
            return
        try:
            import ctypes

            libc: Any = ctypes.CDLL(None)
        except (OSError, AttributeError):  # no C library handle on this platform: the descriptor swap alone
            libc = None
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
                try:
                    yield
                finally:
                    if libc is not None:
                        libc.fflush(None)
                    os.dup2(saved, 1)
        finally:
            os.close(saved)


class RandomRouter:
    """Each query to a model drawn uniformly from ``0..M-1`` (the paper's Random baseline).

    Args:
        n_models: ``M >= 1``.
        seed: seed of the draws.

    Example:
        >>> RandomRouter(3, seed=0).route(np.zeros((4, 2))).shape
        (4,)
    """

    def __init__(self, n_models: int, *, seed: int = 0) -> None:
        self.n_models = check_positive_int(n_models, "n_models")
        self._rng = np.random.default_rng(seed)

    def route(self, embeddings: Any) -> np.ndarray:
        """``(B,)`` random model indices for the ``(B, D)`` batch.

        Raises:
            ValueError: if ``embeddings`` is not a finite, non-empty 2-D array.
        """
        q = as_matrix(embeddings, "embeddings", dtype=np.float32)
        return np.asarray(self._rng.integers(0, self.n_models, size=q.shape[0]), dtype=np.int64)


class GreedyRouter:
    r"""Budget-blind greedy routing on kNN estimates (Greedy-Perf/Cost; KNN-Perf/Cost with an exact estimator).

    ``kind="perf"``: :math:`\arg\max_i \hat d_{ji}`. ``kind="cost"``: the model with the most *estimated* budget
    left, :math:`\arg\max_i (B_i - \sum_{j'<j,\ a_{j'}=i} \hat g_{j'i})` (official ``utils.greedy``, ``op=2``).
    Ties are broken at random (seeded), never by list order: the official code's ``np.argmax`` sends them to the
    first-listed model, which on 0/1 quality makes Greedy-Perf prefer whatever model is listed first. With
    ``ANNEstimator(backend="sklearn")`` these are the paper's KNN-Perf/Cost.

    Args:
        estimator: the kNN estimator.
        budgets: ``(M,)`` per-model budgets (used by ``kind="cost"``).
        kind: ``"perf"`` or ``"cost"``.
        seed: seed of the tie-breaking draws.

    Raises:
        ValueError: on an unknown ``kind`` or bad budgets.

    Example:
        >>> import numpy as np
        >>> from nips25_routing import HistoryStore
        >>> h = HistoryStore(np.eye(2), [[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [1.0, 2.0]], ["a", "b"])
        >>> est = ANNEstimator(h, backend="faiss-flat", k=2)
        >>> picks = GreedyRouter(est, [9.0, 9.0], seed=0).route(np.ones((400, 2)))
        >>> bool(0.4 < picks.mean() < 0.6)  # both models tie at quality 1: half each, not all to "a"
        True
    """

    def __init__(
        self, estimator: ANNEstimator, budgets: Any, *, kind: Literal["perf", "cost"] = "perf", seed: int = 0
    ) -> None:
        if not isinstance(estimator, ANNEstimator):
            raise TypeError(f"estimator must be an ANNEstimator, got {type(estimator).__name__}")
        if kind not in ("perf", "cost"):
            raise ValueError(f"kind must be 'perf' or 'cost', got {kind!r}")
        self.estimator = estimator
        self.kind = kind
        self.n_models = estimator.n_models
        self.remaining = as_vector(budgets, "budgets", size=self.n_models, nonnegative=True).copy()
        self._rng = np.random.default_rng(check_nonnegative_int(seed, "seed"))

    def route(self, embeddings: Any) -> np.ndarray:
        """``(B,)`` model indices for the ``(B, D)`` batch, in arrival order.

        Raises:
            ValueError: if ``embeddings`` is not a finite, non-empty ``(B, D)`` array.
        """
        d_hat, g_hat = self.estimator.estimate(embeddings)
        if self.kind == "perf":
            return argmax_random_ties(d_hat, self._rng)
        out = np.empty(d_hat.shape[0], dtype=np.int64)
        draws = self._rng.random((d_hat.shape[0], self.n_models))
        for j in range(d_hat.shape[0]):
            best = self.remaining.max()
            tied = self.remaining >= best - TIE_RTOL * abs(best)
            out[j] = int(np.where(tied, draws[j], -1.0).argmax())
            self.remaining[out[j]] -= g_hat[j, out[j]]
        return out


def batch_assignment(
    d_hat: Any, g_hat: Any, remaining: Any, *, time_limit: float = 10.0, rng: np.random.Generator | None = None
) -> np.ndarray:
    r"""BatchSplit's per-batch binary program, solved with scipy's HiGHS MILP.

    .. math:: \max_{x\in\{0,1\}^{B\times M}} \sum_{j,i} \hat d_{ji} x_{ji} \;\text{s.t.}\;
              \sum_j \hat g_{ji} x_{ji} \le R_i,\; \sum_i x_{ji} \le 1.

    Args:
        d_hat: ``(B, M)`` estimated quality.
        g_hat: ``(B, M)`` estimated cost, ``>= 0``.
        remaining: ``(M,)`` remaining (estimated) budgets, ``>= 0``.
        time_limit: seconds HiGHS may spend; the best feasible point found is used.
        rng: when given, the models are handed to HiGHS in a random order (drawn from ``rng``) and mapped back, so
            which of several optimal assignments is returned does not depend on the model list's order.

    Returns:
        ``(B,)`` actions in ``0..M`` (``M`` when the program leaves the query unassigned).

    Raises:
        ValueError: on mismatched shapes, NaN/inf or negative costs/budgets.

    Example:
        >>> batch_assignment([[1.0, 0.2], [1.0, 0.3]], [[1.0, 0.1], [1.0, 0.1]], [1.0, 1.0]).tolist()
        [0, 1]
    """
    d = as_matrix(d_hat, "d_hat")
    g = as_matrix(g_hat, "g_hat", rows=d.shape[0], cols=d.shape[1])
    r = as_vector(remaining, "remaining", size=d.shape[1])
    if (g < 0).any():
        raise ValueError("g_hat must be >= 0")
    r = np.maximum(r, 0.0)
    n, m = d.shape
    order = np.arange(m) if rng is None else rng.permutation(m)
    d, g, r = d[:, order], g[:, order], r[order]
    k = np.arange(n * m)
    j_idx, i_idx = np.divmod(k, m)
    import scipy.sparse as sp

    budget_rows = sp.csr_matrix((g.ravel(), (i_idx, k)), shape=(m, n * m))
    query_rows = sp.csr_matrix((np.ones(n * m), (j_idx, k)), shape=(n, n * m))
    with _quiet_native_stdout():  # HiGHS's MIP code prints a debug line to stdout regardless of its options
        res = milp(
            -d.ravel(),
            constraints=[LinearConstraint(budget_rows, -np.inf, r), LinearConstraint(query_rows, -np.inf, 1.0)],
            integrality=np.ones(n * m),
            bounds=Bounds(0.0, 1.0),
            options={"time_limit": time_limit, "disp": False},
        )
    out = np.full(n, m, dtype=np.int64)
    if res.x is None:
        return out
    x = res.x.reshape(n, m) > 0.5
    rows = x.any(axis=1)
    out[rows] = order[x[rows].argmax(axis=1)]
    return out


class BatchSplitRouter:
    """BatchSplit: solve the binary routing program on each arriving batch against the remaining estimated budget.

    After each batch, :math:`R_i \\mathrel{-}= \\sum_{j \\to i} \\hat g_{ji}` (official ``utils.segment_local``).
    Queries the program leaves unassigned are dropped (action ``M``). Batch size is the caller's ``route`` size
    (the paper: 256).

    Args:
        estimator: the kNN estimator.
        budgets: ``(M,)`` per-model budgets.
        time_limit: HiGHS time limit per batch, seconds.
        seed: seed of the random model order handed to HiGHS (ties among optimal assignments at random).
    """

    def __init__(self, estimator: ANNEstimator, budgets: Any, *, time_limit: float = 10.0, seed: int = 0) -> None:
        if not isinstance(estimator, ANNEstimator):
            raise TypeError(f"estimator must be an ANNEstimator, got {type(estimator).__name__}")
        if not time_limit > 0:
            raise ValueError(f"time_limit must be > 0, got {time_limit}")
        self.estimator = estimator
        self.n_models = estimator.n_models
        self.time_limit = float(time_limit)
        self._rng = np.random.default_rng(check_nonnegative_int(seed, "seed"))
        self.remaining = as_vector(budgets, "budgets", size=self.n_models, nonnegative=True).copy()

    def route(self, embeddings: Any) -> np.ndarray:
        """``(B,)`` actions in ``0..M`` for the ``(B, D)`` batch.

        Raises:
            ValueError: if ``embeddings`` is not a finite, non-empty ``(B, D)`` array.
        """
        d_hat, g_hat = self.estimator.estimate(embeddings)
        out = batch_assignment(d_hat, g_hat, self.remaining, time_limit=self.time_limit, rng=self._rng)
        served = out < self.n_models
        np.subtract.at(self.remaining, out[served], g_hat[np.flatnonzero(served), out[served]])
        return out


def offline_lp_actions(quality: Any, cost: Any, budgets: Any, *, seed: int | None = 0) -> np.ndarray:
    """Offline LP routing with the official rounding: query ``j`` goes to ``argmax_i x_ji`` if that is > 0.

    With estimates this is the paper's Approx-Opt; with true quality and cost, its Optimum. Ties are broken at
    random: the models go to HiGHS in a random order (which optimal vertex it returns depends on the order) and
    equal entries of ``x`` are drawn among.

    Args:
        quality: ``(N, M)`` quality (estimated or true).
        cost: ``(N, M)`` cost (estimated or true).
        budgets: ``(M,)`` budgets.
        seed: seed of the random model order and tie draws; ``None`` keeps the list order and the lowest index
            (the official code's rule).

    Returns:
        ``(N,)`` actions in ``0..M`` (``M`` = dropped).

    Example:
        >>> offline_lp_actions([[1.0, 0.5], [1.0, 0.5]], [[1.0, 1.0], [1.0, 1.0]], [1.0, 0.0]).tolist()
        [0, 2]
    """
    d = as_matrix(quality, "quality")
    g = as_matrix(cost, "cost", rows=d.shape[0], cols=d.shape[1])
    b = as_vector(budgets, "budgets", size=d.shape[1], nonnegative=True)
    m = d.shape[1]
    if seed is None:
        x, _ = lp_oracle(d, g, b)
        best = x.argmax(axis=1)
    else:
        rng = np.random.default_rng(check_nonnegative_int(seed, "seed"))
        order = rng.permutation(m)
        xp, _ = lp_oracle(d[:, order], g[:, order], b[order])
        x = np.empty_like(xp)
        x[:, order] = xp
        best = argmax_random_ties(x, rng, rtol=1e-9)
    return np.where(x[np.arange(x.shape[0]), best] > 1e-9, best, m).astype(np.int64)
