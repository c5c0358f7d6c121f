"""Readouts of KC spike counts: an MBON-style associative rule, a nearest-centroid and a logistic probe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

__all__ = ["READOUTS", "Readout", "ReadoutClassifier", "accuracy", "fit_readout"]

READOUTS = ("mbon", "mbon_binary", "centroid", "logistic")
ReadoutKind = Literal["mbon", "mbon_binary", "centroid", "logistic"]


def _check(x: ArrayLike, labels: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.intp] | None]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"counts must be a non-empty 2-D array (trials, n_kc), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("counts must be finite")
    if labels is None:
        return arr, None
    if np.any(arr < 0):
        raise ValueError("counts must be >= 0 (spike counts)")
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"labels must be integer odour indices, got dtype {lab.dtype}")
    if lab.shape != (arr.shape[0],):
        raise ValueError(f"labels must have shape ({arr.shape[0]},), got {lab.shape}")
    if len(np.unique(lab)) < 2:
        raise ValueError("labels must hold at least two classes")
    return arr, lab.astype(np.intp)


def _argmax_random_ties(scores: NDArray[np.float64]) -> NDArray[np.intp]:
    """Row-wise argmax with ties broken uniformly at random (seeded, so repeatable), never by class order: a silent
    trial (all scores equal) is then right with probability 1/K, not always for class 0."""
    top = scores >= scores.max(axis=1, keepdims=True) - 1e-12 * np.abs(scores).max(axis=1, keepdims=True)
    jitter = np.random.default_rng(0).random(scores.shape)
    return np.argmax(np.where(top, jitter, -1.0), axis=1)


@dataclass(frozen=True)
class Readout:
    """A fitted readout; ``predict(counts (N, n_kc)) -> labels (N,)``."""

    kind: str
    classes: NDArray[np.intp]
    model: object

    def predict(self, counts: ArrayLike) -> NDArray[np.intp]:
        x, _ = _check(counts)
        if self.kind in ("mbon", "mbon_binary", "centroid"):
            weights = np.asarray(self.model)
            if x.shape[1] != weights.shape[1]:
                raise ValueError(f"counts has {x.shape[1]} KCs, the readout was fit on {weights.shape[1]}")
            if self.kind == "mbon":
                scores = x @ weights.T
            elif self.kind == "mbon_binary":
                scores = (x > 0).astype(np.float64) @ weights.T
            else:  # nearest centroid: argmin ||x - m_c||^2 = argmax (x.m_c - ||m_c||^2 / 2)
                scores = x @ weights.T - 0.5 * (weights**2).sum(axis=1)
            return self.classes[_argmax_random_ties(scores)]
        n_fit = self.model.n_features_in_  # type: ignore[attr-defined]
        if x.shape[1] != n_fit:
            raise ValueError(f"counts has {x.shape[1]} KCs, the readout was fit on {n_fit}")
        return np.asarray(self.model.predict(x), dtype=np.intp)  # type: ignore[attr-defined]


def fit_readout(counts: ArrayLike, labels: ArrayLike, *, kind: ReadoutKind = "mbon") -> Readout:
    r"""Fit a readout of odour identity from KC spike counts.

    * ``"mbon"`` (default): one output neuron (MBON) per odour; dopamine-gated Hebbian plasticity changes the
      KC-to-MBON synapse of KC :math:`i` in proportion to its spike count :math:`n_i` on the trials where that
      odour is reinforced, against the mean over all odours: :math:`w_{c,i} = \langle n_i \rangle_c - \langle n_i
      \rangle`; the MBON drive is :math:`\sum_i w_{c,i} n_i` (spike counts, so rate changes such as SFA's are
      seen) and the prediction is the most driven MBON.
    * ``"mbon_binary"``: the same rule on the binary code :math:`n_i > 0` (which KCs fire, not how much): the
      0.1.0 readout, kept as an arm; it is blind to SFA by construction (SFA is spike-triggered, so it cannot
      change whether a KC fires).
    * ``"centroid"``: nearest class mean of the counts (Euclidean).
    * ``"logistic"``: scikit-learn ``LogisticRegression`` (L2, C=1) on the counts.

    For the first three, ties between classes (e.g. a silent trial) are broken uniformly at random with a fixed
    seed, so ``predict`` is deterministic.

    Args:
        counts: spike counts, shape ``(N, n_kc)``, finite and ``>= 0`` (any real dtype; read as float64).
        labels: odour index per trial, integer dtype, shape ``(N,)``, at least two classes.
        kind: readout type.

    Returns:
        The fitted :class:`Readout`; its ``predict`` takes counts ``(M, n_kc)`` and returns labels ``(M,)``, intp.

    Raises:
        ValueError: on malformed counts (shape, NaN/inf, negative), labels of another length or of one class, or
            an unknown ``kind``.
        TypeError: if ``labels`` is not of integer dtype.

    References:
        Li, Yu, Yu & Zang, NeurIPS 2025 (odour learning by KC-to-MBON plasticity; the rule is reconstructed, README
        "Choices").

    Example:
        >>> x = [[4.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]]
        >>> r = fit_readout(x, [0, 0, 1, 1], kind="mbon")
        >>> r.model.tolist()  # mean count per odour minus the mean over odours
        [[1.5, -1.0], [-1.5, 1.0]]
        >>> r.predict([[1.0, 0.0], [0.0, 5.0]]).tolist()
        [0, 1]
    """
    if kind not in READOUTS:
        raise ValueError(f"kind must be one of {READOUTS}, got {kind!r}")
    x, lab = _check(counts, labels)
    assert lab is not None
    classes = np.unique(lab)
    if kind in ("mbon", "mbon_binary"):
        code = x if kind == "mbon" else (x > 0).astype(np.float64)
        per_class = np.stack([code[lab == c].mean(axis=0) for c in classes])
        return Readout(kind, classes, per_class - code.mean(axis=0, keepdims=True))
    if kind == "centroid":
        return Readout(kind, classes, np.stack([x[lab == c].mean(axis=0) for c in classes]))
    model = LogisticRegression(C=1.0, max_iter=500)
    model.fit(x, lab)
    return Readout(kind, classes, model)


def accuracy(
    train_counts: ArrayLike,
    train_labels: ArrayLike,
    test_counts: ArrayLike,
    test_labels: ArrayLike,
    *,
    kind: ReadoutKind = "mbon",
) -> float:
    """Held-out accuracy of a readout fitted on the training trials (fraction of test trials correctly named).

    Args:
        train_counts: spike counts of the training trials, shape ``(N, n_kc)``.
        train_labels: their odour indices, integer, shape ``(N,)``.
        test_counts: spike counts of the test trials, shape ``(M, n_kc)`` (same KCs).
        test_labels: their odour indices, integer, shape ``(M,)``.
        kind: readout type, as :func:`fit_readout`.

    Returns:
        Accuracy in ``[0, 1]``.

    Raises:
        ValueError, TypeError: as :func:`fit_readout`, or if the test counts have another number of KCs.
    """
    readout = fit_readout(train_counts, train_labels, kind=kind)
    _, lab = _check(test_counts, test_labels)
    return float(np.mean(readout.predict(test_counts) == lab))


class ReadoutClassifier(ClassifierMixin, BaseEstimator):
    """scikit-learn estimator around :func:`fit_readout`: ``fit(X, y)``, ``predict(X)``, ``score(X, y)``.

    For pipelines, ``cross_val_score`` and ``GridSearchCV``: the labels may be any sortable values (odour names,
    integers); they are mapped to indices for :func:`fit_readout` and back in ``predict``.

    Args:
        kind: ``"mbon"`` (default), ``"mbon_binary"``, ``"centroid"`` or ``"logistic"`` (see :func:`fit_readout`).

    Attributes:
        classes_: the sorted labels seen in ``fit``, shape ``(n_classes,)``.
        n_features_in_: number of KCs.
        readout_: the fitted :class:`Readout`.

    Raises:
        ValueError, TypeError: as :func:`fit_readout` (in ``fit``), or an unknown ``kind``.

    References:
        Li, Yu, Yu & Zang, NeurIPS 2025 (KC-to-MBON odour learning; the rule is reconstructed, README "Choices").

    Example:
        >>> clf = ReadoutClassifier().fit([[4.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]], ["A", "A", "B", "B"])
        >>> clf.predict([[1.0, 0.0], [0.0, 5.0]]).tolist()
        ['A', 'B']
    """

    def __init__(self, kind: ReadoutKind = "mbon") -> None:
        self.kind = kind

    def fit(self, X: ArrayLike, y: ArrayLike) -> ReadoutClassifier:
        """Fit on spike counts ``X`` ``(N, n_kc)`` and labels ``y`` ``(N,)``; returns ``self``."""
        labels = np.asarray(y)
        if labels.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per trial), got shape {labels.shape}")
        self.classes_, index = np.unique(labels, return_inverse=True)
        self.readout_ = fit_readout(X, index.astype(np.intp), kind=self.kind)
        self.n_features_in_ = int(np.shape(X)[1])
        return self

    def predict(self, X: ArrayLike) -> NDArray:
        """Labels of the most driven output for spike counts ``X`` ``(M, n_kc)``: shape ``(M,)``."""
        if not hasattr(self, "readout_"):
            raise ValueError("this ReadoutClassifier is not fitted yet: call fit(X, y) first")
        return self.classes_[self.readout_.predict(X)]
