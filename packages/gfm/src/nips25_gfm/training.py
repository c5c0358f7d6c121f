"""Training TS-GNN on a few graphs with label feeding, and zero-shot inference on an unseen graph.

Each epoch and training graph, ``k = floor(|train| * lp_ratio / C)`` training nodes per class have their labels fed
as input; the other training nodes carry the cross-entropy. The per-graph losses are summed and divided by the
number of graphs, one AdamW step per epoch, the last epoch kept (paper, Sec. 5; official ``models/gfm.py``,
``experiment.py``). Zero-shot: feed every training label of the new graph and score its test nodes.

The official sampler writes positions inside the training subset into an N-sized mask as node ids; here the
positions are mapped back to node ids, so fed and loss nodes are always training nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nips25_gfm._validation import check_int, check_labels, check_mask, check_positive
from nips25_gfm.graphs import GraphTask, import_dgl
from nips25_gfm.least_squares import DEFAULT_LAMBDAS, Conversions, xy_conversions
from nips25_gfm.model import TSGNN
from nips25_shared import get_logger, progress, seed_everything

__all__ = [
    "FitConfig",
    "PreparedGraph",
    "accuracy",
    "default_accelerator",
    "dgl_supports",
    "fit",
    "predict",
    "prepare",
    "sample_fed_labels",
    "zero_shot_accuracy",
]

_log = get_logger(__name__)

MAPS_FROM = ("train", "fed")


@dataclass(frozen=True)
class FitConfig:
    """Training hyper-parameters (defaults: official 500 epochs, lr 1e-3, lp_ratio 0.5, weight decay 0.01).

    Attributes:
        epochs: AdamW steps (>= 1).
        lr: learning rate (> 0).
        lp_ratio: fraction of training labels fed as input, in ``(0, 1)``.
        weight_decay: AdamW weight decay (>= 0).
        maps_from: labels the conversion maps of a training graph are fitted on: ``"train"`` (official: every
            training label, once per graph; the loss nodes' labels then enter the maps) or ``"fed"`` (refitted each
            epoch on the labels fed in that epoch only, so no loss label reaches the input; slower).
    """

    epochs: int = 500
    lr: float = 1e-3
    lp_ratio: float = 0.5
    weight_decay: float = 0.01
    maps_from: str = "train"

    def __post_init__(self) -> None:
        check_int(self.epochs, "epochs", low=1)
        check_positive(self.lr, "lr")
        if not 0.0 < float(self.lp_ratio) < 1.0:
            raise ValueError(f"lp_ratio: expected a value in (0, 1), got {self.lp_ratio}")
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        if self.maps_from not in MAPS_FROM:
            raise ValueError(f"maps_from: expected one of {MAPS_FROM}, got {self.maps_from!r}")


def sample_fed_labels(
    y: np.ndarray, train_mask: np.ndarray, *, lp_ratio: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split the training nodes into fed-label nodes and loss nodes.

    ``k = max(1, floor(|train| * lp_ratio / C))`` nodes of each class (all of them when a class has fewer) are fed;
    every other training node is a loss node. Node ids, never positions inside the training subset.

    Args:
        y: labels ``[N]`` in ``0..C-1``.
        train_mask: boolean ``[N]``.
        lp_ratio: in ``(0, 1)``.
        rng: numpy generator.

    Returns:
        Boolean masks ``(fed [N], loss [N])``, disjoint, their union ``train_mask``.

    Raises:
        ValueError: bad labels, mask or ``lp_ratio``.
    """
    y = check_labels(y, "y")
    mask = check_mask(train_mask, "train_mask", y.shape[0])
    if not 0.0 < float(lp_ratio) < 1.0:
        raise ValueError(f"lp_ratio: expected a value in (0, 1), got {lp_ratio}")
    if not mask.any():
        raise ValueError("train_mask: needs at least one labelled node")
    c = int(y.max()) + 1
    k = max(1, int(mask.sum() * lp_ratio / c))
    fed = np.zeros_like(mask)
    for cls in range(c):
        ids = np.flatnonzero(mask & (y == cls))
        if ids.size:
            fed[rng.choice(ids, size=min(k, ids.size), replace=False)] = True
    return fed, mask & ~fed


@dataclass(frozen=True, eq=False)
class PreparedGraph:
    """A task with its ``DGLGraph``, tensors and conversion maps (fitted on the nodes of ``fit_mask``)."""

    task: GraphTask
    graph: Any
    x: torch.Tensor
    y: torch.Tensor
    onehot: torch.Tensor
    conv: Conversions
    fit_mask: np.ndarray


def prepare(
    task: GraphTask,
    *,
    n_hops: int = -1,
    lambdas: Sequence[float] = DEFAULT_LAMBDAS,
    k_folds: int = 10,
    dtype: torch.dtype = torch.float32,
    fit_mask: np.ndarray | None = None,
) -> PreparedGraph:
    """Build the graph, tensors and conversions of a task.

    Args:
        task: a :class:`GraphTask`.
        n_hops, lambdas, k_folds: see :func:`~nips25_gfm.least_squares.xy_conversions`.
        dtype: dtype of the tensors.
        fit_mask: boolean ``[N]``, the labelled nodes the conversion maps are fitted on (default: every training
            label, as the official code).

    Raises:
        TypeError: ``task`` is not a :class:`GraphTask`.
        ValueError: bad or empty ``fit_mask``.
    """
    if not isinstance(task, GraphTask):
        raise TypeError(f"task: expected a GraphTask, got {type(task).__name__}")
    mask = task.train_mask if fit_mask is None else check_mask(fit_mask, "fit_mask", task.num_nodes)
    if not mask.any():
        raise ValueError("fit_mask: needs at least one labelled node")
    onehot = task.labels_onehot()
    conv = xy_conversions(task.adjacency, task.x, onehot, mask, n_hops=n_hops, lambdas=lambdas, k_folds=k_folds)
    return PreparedGraph(
        task=task,
        graph=task.graph,
        x=torch.as_tensor(task.x, dtype=dtype),
        y=torch.as_tensor(task.y),
        onehot=torch.as_tensor(onehot, dtype=dtype),
        conv=conv,
        fit_mask=mask,
    )


def _as_prepared(item: GraphTask | PreparedGraph, n_hops: int, dtype: torch.dtype) -> PreparedGraph:
    if isinstance(item, PreparedGraph):
        return item
    return prepare(item, n_hops=n_hops, dtype=dtype)


def _refit(g: PreparedGraph, mask: np.ndarray, n_hops: int) -> PreparedGraph:
    """``g`` with its conversion maps fitted on the labels of ``mask`` only."""
    return prepare(g.task, n_hops=n_hops, dtype=g.x.dtype, fit_mask=mask)


def _param_dtype(model: TSGNN) -> torch.dtype:
    return next(model.parameters()).dtype


def fit(
    model: TSGNN,
    tasks: Sequence[GraphTask | PreparedGraph],
    *,
    config: FitConfig | None = None,
    seed: int = 0,
    use_accelerate: bool = True,
    accelerator: Any | None = None,
    callback: Callable[[int, TSGNN], None] | None = None,
) -> list[float]:
    r"""Train ``model`` on the training nodes of ``tasks`` with random label feeding.

    Loss per epoch :math:`\frac{1}{|G|}\sum_{g} \mathrm{CE}(\mathrm{logits}_g[\mathrm{loss}_g], y_g[\mathrm{loss}_g])`,
    one AdamW step per epoch; the last epoch's weights are kept (paper, Sec. 5; official ``experiment.py``).

    Data parallel under ``accelerate``: the training graphs are sharded over the processes (process ``r`` of ``P``
    takes graphs ``r, r + P, ...``), each process scales its partial sum by ``P / |G|`` so that the averaged
    gradient equals the one-process gradient of the same epoch, and a process without a graph takes a zero-loss step
    (it never skips ``backward``). The fed labels of graph ``i`` in an epoch come from its own generator
    (``numpy.random.default_rng([seed, i])``), so every process count draws the same labels. Every parameter enters
    the loss (unused ones times zero), so DDP needs no ``find_unused_parameters``.

    Args:
        model: a :class:`TSGNN`; trained in place (its weights end on ``accelerator.device``).
        tasks: training graphs (non-empty); :class:`GraphTask` or :func:`prepare` d graphs.
        config: :class:`FitConfig` (defaults when ``None``).
        seed: seeds torch/numpy and the label sampler.
        use_accelerate: run under ``accelerate`` (``False``: plain PyTorch on the model's device, one process).
        accelerator: an ``accelerate.Accelerator`` (default: a new ``Accelerator()``, which uses a GPU when one is
            visible and the processes started by ``accelerate launch``).
        callback: called as ``callback(epoch, model)`` after every optimiser step (``epoch`` from 1), e.g. to score
            validation graphs; ``model`` is the unwrapped :class:`TSGNN`, in training mode again afterwards.

    Returns:
        The loss of each epoch (the same on every process).

    Raises:
        TypeError, ValueError: bad model, config or accelerator, empty ``tasks``.
    """
    if not isinstance(model, TSGNN):
        raise TypeError(f"model: expected a TSGNN, got {type(model).__name__}")
    cfg = config or FitConfig()
    if not isinstance(cfg, FitConfig):
        raise TypeError(f"config: expected FitConfig, got {type(cfg).__name__}")
    if len(tasks) == 0:
        raise ValueError("tasks: expected at least one training graph")
    if accelerator is not None and not use_accelerate:
        raise ValueError("accelerator: given with use_accelerate=False")
    seed_everything(seed)
    dtype = _param_dtype(model)
    for t in tasks:
        if not isinstance(t, (GraphTask, PreparedGraph)):
            raise TypeError(f"tasks: expected GraphTask or PreparedGraph items, got {type(t).__name__}")
    labelled = [t.task if isinstance(t, PreparedGraph) else t for t in tasks]
    rngs = [np.random.default_rng([seed, i]) for i in range(len(tasks))]
    n_hops = model.config.n_hops
    unwrapped = model
    rank, world = 0, 1
    device = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    backward: Any = torch.Tensor.backward
    reduce: Any = None
    if use_accelerate:
        if accelerator is None:
            accelerator = default_accelerator()
        for attr in ("prepare", "backward", "device", "process_index", "num_processes", "reduce"):
            if not hasattr(accelerator, attr):
                raise TypeError(f"accelerator: expected an accelerate.Accelerator, got {type(accelerator).__name__}")
        if accelerator.device.type != "cpu" and not dgl_supports(accelerator.device):
            raise ValueError(
                f"accelerator: its device {accelerator.device} is not supported by the installed DGL (PyPI's dgl "
                "wheels are CPU builds); install DGL's CUDA wheel or pass a CPU accelerator (cpu=True)"
            )
        model, opt = accelerator.prepare(model, opt)
        backward, reduce = accelerator.backward, accelerator.reduce
        rank, world, device = accelerator.process_index, accelerator.num_processes, accelerator.device
    # this process's shard: graphs rank, rank + world, ...; only their conversion maps are solved here
    graphs = {i: _as_prepared(tasks[i], n_hops, dtype) for i in range(rank, len(tasks), world)}
    # a process without a graph forwards graph 0 with zero weight: DDP all-reduces only after a forward pass
    idle = not graphs
    if idle:
        graphs = {0: _as_prepared(tasks[0], n_hops, dtype)}
    local = {i: _on_device(g, device) for i, g in graphs.items()}
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    history: list[float] = []
    for _ in progress(range(cfg.epochs), total=cfg.epochs, desc="TS-GNN epochs"):
        opt.zero_grad()
        # zero times every parameter: all parameters take part in every process's graph (see the docstring)
        total: torch.Tensor = torch.stack([p.sum() for p in params]).sum() * 0.0
        for i, t in enumerate(labelled):
            fed, loss_nodes = sample_fed_labels(t.y, t.train_mask, lp_ratio=cfg.lp_ratio, rng=rngs[i])
            if i not in local:
                continue
            g = graphs[i]
            graph, x, y, onehot = local[i]
            y_obs = onehot * torch.as_tensor(fed, dtype=dtype, device=device)[:, None]
            conv = g.conv if cfg.maps_from == "train" else _refit(g, fed, n_hops).conv
            logits = model(graph, x, y_obs, conv)
            if idle:
                total = total + logits.sum() * 0.0
            elif loss_nodes.any():
                idx = torch.as_tensor(np.flatnonzero(loss_nodes), device=device)
                total = total + torch.nn.functional.cross_entropy(logits[idx], y[idx])
        loss = total * (world / len(tasks))
        backward(loss)
        opt.step()
        value = loss.detach()
        if reduce is not None and world > 1:
            value = reduce(value, reduction="mean")
        history.append(float(value))
        if callback is not None:
            callback(len(history), unwrapped)
            unwrapped.train()
    _log.debug("final training loss %.4f", history[-1])
    return history


def dgl_supports(device: torch.device | str) -> bool:
    """Whether the installed DGL can place a graph on ``device`` (PyPI's ``dgl`` wheels are CPU builds)."""
    dev = torch.device(device)
    if dev.type == "cpu":
        return True
    dgl = import_dgl()
    try:
        dgl.graph(([0], [0])).to(dev)
    except Exception:  # DGLError (no CUDA in this build) or a torch device error
        return False
    return True


def default_accelerator() -> Any:
    """``accelerate.Accelerator()``, on the CPU only when the installed DGL cannot use the accelerator's GPU.

    Example:
        >>> default_accelerator().device.type in ("cpu", "cuda")
        True
    """
    from accelerate import Accelerator

    dgl_without_gpu = torch.cuda.is_available() and not dgl_supports("cuda")
    if dgl_without_gpu:
        _log.warning("the installed DGL cannot use the GPU (a CPU build): training on the CPU")
    return Accelerator(cpu=dgl_without_gpu)


def _on_device(g: PreparedGraph, device: torch.device) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The graph and tensors of ``g`` on ``device``."""
    return g.graph.to(device), g.x.to(device), g.y.to(device), g.onehot.to(device)


@torch.no_grad()
def predict(model: TSGNN, task: GraphTask | PreparedGraph, *, labelled: np.ndarray | None = None) -> torch.Tensor:
    """Zero-shot logits ``[N, C]`` of a new graph, feeding the labels of its ``labelled`` nodes.

    The class count C is read from the task's labels; ``labelled`` defaults to the task's ``train_mask`` (every
    training label fed, as the official zero-shot evaluation). The conversion maps are fitted on the same labelled
    nodes, so no label outside ``labelled`` reaches the model.

    Raises:
        TypeError: bad ``model`` or ``task``.
        ValueError: bad ``labelled`` mask.
    """
    if not isinstance(model, TSGNN):
        raise TypeError(f"model: expected a TSGNN, got {type(model).__name__}")
    g = _as_prepared(task, model.config.n_hops, _param_dtype(model))
    feed = g.task.train_mask if labelled is None else check_mask(labelled, "labelled", g.task.num_nodes)
    if not feed.any():
        raise ValueError("labelled: needs at least one labelled node")
    if not np.array_equal(feed, g.fit_mask):
        g = _refit(g, feed, model.config.n_hops)
    model.eval()
    device = next(model.parameters()).device
    graph, x, _, onehot = _on_device(g, device)
    y_obs = onehot * torch.as_tensor(feed, dtype=onehot.dtype, device=device)[:, None]
    return model(graph, x, y_obs, g.conv)


def accuracy(logits: torch.Tensor | np.ndarray, y: np.ndarray, mask: np.ndarray) -> float:
    """Accuracy of ``argmax logits`` on the nodes of ``mask``.

    Raises:
        ValueError: shapes disagree, non-finite ``logits`` or ``mask`` is empty.
    """
    scores = logits.detach().cpu().numpy() if isinstance(logits, torch.Tensor) else np.asarray(logits)
    y = np.asarray(y)
    if scores.ndim != 2 or scores.shape[0] != y.shape[0]:
        raise ValueError(f"logits: expected shape [{y.shape[0]}, C], got {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("logits: contains NaN or inf")
    m = check_mask(mask, "mask", y.shape[0])
    if not m.any():
        raise ValueError("mask: selects no node")
    return float(np.mean(scores[m].argmax(axis=1) == y[m]))


def zero_shot_accuracy(model: TSGNN, task: GraphTask | PreparedGraph) -> float:
    """Test accuracy of ``model`` on an unseen graph with all its training labels fed (no gradient step).

    For class probabilities of a user's ``DGLGraph`` use :func:`nips25_gfm.zero_shot`.

    Raises:
        TypeError: bad ``model`` or ``task``.
    """
    if not isinstance(model, TSGNN):
        raise TypeError(f"model: expected a TSGNN, got {type(model).__name__}")
    g = _as_prepared(task, model.config.n_hops, _param_dtype(model)) if isinstance(model, TSGNN) else task
    logits = predict(model, g)
    t = g.task if isinstance(g, PreparedGraph) else g
    return accuracy(logits, t.y, t.test_mask)
