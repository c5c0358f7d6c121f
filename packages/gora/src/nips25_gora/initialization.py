"""GoRA's compressed-gradient initialisation of ``lora_B`` (GoRA, Sec. 3.3)."""

from __future__ import annotations

import math
import numbers

import torch

from nips25_gora._validation import check_matrix

__all__ = ["compress_init", "lora_scaling", "projection"]


def lora_scaling(rank: int, *, lora_alpha: float, rank_stabilized: bool = True) -> float:
    r"""LoRA's output scaling :math:`s = \alpha/\sqrt{r}` (rsLoRA, GoRA's choice) or :math:`\alpha/r` (peft's default).

    Raises:
        ValueError: if ``rank < 1`` or ``lora_alpha`` is not a finite positive number.
    """
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"rank must be an int >= 1, got {rank!r}")
    if not math.isfinite(lora_alpha) or lora_alpha <= 0:
        raise ValueError(f"lora_alpha must be a finite number > 0, got {lora_alpha!r}")
    return lora_alpha / (math.sqrt(rank) if rank_stabilized else rank)


def projection(lora_A: torch.Tensor, *, ridge: float | None = None) -> torch.Tensor:
    r"""Orthogonal projector :math:`P_A = A^\top (AA^\top)^{-1} A = A^+ A` onto the row space of ``lora_A``.

    Args:
        lora_A: ``(r, n)`` float tensor.
        ridge: ``None`` (default): least squares through an SVD (``torch.linalg.lstsq``, driver ``gelsd``), exact
            at any conditioning of A and the minimum-norm projector when A is rank-deficient; a number
            :math:`\lambda \ge 0`: the official ridge form :math:`A^\top (AA^\top + \lambda I)^{-1} A`.

    Returns:
        ``(n, n)`` float64 tensor; symmetric, idempotent and of rank ``rank(A)`` unless a ridge > 0 is given.

    Raises:
        ValueError: if ``ridge`` is negative or not finite, or ``lora_A`` is rank-deficient with ``ridge == 0``.

    Example:
        >>> projection(torch.tensor([[2.0, 0.0, 0.0]]))
        tensor([[1., 0., 0.],
                [0., 0., 0.],
                [0., 0., 0.]], dtype=torch.float64)
    """
    a = check_matrix("lora_A", lora_A).detach().to("cpu", torch.float64)
    _check_ridge(ridge)
    return a.T @ _pinv_times(a, torch.eye(a.shape[1], dtype=torch.float64), ridge=ridge)


def _check_ridge(ridge: object) -> None:
    if ridge is None:
        return
    if isinstance(ridge, bool) or not isinstance(ridge, numbers.Real) or not math.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be None or a finite number >= 0, got {ridge!r}")


def _pinv_times(a: torch.Tensor, m: torch.Tensor, *, ridge: float | None) -> torch.Tensor:
    r""":math:`(AA^\top + \lambda I)^{-1} A M` in float64 (``a`` is ``(r, n)``, ``m`` is ``(n, k)``).

    ``ridge=None`` solves :math:`\min_X \|A^\top X - M\|_F` with ``lstsq`` (SVD driver ``gelsd``): the same
    :math:`X = (AA^\top)^{-1}AM` for a full-row-rank A without forming :math:`AA^\top` (whose condition number
    is the square of A's), and the minimum-norm :math:`X = (A^\top)^+ M` for a rank-deficient A. A number
    forms the Gram matrix with the ridge (the official code's form); a singular Gram matrix raises a ValueError
    naming ``lora_A``.
    """
    if ridge is None:
        return torch.linalg.lstsq(a.T, m, driver="gelsd").solution
    gram = a @ a.T + float(ridge) * torch.eye(a.shape[0], dtype=torch.float64)
    try:
        return torch.linalg.solve(gram, a @ m)
    except torch.linalg.LinAlgError:
        raise ValueError(
            f"lora_A is rank-deficient (A A^T + {ridge} I is singular for lora_A of shape {tuple(a.shape)}): "
            "use a full-row-rank lora_A, ridge=None (least squares) or ridge > 0"
        ) from None


@torch.no_grad()
def compress_init(
    grad: torch.Tensor,
    lora_A: torch.Tensor,
    *,
    xi: float = 5e-2,
    lora_alpha: float = 16.0,
    rank_stabilized: bool = True,
    ridge: float | None = None,
) -> torch.Tensor:
    r"""``lora_B`` such that the initial update is one compressed gradient-DESCENT step (GoRA, Sec. 3.3).

    With :math:`A\in\mathbb{R}^{r\times n}` fixed (peft's kaiming-uniform draw) and :math:`s` LoRA's scaling,

    .. math:: B = -\frac{\xi}{s}\sqrt{\frac{n}{r}}\ \bar G A^+,
       \qquad A^+ = A^\top (AA^\top)^{-1},
       \qquad \Delta W(0) = sBA = -\xi\sqrt{n/r}\ \bar G P_A .

    :math:`B` is the least-squares fit of the scaled negative gradient in the row space of :math:`A`. Since
    :math:`\mathbb{E}[P_A] = (r/n) I`, :math:`\mathbb{E}\|\Delta W(0)\|_F^2 = \xi^2\|\bar G\|_F^2`: one SGD step of
    size :math:`\xi` in expected energy, and exactly :math:`-\xi\bar G` at :math:`r = n`. With rsLoRA scaling
    :math:`s=\alpha/\sqrt r` the prefactor is the official :math:`-\xi\sqrt{n}/\alpha`. The solve runs in float64.
    The sign is descent (the official code's commit 321fe07 dropped the minus; we keep it).

    Args:
        grad: ``(m, n)`` float tensor, the mean gradient :math:`\bar G` of the frozen weight.
        lora_A: ``(r, n)`` float tensor, peft's ``lora_A.weight``.
        xi: step size :math:`\xi > 0`.
        lora_alpha: LoRA's :math:`\alpha > 0`.
        rank_stabilized: scaling :math:`\alpha/\sqrt r` (True) or :math:`\alpha/r`.
        ridge: ``None`` (default): :math:`\bar G A^+` by least squares (``torch.linalg.lstsq``, SVD), exact at any
            conditioning of A, so at :math:`r = n` the update is :math:`-\xi\bar G` to float64 precision. A number
            :math:`\lambda \ge 0` uses the official form :math:`\bar G A^\top(AA^\top + \lambda I)^{-1}`
            (official: ``1e-8``, absolute, which biases the step when A is ill-conditioned).

    Returns:
        ``(m, r)`` tensor with ``lora_A``'s dtype and device: the new ``lora_B.weight``.

    Raises:
        TypeError: if ``grad`` or ``lora_A`` is not a floating-point tensor.
        ValueError: on shapes that do not fit (``grad.shape[1] != lora_A.shape[1]``), NaN/inf, empty input, or
            ``xi``, ``lora_alpha`` or ``ridge`` out of range, or a rank-deficient ``lora_A`` with ``ridge == 0``.

    References:
        He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171, Sec. 3.3.

    Example:
        >>> a = torch.eye(2)
        >>> compress_init(torch.tensor([[1.0, 2.0]]), a, xi=0.5, lora_alpha=2.0, rank_stabilized=False, ridge=0.0)
        tensor([[-0.5000, -1.0000]])
    """
    check_matrix("grad", grad)
    check_matrix("lora_A", lora_A)
    if grad.shape[1] != lora_A.shape[1]:
        raise ValueError(
            f"lora_A must have grad's in_features as columns: grad is {tuple(grad.shape)}, "
            f"lora_A is {tuple(lora_A.shape)} (expected (r, {grad.shape[1]}))"
        )
    if isinstance(xi, bool) or not isinstance(xi, numbers.Real) or not math.isfinite(xi) or xi <= 0:
        raise ValueError(f"xi must be a finite number > 0, got {xi!r}")
    _check_ridge(ridge)
    r, n = lora_A.shape
    s = lora_scaling(r, lora_alpha=lora_alpha, rank_stabilized=rank_stabilized)
    a = lora_A.detach().to("cpu", torch.float64)
    g = grad.detach().to("cpu", torch.float64)
    b = _pinv_times(a, g.T, ridge=ridge).T  # G A^T (A A^T + ridge I)^{-1} = G A^+ at ridge None, (m, r)
    b = b * (-xi * math.sqrt(n / r) / s)
    return b.to(device=lora_A.device, dtype=lora_A.dtype)
