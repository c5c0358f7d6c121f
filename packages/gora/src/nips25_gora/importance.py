"""GoRA's importance score of one weight matrix from its accumulated gradient (GoRA, Sec. 3.1)."""

from __future__ import annotations

import torch

from nips25_gora._validation import check_matrix
from nips25_gora.config import IMPORTANCE_KINDS, ImportanceKind

__all__ = ["importance"]


@torch.no_grad()
def importance(weight: torch.Tensor, grad: torch.Tensor, *, kind: ImportanceKind = "union_mean") -> float:
    r"""Importance :math:`I_i` of one layer from its weight and mean gradient (GoRA, Sec. 3.1).

    The default is the official run scripts' ``union_mean``, the mean absolute first-order Taylor saliency

    .. math:: I(W) = \frac{1}{mn}\sum_{jk} |W_{jk}\,\bar G_{jk}|.

    Other kinds: ``union_frobenius`` :math:`\|W\odot\bar G\|_F` (the official parser's default),
    ``union_nuclear`` :math:`\|W\odot\bar G\|_*`, and ``grad_mean``, ``grad_frobenius``, ``grad_nuclear`` which
    use :math:`\bar G` alone. All are computed in float64.

    Args:
        weight: ``(m, n)`` float tensor, the frozen weight :math:`W` (out_features, in_features).
        grad: ``(m, n)`` float tensor, the mean gradient :math:`\bar G = \partial L/\partial W`.
        kind: which score (see above).

    Returns:
        The non-negative importance as a Python float.

    Raises:
        TypeError: if ``weight`` or ``grad`` is not a floating-point tensor.
        ValueError: on shapes that are not 2-D or differ, empty or non-finite input, or an unknown ``kind``.

    References:
        He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171, Sec. 3.1.

    Example:
        >>> importance(torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]]))
        2.5
    """
    check_matrix("weight", weight)
    check_matrix("grad", grad, shape=tuple(weight.shape))  # type: ignore[arg-type]
    if kind not in IMPORTANCE_KINDS:
        raise ValueError(f"kind must be one of {IMPORTANCE_KINDS}, got {kind!r}")
    g = grad.detach().to("cpu", torch.float64)
    m = g * weight.detach().to("cpu", torch.float64) if kind.startswith("union") else g
    if kind.endswith("mean"):
        value = m.abs().mean()
    elif kind.endswith("frobenius"):
        value = torch.linalg.matrix_norm(m)
    else:
        value = torch.linalg.matrix_norm(m, ord="nuc")
    return float(value)
