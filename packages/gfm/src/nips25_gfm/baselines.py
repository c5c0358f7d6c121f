"""Baselines: a training-free least-squares ensemble (GraphAny style), a GNN trained per graph, majority class.

* :class:`LinearGNNEnsemble`: the closed-form part of GraphAny (Zhao et al., ICLR 2025): linear GNN channels
  :math:`X, \\hat AX, \\hat A^2X, (I-\\hat A)X, (I-\\hat A)^2X` each solved by ridge least squares onto the one-hot
  training labels, fused per node. GraphAny learns its fusion attention on one graph; here the fusion is training
  free: ``"mean"`` (average of channel predictions) or ``"entropy"`` (per node, softmax over channels of the negative
  entropy of each channel's prediction, so confident channels weigh more).
* :class:`PerGraphGNN`: an end-to-end GCN (DGL ``GraphConv``) or mean-GNN (DGL ``SAGEConv``) trained on the graph's
  own training labels: not zero-shot, a reference.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.exceptions import NotFittedError
from torch import nn

from nips25_gfm._validation import check_int, check_matrix, check_positive
from nips25_gfm.graphs import GraphTask, import_dgl, normalized_adjacency
from nips25_gfm.least_squares import DEFAULT_LAMBDAS, ridge_lstsq_cv
from nips25_shared import seed_everything

__all__ = ["FUSIONS", "LinearGNNEnsemble", "PerGraphGNN", "linear_gnn_channels", "majority_accuracy"]

FUSIONS = ("mean", "entropy")


def _check_task(task: Any) -> GraphTask:
    if not isinstance(task, GraphTask):
        raise TypeError(f"task: expected a GraphTask, got {type(task).__name__}")
    return task


def linear_gnn_channels(adjacency: sp.spmatrix | np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    r"""The five LinearGNN inputs :math:`X, \hat AX, \hat A^2X, (I-\hat A)X, (I-\hat A)^2X` (``[N, F]`` each)."""
    a = normalized_adjacency(adjacency)
    x = check_matrix(x, "x", rows=a.shape[0])
    ax = a @ x
    hx = x - ax
    return [x, ax, a @ ax, hx, hx - a @ hx]


class LinearGNNEnsemble:
    """Training-free GraphAny-style ensemble of closed-form linear GNNs.

    Args:
        fusion: ``"entropy"`` (default) or ``"mean"``.
        temperature: softmax temperature of channel predictions for the entropy weights (> 0).
        lambdas: ridge penalties tried by cross-validation.

    Example:
        >>> from nips25_gfm.datasets import load_dataset
        >>> probs = LinearGNNEnsemble().fit(load_dataset("iris")).predict_proba()
    """

    def __init__(
        self, *, fusion: str = "entropy", temperature: float = 0.1, lambdas: Sequence[float] = DEFAULT_LAMBDAS
    ) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"fusion: expected one of {FUSIONS}, got {fusion!r}")
        self.fusion = fusion
        self.temperature = check_positive(temperature, "temperature")
        self.lambdas = tuple(lambdas)
        self.proba_: np.ndarray | None = None

    def fit(self, task: GraphTask) -> LinearGNNEnsemble:
        """Solve every channel on the task's training nodes and fuse the predictions of every node."""
        task = _check_task(task)
        y = task.labels_onehot()
        m = task.train_mask
        preds = []
        for u in linear_gnn_channels(task.adjacency, task.x):
            w, b, _ = ridge_lstsq_cv(u[m], y[m], lambdas=self.lambdas)
            preds.append(u @ w + b)
        p = np.stack(preds)  # [channels, N, C]
        if self.fusion == "mean":
            fused = p.mean(axis=0)
        else:
            z = p / self.temperature
            z = np.exp(z - z.max(axis=-1, keepdims=True))
            q = z / z.sum(axis=-1, keepdims=True)
            neg_entropy = (q * np.log(np.clip(q, 1e-12, None))).sum(axis=-1)  # [channels, N]
            weights = np.exp(neg_entropy - neg_entropy.max(axis=0))
            weights /= weights.sum(axis=0)
            fused = (weights[..., None] * p).sum(axis=0)
        self.proba_ = fused
        return self

    def predict_proba(self) -> np.ndarray:
        """Fused scores ``[N, C]`` of the fitted task.

        Raises:
            NotFittedError: before :meth:`fit`.
        """
        if self.proba_ is None:
            raise NotFittedError("LinearGNNEnsemble: call fit(task) before predict_proba()")
        return self.proba_

    def score(self, task: GraphTask) -> float:
        """Test accuracy on ``task`` (fits on its training nodes first)."""
        task = _check_task(task)
        proba = self.fit(task).predict_proba()
        return float(np.mean(proba[task.test_mask].argmax(axis=1) == task.y[task.test_mask]))


class PerGraphGNN(nn.Module):
    """Two-layer GNN trained end to end on one graph's own labels (DGL ``GraphConv`` or ``SAGEConv`` mean).

    Args:
        in_feats: F.
        num_classes: C.
        hidden: hidden width.
        backbone: ``"gcn"`` (symmetric normalisation, self-loops) or ``"mean"`` (GraphSAGE mean).
        dropout: dropout on the hidden layer, in ``[0, 1)``.
    """

    def __init__(
        self, in_feats: int, num_classes: int, *, hidden: int = 64, backbone: str = "gcn", dropout: float = 0.5
    ) -> None:
        super().__init__()
        check_int(in_feats, "in_feats", low=1)
        check_int(num_classes, "num_classes", low=2)
        check_int(hidden, "hidden", low=1)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout: expected a value in [0, 1), got {dropout}")
        dglnn = import_dgl().nn
        if backbone == "gcn":
            self.conv1: nn.Module = dglnn.GraphConv(in_feats, hidden, allow_zero_in_degree=True)
            self.conv2: nn.Module = dglnn.GraphConv(hidden, num_classes, allow_zero_in_degree=True)
        elif backbone == "mean":
            self.conv1 = dglnn.SAGEConv(in_feats, hidden, "mean")
            self.conv2 = dglnn.SAGEConv(hidden, num_classes, "mean")
        else:
            raise ValueError(f"backbone: expected 'gcn' or 'mean', got {backbone!r}")
        self.backbone = backbone
        self.dropout = nn.Dropout(dropout)

    def forward(self, graph: Any, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[N, C]``."""
        if self.backbone == "gcn":
            dgl = import_dgl()
            graph = dgl.add_self_loop(dgl.remove_self_loop(graph))
        h = nn.functional.relu(self.conv1(graph, x))
        return self.conv2(graph, self.dropout(h))

    @classmethod
    def train_on(
        cls,
        task: GraphTask,
        *,
        epochs: int = 200,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
        seed: int = 0,
        target_accuracy: float | None = None,
        **kwargs: Any,
    ) -> tuple[PerGraphGNN, dict[str, Any]]:
        """Train on ``task``'s training labels (Adam, full batch, last epoch kept).

        Args:
            task: the graph.
            epochs: maximum epochs (>= 1).
            lr, weight_decay: Adam settings.
            seed: initialisation and dropout seed.
            target_accuracy: stop once the test accuracy reaches it (time-to-accuracy benchmark); ``None``: all
                epochs.
            **kwargs: :class:`PerGraphGNN` arguments.

        Returns:
            ``(model, info)`` with ``test_accuracy``, ``epochs``, ``seconds`` and ``reached``.
        """
        task = _check_task(task)
        check_int(epochs, "epochs", low=1)
        check_positive(lr, "lr")
        seed_everything(seed)
        model = cls(task.num_features, task.num_classes, **kwargs)
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        x, y = task.features(), torch.as_tensor(task.y)
        train = torch.as_tensor(task.train_mask)
        start = time.perf_counter()
        acc, reached, epoch = 0.0, False, 0
        for epoch in range(1, epochs + 1):
            model.train()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(task.graph, x)[train], y[train])
            loss.backward()
            opt.step()
            if target_accuracy is not None or epoch == epochs:
                acc = model.test_accuracy(task)
                if target_accuracy is not None and acc >= target_accuracy:
                    reached = True
                    break
        info = {"test_accuracy": acc, "epochs": epoch, "seconds": time.perf_counter() - start, "reached": reached}
        return model, info

    @torch.no_grad()
    def test_accuracy(self, task: GraphTask) -> float:
        """Accuracy on ``task.test_mask``."""
        self.eval()
        pred = self(task.graph, task.features()).argmax(dim=1).numpy()
        return float(np.mean(pred[task.test_mask] == task.y[task.test_mask]))


def majority_accuracy(task: GraphTask) -> float:
    """Best constant predictor on the test nodes: the largest class share among them (the claims' chance level).

    Stratified splits feed the same number of labels per class, so the training majority is uninformative; the
    test-set majority is an upper bound on any constant prediction.
    """
    task = _check_task(task)
    return float(np.bincount(task.y[task.test_mask], minlength=task.num_classes).max() / task.test_mask.sum())
