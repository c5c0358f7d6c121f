r"""Triple-symmetric layers: node- and label-equivariant, feature-invariant message passing on set tensors.

Hidden states are two set tensors with a channel axis: ``x [N, F, k]`` (a set of F feature slots) and
``y [N, C, k]`` (a set of C label slots). A backbone convolution :math:`\psi` acts on the channel axis only and is
shared over the set axis, so it commutes with any permutation of features or classes; DGL's ``update_all``
propagates every slot at once (paper, Sec. 4, TS-GNN; official ``models/equiv_layer.py``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from nips25_gfm.graphs import import_dgl
from nips25_gfm.least_squares import Conversions

__all__ = ["BACKBONES", "MeanConv", "SetGATConv", "TSLayer", "make_conv"]

BACKBONES = ("mean", "gat")


def _check_set_tensor(h: Any, name: str, k: int, n: int | None = None) -> torch.Tensor:
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(h).__name__}")
    if h.ndim != 3 or h.shape[2] != k or h.shape[0] == 0 or h.shape[1] == 0:
        raise ValueError(f"{name}: expected shape [N, S, {k}] with N, S >= 1, got {tuple(h.shape)}")
    if n is not None and h.shape[0] != n:
        raise ValueError(f"{name}: expected {n} rows (graph nodes), got {h.shape[0]}")
    if not torch.isfinite(h).all():
        raise ValueError(f"{name}: contains NaN or inf")
    return h


class MeanConv(nn.Module):
    r"""Mean-aggregation convolution on the channel axis.

    :math:`\psi(h)_v = W_s h_v + W_a\,\mathrm{mean}_{u\in N(v)} h_u`.

    No bias (a bias would break nothing but the official layer has none). A node without in-edges aggregates
    zero (DGL ``fn.mean``).

    Args:
        k_in: input channels.
        k_out: output channels.

    Shapes:
        ``(graph, h [N, S, k_in]) -> [N, S, k_out]``.

    Example:
        >>> import torch
        >>> from nips25_gfm import import_dgl
        >>> dgl = import_dgl()  # DGL with the PyTorch backend
        >>> conv = MeanConv(1, 1)
        >>> conv(dgl.graph(([0, 1], [1, 0])), torch.ones(2, 3, 1)).shape
        torch.Size([2, 3, 1])
    """

    def __init__(self, k_in: int, k_out: int) -> None:
        super().__init__()
        self.lin_self = nn.Linear(k_in, k_out, bias=False)
        self.lin_agg = nn.Linear(k_in, k_out, bias=False)

    def aggregate(self, graph: Any, h: torch.Tensor) -> torch.Tensor:
        """:math:`\\mathrm{mean}_{u\\in N(v)} h_u` through ``update_all(copy_u, mean)``."""
        fn = import_dgl().function
        with graph.local_scope():
            graph.ndata["h"] = h
            graph.update_all(fn.copy_u("h", "m"), fn.mean("m", "agg"))
            return graph.ndata["agg"]

    def forward(self, graph: Any, h: torch.Tensor) -> torch.Tensor:
        """Apply the convolution to every set slot.

        Raises:
            TypeError, ValueError: ``h`` is not a finite ``[N, S, k_in]`` tensor with N the graph's nodes.
        """
        return self.propagate(graph, _check_set_tensor(h, "h", self.lin_self.in_features, graph.num_nodes()))

    def propagate(self, graph: Any, h: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` without the input checks (for callers that checked ``h``, e.g. :class:`TSLayer`)."""
        return self.lin_self(h) + self.lin_agg(self.aggregate(graph, h))


class SetGATConv(nn.Module):
    r"""Single-head GAT without bias on the channel axis, attention computed per set slot, self-loops added.

    :math:`\psi(h)_v = \sum_{u\in N(v)\cup\{v\}} \alpha_{vu} W h_u`,
    :math:`\alpha_{vu} = \mathrm{softmax}_u\,\mathrm{LeakyReLU}(a_l^\top W h_u + a_r^\top W h_v)` (DGL
    ``edge_softmax``).

    Shapes:
        ``(graph, h [N, S, k_in]) -> [N, S, k_out]``.
    """

    def __init__(self, k_in: int, k_out: int, *, negative_slope: float = 0.2) -> None:
        super().__init__()
        self.lin = nn.Linear(k_in, k_out, bias=False)
        self.attn_l = nn.Parameter(torch.empty(k_out))
        self.attn_r = nn.Parameter(torch.empty(k_out))
        self.negative_slope = negative_slope
        nn.init.normal_(self.attn_l, std=0.1)
        nn.init.normal_(self.attn_r, std=0.1)

    def forward(self, graph: Any, h: torch.Tensor) -> torch.Tensor:
        """Attention-weighted sum over in-neighbours and the node itself, for every set slot.

        Raises:
            TypeError, ValueError: ``h`` is not a finite ``[N, S, k_in]`` tensor with N the graph's nodes.
        """
        return self.propagate(graph, _check_set_tensor(h, "h", self.lin.in_features, graph.num_nodes()))

    def propagate(self, graph: Any, h: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` without the input checks (for callers that checked ``h``, e.g. :class:`TSLayer`)."""
        dgl = import_dgl()
        fn = dgl.function
        g = dgl.add_self_loop(dgl.remove_self_loop(graph))
        wh = self.lin(h)
        with g.local_scope():
            g.ndata["wh"] = wh
            g.ndata["el"] = (wh * self.attn_l).sum(-1, keepdim=True)
            g.ndata["er"] = (wh * self.attn_r).sum(-1, keepdim=True)
            g.apply_edges(fn.u_add_v("el", "er", "e"))
            e = nn.functional.leaky_relu(g.edata.pop("e"), self.negative_slope)
            g.edata["a"] = dgl.ops.edge_softmax(g, e)
            g.update_all(fn.u_mul_e("wh", "a", "m"), fn.sum("m", "out"))
            return g.ndata["out"]


def make_conv(backbone: str, k_in: int, k_out: int) -> MeanConv | SetGATConv:
    """The backbone convolution ``"mean"`` (:class:`MeanConv`) or ``"gat"`` (:class:`SetGATConv`)."""
    if backbone == "mean":
        return MeanConv(k_in, k_out)
    if backbone == "gat":
        return SetGATConv(k_in, k_out)
    raise ValueError(f"backbone: expected one of {BACKBONES}, got {backbone!r}")


def _apply_map(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``h [N, I, k] x_I W [I, J] + b [J] -> [N, J, k]`` (the bias added to every channel)."""
    return torch.einsum("nik,ij->njk", h, weight) + bias[None, :, None]


class TSLayer(nn.Module):
    r"""One triple-symmetric layer :math:`(x, y) \mapsto (x', y')` (paper, Sec. 4; official ``equiv_layer.py``).

    .. math::
        x' = \psi_1(x) + \psi_2(\mathrm{mean}_F x) + \psi_3(\mathrm{mean}_C(y) W_{p2x} + b)
             + \textstyle\sum_m \psi_m(y \times_C W^{(m)}_{y\to x} + b^{(m)})

        y' = \psi_4(y) + \psi_5(\mathrm{mean}_C y) + \psi_6(\mathrm{mean}_F(x) W_{p2y} + b)
             + \textstyle\sum_m \psi_m(x \times_F W^{(m)}_{x\to y} + b^{(m)})

    Means keep a size-1 set axis and broadcast; ``y'`` uses the incoming ``x``; the fixed maps come from
    :func:`~nips25_gfm.least_squares.xy_conversions` and act on the current hidden tensors. Equivariant to node and
    class permutations, invariant (on ``y``) to feature permutations. The parameter count depends on
    ``k_in, k_out, n_hops`` only, never on F or C.

    Args:
        k_in: input channels.
        k_out: output channels.
        n_hops: ``-1``: pooled maps only; ``L >= 0``: ``2L + 1`` extra maps per direction.
        backbone: ``"mean"`` or ``"gat"``.
    """

    def __init__(self, k_in: int, k_out: int, *, n_hops: int = -1, backbone: str = "mean") -> None:
        super().__init__()
        n_maps = 2 * n_hops + 1 if n_hops >= 0 else 0
        self.k_in, self.k_out, self.n_maps = k_in, k_out, n_maps
        self.x_self, self.x_pool, self.x_from_pool = (make_conv(backbone, k_in, k_out) for _ in range(3))
        self.y_self, self.y_pool, self.y_from_pool = (make_conv(backbone, k_in, k_out) for _ in range(3))
        self.x_from_y = nn.ModuleList(make_conv(backbone, k_in, k_out) for _ in range(n_maps))
        self.y_from_x = nn.ModuleList(make_conv(backbone, k_in, k_out) for _ in range(n_maps))

    def forward(
        self, graph: Any, x: torch.Tensor, y: torch.Tensor, conv: Conversions
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: graph with N nodes, ``x [N, F, k_in]``, ``y [N, C, k_in]``, the graph's conversions.

        Returns:
            ``(x' [N, F, k_out], y' [N, C, k_out])``.
        """
        n = graph.num_nodes()
        x = _check_set_tensor(x, "x", self.k_in, n)
        y = _check_set_tensor(y, "y", self.k_in, n)
        if len(conv.to_x) != self.n_maps or len(conv.to_y) != self.n_maps:
            raise ValueError(f"conv: expected {self.n_maps} maps per direction (n_hops), got {len(conv.to_x)}")
        f, c, dt, dev = x.shape[1], y.shape[1], x.dtype, x.device
        w_p2x, b_p2x = conv.pool2x.tensors(dt, dev)
        w_p2y, b_p2y = conv.pool2y.tensors(dt, dev)
        if w_p2x.shape != (1, f) or w_p2y.shape != (1, c):
            raise ValueError(f"conv: maps fitted for other shapes than F={f}, C={c}")
        # x and y were checked above; the maps are finite by construction, so the convolutions skip their checks
        # (one isfinite pass per call cost about a quarter of a training epoch).
        x_mean = x.mean(dim=1, keepdim=True)
        y_mean = y.mean(dim=1, keepdim=True)
        x_new = (
            self.x_self.propagate(graph, x)
            + self.x_pool.propagate(graph, x_mean)
            + self.x_from_pool.propagate(graph, _apply_map(y_mean, w_p2x, b_p2x))
        )
        y_new = (
            self.y_self.propagate(graph, y)
            + self.y_pool.propagate(graph, y_mean)
            + self.y_from_pool.propagate(graph, _apply_map(x_mean, w_p2y, b_p2y))
        )
        for psi, lmap in zip(self.x_from_y, conv.to_x, strict=True):
            x_new = x_new + psi.propagate(graph, _apply_map(y, *lmap.tensors(dt, dev)))
        for psi, lmap in zip(self.y_from_x, conv.to_y, strict=True):
            y_new = y_new + psi.propagate(graph, _apply_map(x, *lmap.tensors(dt, dev)))
        return x_new, y_new
