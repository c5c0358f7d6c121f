"""digits-zoo: real queries routed among real models of very different cost and quality.

The queries are the 1,797 handwritten digits bundled with scikit-learn (``load_digits``, 8x8 pixels, 10 classes);
the "LLMs" are seven scikit-learn classifiers fitted on a disjoint part of them. A model's quality on a query is
the probability it gives the true class (``quality="proba"``, the default since 0.2.0; ``"correct"``: 1 if it
classifies the digit correctly), its cost the multiply-adds its prediction takes plus a fixed per-call charge,
priced in dollars.

The regime follows RouterBench's: the per-call charge (:data:`CALL_OPS`) keeps the cheapest model from being
almost free, so the cost spread is about 60x (RouterBench's 11 models: 72x) and at budget 1x under the weighted
split four of the seven models can each afford hundreds of the 5,000 stream queries while the three dearest can
afford a handful (RouterBench at 1x: eight of eleven models afford 180-1,600 of 10,000, three afford 4-7).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from nips25_routing.history import HistoryStore
from nips25_shared import cached, get_logger

__all__ = [
    "CALL_OPS",
    "DOLLARS_PER_OP",
    "QUALITY_KINDS",
    "ZOO_MODELS",
    "ZooSplit",
    "digits_zoo",
    "split_history_stream",
]

log = get_logger(__name__)

ZOO_MODELS: tuple[str, ...] = ("tree-d8", "naive-bayes", "logreg", "forest-100", "mlp-128", "svc-rbf", "knn-5")
DOLLARS_PER_OP = 1e-7  # price of one multiply-add; puts the zoo's per-query costs near RouterBench's ($1e-5..5e-3)
CALL_OPS = 512  # fixed charge per call (8 reads of the 64-pixel query); sets the cost spread near RouterBench's
QUALITY_KINDS: tuple[str, ...] = ("proba", "correct")
_FIT_THREADS = 1  # BLAS/OpenMP threads the zoo's models are fitted and scored with, whatever the caller's pool
_VERSION = "v4"  # v4 (0.2.4): fitted under _FIT_THREADS; v3 fits depended on the caller's BLAS thread count


@dataclass(frozen=True)
class ZooSplit:
    """One seeded split of a zoo (digits-zoo, text-zoo) into a routing history and a query stream.

    Attributes:
        history: the :class:`~nips25_routing.HistoryStore` (query vectors, quality, cost).
        stream_embeddings: ``(N, D)`` query vectors of the stream, in arrival order (digits: 64 pixels).
        stream_quality: ``(N, M)`` true quality in ``[0, 1]`` of each model on each stream query.
        stream_cost: ``(N, M)`` true cost in dollars.
        n_distinct: number of distinct digits the stream was drawn from.
    """

    history: HistoryStore
    stream_embeddings: np.ndarray
    stream_quality: np.ndarray
    stream_cost: np.ndarray
    n_distinct: int

    @property
    def models(self) -> list[str]:
        """Model names."""
        return self.history.models


def _fit_zoo(seed: int, fit_fraction: float, quality_kind: str) -> dict[str, np.ndarray]:
    # BLAS sums in a thread-count-dependent order (the MLP's lbfgs fit moved by ~1e-12 between 1 and 2 threads),
    # so the fit runs on a fixed pool: the cached zoo is then the same bytes on every machine setting
    with threadpool_limits(limits=_FIT_THREADS):
        return _fit_zoo_models(seed, fit_fraction, quality_kind)


def _fit_zoo_models(seed: int, fit_fraction: float, quality_kind: str) -> dict[str, np.ndarray]:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    n_fit = round(fit_fraction * len(y))
    fit, rest = order[:n_fit], order[n_fit:]
    xf, yf, xr, yr = x[fit], y[fit], x[rest], y[rest]
    n_in, n_cls = x.shape[1], 10
    models: list[Any] = [
        DecisionTreeClassifier(max_depth=8, random_state=seed),
        GaussianNB(),
        LogisticRegression(max_iter=2000),
        RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1),
        MLPClassifier(hidden_layer_sizes=(128,), solver="lbfgs", max_iter=200, random_state=seed),
        # Platt-scaled probabilities from 5-fold held-out decision values; the served SVC is fitted on all of xf
        CalibratedClassifierCV(SVC(kernel="rbf"), ensemble=False) if quality_kind == "proba" else SVC(kernel="rbf"),
        KNeighborsClassifier(n_neighbors=5),
    ]
    quality, ops = [], []
    for name, model in zip(ZOO_MODELS, models, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(xf, yf)
        if quality_kind == "proba":
            proba = model.predict_proba(xr)
            quality.append(proba[np.arange(len(yr)), np.searchsorted(model.classes_, yr)])
        else:
            quality.append(model.predict(xr) == yr)
        if name in ("tree-d8", "forest-100"):  # comparisons along each decision path, per query
            path = model.decision_path(xr)
            path = path[0] if isinstance(path, tuple) else path
            op = np.asarray(path.sum(axis=1)).ravel() - (model.n_estimators if name == "forest-100" else 1)
        elif name == "naive-bayes":
            op = np.full(len(yr), 3 * n_in * n_cls)
        elif name == "logreg":
            op = np.full(len(yr), n_in * n_cls)
        elif name == "mlp-128":
            op = np.full(len(yr), n_in * 128 + 128 * n_cls)
        elif name == "svc-rbf":
            svc = model.calibrated_classifiers_[0].estimator if quality_kind == "proba" else model
            op = np.full(len(yr), int(svc.n_support_.sum()) * (n_in + 1))
        else:
            op = np.full(len(yr), n_fit * n_in)
        ops.append(op + CALL_OPS)  # every call pays the fixed charge (reading the query, answering)
    return {
        "x": xr.astype(np.float32),
        "quality": np.stack(quality, axis=1).astype(np.float64),
        "cost": np.stack(ops, axis=1).astype(np.float64) * DOLLARS_PER_OP,
    }


def digits_zoo(*, seed: int = 0, n_stream: int = 10_000, fit_fraction: float = 0.3, quality: str = "proba") -> ZooSplit:
    """Build (or load from the nips25 cache) one seeded split of digits-zoo.

    The digits are split at random (``seed``) into a fitting part (``fit_fraction``) on which the seven models are
    trained; the rest is halved into the history and a stream pool. The stream is ``n_stream`` draws with
    replacement from the pool in random order (the digits are too few for the paper's N=10,000 otherwise).

    Args:
        seed: seed of the split, the models and the arrival order.
        n_stream: stream length ``N >= 1``.
        fit_fraction: share of the digits used to fit the models, in ``(0, 0.8]``.
        quality: ``"proba"`` (the model's probability of the true class; graded, so models rarely tie) or
            ``"correct"`` (1 if the prediction is right, as most RouterBench tasks score).

    Returns:
        A :class:`ZooSplit`.

    Raises:
        ValueError: if ``n_stream < 1``, ``fit_fraction`` is out of range or ``quality`` is unknown.
    """
    if not isinstance(n_stream, int) or n_stream < 1:
        raise ValueError(f"n_stream must be an int >= 1, got {n_stream}")
    if not 0.0 < fit_fraction <= 0.8:
        raise ValueError(f"fit_fraction must be in (0, 0.8], got {fit_fraction}")
    if quality not in QUALITY_KINDS:
        raise ValueError(f"quality must be one of {QUALITY_KINDS}, got {quality!r}")
    key = f"routing/digits-zoo-{_VERSION}-{quality}-seed{seed}-fit{fit_fraction:.3f}"
    data = cached(key, lambda: _fit_zoo(seed, fit_fraction, quality))
    return split_history_stream(data, models=ZOO_MODELS, seed=seed, n_stream=n_stream)


def split_history_stream(data: dict[str, np.ndarray], *, models: tuple[str, ...], seed: int, n_stream: int) -> ZooSplit:
    """Halve a zoo's held-out queries at random into the history and a pool; draw the stream from the pool.

    Args:
        data: ``{"x": (n, D), "quality": (n, M), "cost": (n, M)}`` of the queries not used to fit the models.
        models: the ``M`` model names.
        seed: seed of the halving and of the draw.
        n_stream: stream length; drawn with replacement, in random order.

    Returns:
        A :class:`ZooSplit`.
    """
    x, quality, cost = data["x"], data["quality"], data["cost"]
    rng = np.random.default_rng([seed, 1])
    order = rng.permutation(len(x))
    hist, pool = order[: len(x) // 2], order[len(x) // 2 :]
    draw = rng.choice(pool, size=n_stream, replace=True)
    history = HistoryStore(x[hist], quality[hist], cost[hist], list(models))
    log.debug("zoo seed %d: history %d, stream %d from %d queries", seed, len(hist), n_stream, len(pool))
    return ZooSplit(history, x[draw], quality[draw], cost[draw], len(pool))
