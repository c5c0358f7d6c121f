"""PORT: the training-free online router (Alg. 1 of Wu & Silwal, NeurIPS 2025)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from nips25_routing.dual import DualFit, alpha_vector, fit_dual
from nips25_routing.estimation import ANNEstimator
from nips25_routing.ties import argmax_random_ties
from nips25_routing.validation import (
    as_matrix,
    as_vector,
    check_bool,
    check_nonnegative_int,
    check_nonzero_rows,
    check_positive_int,
    check_real,
)
from nips25_shared.cache import atomic_write

__all__ = ["PORTConfig", "PORTRouter"]


@dataclass(frozen=True)
class PORTConfig:
    """Hyper-parameters of PORT (Alg. 1). Defaults are the official README run's, except the dual's form.

    Attributes:
        alpha: weight of quality against cost in the score :math:`\\alpha \\hat d - \\gamma \\hat g` (``> 0``;
            the official run: 1e-4, with costs in dollars).
        eps: fraction of the stream used as the random learning phase, in ``(0, 1)``.
        clip_zero: use the textbook dual with :math:`\\max(0, \\cdot)` (the default since 0.2.0, decided on 10
            digits-zoo seeds; ``False`` with ``gamma_max=1`` reproduces the official code).
        gamma_max: upper bound of every price (official: 1; default ``None``, unbounded). The bound is in units of
            quality per dollar, so it means different things on different cost scales.
        solver: ``"lp"`` (exact HiGHS solve of the dual, our default) or ``"lbfgsb"`` (the official code's).
        learn_drop: in the learning phase draw actions uniformly from ``{0..M}`` where ``M`` drops the query
            (official code); ``False`` draws from the ``M`` models only.
    """

    alpha: float = 1e-4
    eps: float = 0.025
    clip_zero: bool = True
    gamma_max: float | None = None
    solver: Literal["lp", "lbfgsb"] = "lp"
    learn_drop: bool = True

    def __post_init__(self) -> None:
        alpha = check_real(self.alpha, "alpha")
        if alpha <= 0:
            raise ValueError(f"alpha must be finite and > 0, got {self.alpha}")
        eps = check_real(self.eps, "eps")
        if not 0.0 < eps < 1.0:
            raise ValueError(f"eps must be in (0, 1), got {self.eps}")
        gamma_max = None if self.gamma_max is None else check_real(self.gamma_max, "gamma_max")
        if gamma_max is not None and gamma_max <= 0:
            raise ValueError(f"gamma_max must be > 0 or None, got {self.gamma_max}")
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "gamma_max", gamma_max)
        object.__setattr__(self, "clip_zero", check_bool(self.clip_zero, "clip_zero"))
        object.__setattr__(self, "learn_drop", check_bool(self.learn_drop, "learn_drop"))
        if self.solver not in ("lp", "lbfgsb"):
            raise ValueError(f"solver must be 'lp' or 'lbfgsb', got {self.solver!r}")
        if self.solver == "lbfgsb" and gamma_max is None:
            raise ValueError("gamma_max must be finite for solver='lbfgsb' (the official code uses 1)")


class PORTRouter:
    r"""Route a query stream to ``M`` models under per-model budgets, training-free (PORT, Alg. 1).

    1. Estimate :math:`\hat d_{ji}, \hat g_{ji}` from the ``k`` nearest history queries (ANN).
    2. For the first :math:`L = \lceil \epsilon N \rceil` queries, act uniformly at random over ``{0..M}``
       (``M`` = drop) and keep their estimates as the learning sample :math:`P`.
    3. Once, fit :math:`\gamma^* = \arg\min_{0\le\gamma\le\gamma_{max}} F(\gamma)` (:func:`~nips25_routing.fit_dual`).
    4. Route every later query to :math:`i^* = \arg\max_i (\alpha \hat d_{ji} - \gamma^*_i \hat g_{ji})` (ties
       broken at random with the router's seeded generator, :func:`~nips25_routing.ties.argmax_random_ties`).
       The router never declines; the serving side's
       :class:`~nips25_routing.BudgetLedger` loses a query whose model cannot afford it.

    Args:
        estimator: the :class:`~nips25_routing.ANNEstimator` over the history.
        budgets: ``(M,)`` per-model budgets for the whole stream (same units as the history's cost).
        n_total: expected stream length ``N`` (sets the learning phase length).
        alpha, eps, clip_zero, gamma_max, solver, learn_drop: see :class:`PORTConfig`.
        seed: seed of the learning phase's random actions and of the draws that break ties.

    Raises:
        TypeError: if ``estimator`` is not an ``ANNEstimator``.
        TypeError: if a hyper-parameter has the wrong type (a bool where a number is due, a non-bool flag, a
            non-int ``seed``).
        ValueError: on bad budgets, ``n_total < 1``, ``seed < 0`` or out-of-range hyper-parameters.

    References:
        Wu & Silwal, NeurIPS 2025, arXiv:2509.02718, Alg. 1 and Sec. 3.

    Example:
        >>> import numpy as np
        >>> from nips25_routing import ANNEstimator, HistoryStore
        >>> rng = np.random.default_rng(0)
        >>> h = HistoryStore(rng.normal(size=(50, 4)), rng.uniform(size=(50, 2)), rng.uniform(size=(50, 2)))
        >>> router = PORTRouter(ANNEstimator(h, backend="faiss-flat"), [5.0, 5.0], n_total=40, eps=0.1)
        >>> router.route(rng.normal(size=(40, 4))).shape
        (40,)
    """

    def __init__(
        self,
        estimator: ANNEstimator,
        budgets: Any,
        *,
        n_total: int,
        alpha: float = 1e-4,
        eps: float = 0.025,
        clip_zero: bool = True,
        gamma_max: float | None = None,
        solver: Literal["lp", "lbfgsb"] = "lp",
        learn_drop: bool = True,
        seed: int = 0,
    ) -> None:
        if not isinstance(estimator, ANNEstimator):
            raise TypeError(f"estimator must be an ANNEstimator, got {type(estimator).__name__}")
        self.estimator = estimator
        self.budgets = as_vector(budgets, "budgets", size=estimator.n_models, nonnegative=True)
        self.n_total = check_positive_int(n_total, "n_total")
        self.config = PORTConfig(alpha, eps, clip_zero, gamma_max, solver, learn_drop)
        self.seed = check_nonnegative_int(seed, "seed")
        self._rng = np.random.default_rng(self.seed)
        self.n_seen = 0
        self.gamma_: np.ndarray | None = None
        self.dual_: DualFit | None = None
        self._learn_d: list[np.ndarray] = []
        self._learn_g: list[np.ndarray] = []

    @property
    def n_models(self) -> int:
        """Number of models ``M``; action ``M`` means "dropped"."""
        return self.estimator.n_models

    @property
    def n_learn(self) -> int:
        r"""Length of the learning phase :math:`\lceil \epsilon N \rceil`."""
        return math.ceil(self.config.eps * self.n_total)

    def scores(self, d_hat: np.ndarray, g_hat: np.ndarray) -> np.ndarray:
        r"""``(B, M)`` price-adjusted scores :math:`\alpha \hat d_{ji} - \gamma^*_i \hat g_{ji}`.

        Raises:
            RuntimeError: if the prices are not fitted yet.
        """
        if self.gamma_ is None:
            raise RuntimeError("gamma_ is not fitted yet: route the learning phase first")
        return d_hat * alpha_vector(self.config.alpha, self.n_models) - g_hat * self.gamma_

    def _fit(self) -> None:
        cfg = self.config
        d = np.concatenate(self._learn_d) if self._learn_d else np.zeros((0, self.n_models))
        g = np.concatenate(self._learn_g) if self._learn_g else np.zeros((0, self.n_models))
        if d.shape[0] == 0:
            raise RuntimeError("no learning sample was collected")
        self.dual_ = fit_dual(
            d, g, self.budgets, alpha=cfg.alpha, eps=cfg.eps, clip_zero=cfg.clip_zero,
            gamma_max=cfg.gamma_max, solver=cfg.solver,
        )  # fmt: skip
        self.gamma_ = self.dual_.gamma

    def route(self, embeddings: Any) -> np.ndarray:
        """Route a batch of queries, in arrival order.

        Args:
            embeddings: ``(B, D)`` query embeddings.

        Returns:
            ``(B,)`` int64 actions in ``0..M`` (``M`` = dropped, only in the learning phase).

        Raises:
            ValueError: if ``embeddings`` is not a finite, non-empty ``(B, D)`` array.
        """
        q = check_nonzero_rows(
            as_matrix(embeddings, "embeddings", cols=self.estimator.dim, dtype=np.float32), "embeddings"
        )
        d_hat, g_hat = self.estimator._estimate(q)  # validated once, above
        b = q.shape[0]
        n_learn = min(max(self.n_learn - self.n_seen, 0), b)
        out = np.empty(b, dtype=np.int64)
        if n_learn:
            high = self.n_models + 1 if self.config.learn_drop else self.n_models
            out[:n_learn] = self._rng.integers(0, high, size=n_learn)
            self._learn_d.append(d_hat[:n_learn])
            self._learn_g.append(g_hat[:n_learn])
        if n_learn < b:
            if self.gamma_ is None:
                self._fit()
            out[n_learn:] = argmax_random_ties(self.scores(d_hat[n_learn:], g_hat[n_learn:]), self._rng)
        self.n_seen += b
        return out

    def get_state(self) -> dict[str, Any]:
        """Everything needed to resume routing (not the history/index, which the caller owns), JSON-serialisable."""
        learn_d = np.concatenate(self._learn_d).tolist() if self._learn_d else []
        learn_g = np.concatenate(self._learn_g).tolist() if self._learn_g else []
        return {
            "config": asdict(self.config),
            "budgets": self.budgets.tolist(),
            "n_total": self.n_total,
            "seed": self.seed,
            "n_seen": self.n_seen,
            "gamma": None if self.gamma_ is None else self.gamma_.tolist(),
            "learn_d": learn_d,
            "learn_g": learn_g,
            "rng": self._rng.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`get_state` (same number of models).

        Raises:
            ValueError: if the state is for a different number of models or misses a key.
        """
        missing = {"config", "budgets", "n_total", "n_seen", "gamma", "learn_d", "learn_g", "rng"} - set(state)
        if missing:
            raise ValueError(f"state misses keys {sorted(missing)}")
        budgets = as_vector(state["budgets"], "state['budgets']", nonnegative=True)
        if budgets.size != self.n_models:
            raise ValueError(f"state is for {budgets.size} models, the estimator has {self.n_models}")
        self.config = PORTConfig(**state["config"])
        self.budgets = budgets
        self.n_total = check_positive_int(state["n_total"], "state['n_total']")
        self.seed = int(state.get("seed", 0))
        self.n_seen = int(state["n_seen"])
        self.gamma_ = None if state["gamma"] is None else np.asarray(state["gamma"], dtype=np.float64)
        shape = (-1, self.n_models)
        self._learn_d = [np.asarray(state["learn_d"], dtype=np.float64).reshape(shape)] if state["learn_d"] else []
        self._learn_g = [np.asarray(state["learn_g"], dtype=np.float64).reshape(shape)] if state["learn_g"] else []
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = state["rng"]

    def save(self, path: str | Path) -> Path:
        """Write :meth:`get_state` as JSON to ``path`` atomically (temp file, fsync, rename); returns the path.

        A reader (or a crash) sees the previous state or the new one, never a half-written file.

        Not guarded by rank, on purpose: a router's state is per stream (its learning sample, prices and draws), so
        under a distributed launch every process routes its own stream and must save its own state, to a path of
        its own (e.g. one ``--state`` per rank). A caller that routes one stream redundantly on several processes
        guards the call itself (``if is_main_rank(): router.save(path)``).
        """
        p = Path(path)
        atomic_write(p, json.dumps(self.get_state()).encode())
        return p

    @classmethod
    def load(cls, path: str | Path, estimator: ANNEstimator) -> PORTRouter:
        """A router over ``estimator`` resumed from a file written by :meth:`save`.

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            ValueError: if the file is not a router state for this estimator's models.
        """
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"path: no router state at {p}")
        state = json.loads(p.read_text())
        if not isinstance(state, dict) or "budgets" not in state:
            raise ValueError(f"path: {p} is not a PORTRouter state")
        router = cls(estimator, state["budgets"], n_total=int(state["n_total"]))
        router.set_state(state)
        return router
