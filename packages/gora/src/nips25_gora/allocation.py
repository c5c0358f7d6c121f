"""Rank allocation under LoRA's parameter budget (GoRA, Sec. 3.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["allocate_ranks", "lora_budget", "realised_budget"]


def _check_shapes(shapes: Mapping[str, tuple[int, int]]) -> None:
    if not isinstance(shapes, Mapping) or not shapes:
        raise ValueError("shapes must be a non-empty mapping {module_name: (out_features, in_features)}")
    for name, shape in shapes.items():
        if (
            not isinstance(shape, (tuple, list))
            or len(shape) != 2
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape)
        ):
            raise ValueError(f"shapes[{name!r}] must be a pair of positive ints (out, in), got {shape!r}")


def lora_budget(shapes: Mapping[str, tuple[int, int]], *, r_ref: int) -> int:
    r"""Trainable parameters of plain LoRA of rank ``r_ref`` on every layer: :math:`B=\sum_i r_{ref}(m_i+n_i)`.

    Args:
        shapes: ``{module_name: (m_i, n_i)}`` (out_features, in_features).
        r_ref: the uniform LoRA rank, ``>= 1``.

    Returns:
        The budget :math:`B` in parameters.

    Raises:
        ValueError: on empty or malformed ``shapes`` or ``r_ref < 1``.

    Example:
        >>> lora_budget({"q": (128, 64), "v": (128, 128)}, r_ref=4)
        1792
    """
    _check_shapes(shapes)
    if isinstance(r_ref, bool) or not isinstance(r_ref, int) or r_ref < 1:
        raise ValueError(f"r_ref must be an int >= 1, got {r_ref!r}")
    return sum(r_ref * (m + n) for m, n in shapes.values())


def realised_budget(shapes: Mapping[str, tuple[int, int]], ranks: Mapping[str, int]) -> int:
    r"""Trainable adapter parameters :math:`\sum_i r_i(m_i+n_i)` of the allocated ranks.

    Raises:
        ValueError: if the keys of ``shapes`` and ``ranks`` differ or a rank is negative.

    Example:
        >>> realised_budget({"q": (128, 64), "v": (128, 128)}, {"q": 6, "v": 2})
        1664
    """
    _check_shapes(shapes)
    if set(shapes) != set(ranks):
        raise ValueError("ranks must have the same keys as shapes")
    if any(r < 0 for r in ranks.values()):
        raise ValueError(f"ranks must be >= 0, got {dict(ranks)}")
    return sum(ranks[k] * (m + n) for k, (m, n) in shapes.items())


def allocate_ranks(
    shapes: Mapping[str, tuple[int, int]],
    importances: Mapping[str, float],
    *,
    r_ref: int = 8,
    r_min: int = 4,
    r_max: int = 32,
    renormalize: bool = False,
) -> dict[str, int]:
    r"""Split a LoRA-equivalent parameter budget into per-layer ranks (GoRA, Sec. 3.2).

    With :math:`B=\sum_i r_{ref}(m_i+n_i)` and :math:`a_i = I_i/\sum_j I_j`,

    .. math::
        r_i = \mathrm{clip}\big(\lfloor \mathrm{round}(B a_i) / (m_i+n_i) \rfloor,\
        r_{min},\ \min(r_{max}, m_i, n_i)\big).

    As in the official code nothing is renormalised after clipping (the realised budget may drift from
    :math:`B`); ``renormalize=True`` instead scales :math:`B` by the largest factor whose clipped allocation stays
    within :math:`B` (it never lowers a rank below ``r_min``). Ranks are also capped at :math:`\min(m_i, n_i)`,
    beyond which a rank adds parameters but no expressiveness.

    Args:
        shapes: ``{module_name: (m_i, n_i)}`` (out_features, in_features) of every target layer.
        importances: ``{module_name: I_i}``, finite, non-negative, not all zero; same keys as ``shapes``.
        r_ref: rank plain LoRA would use everywhere; sets the budget.
        r_min: lower bound on every rank, ``>= 1``.
        r_max: upper bound on every rank, ``>= r_min``.
        renormalize: rescale after clipping (see above).

    Returns:
        ``{module_name: r_i}`` in the order of ``shapes``, with ``r_min <= r_i <= r_max`` (and ``<= min(m_i, n_i)``).

    Raises:
        ValueError: if the keys differ, an importance is negative, not finite or all are zero, or the bounds are
            inconsistent.

    References:
        He et al., "GoRA: Gradient-driven Adaptive Low Rank Adaptation", NeurIPS 2025, arXiv:2502.12171, Sec. 3.2.

    Example:
        >>> allocate_ranks({"a": (4, 4), "b": (4, 4), "c": (8, 8)}, {"a": 1.0, "b": 3.0, "c": 4.0},
        ...                r_ref=2, r_min=1, r_max=99)
        {'a': 1, 'b': 3, 'c': 2}
    """
    budget = lora_budget(shapes, r_ref=r_ref)
    for name, value in (("r_min", r_min), ("r_max", r_max)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if r_min > r_max:
        raise ValueError(f"r_min must be <= r_max, got r_min={r_min} > r_max={r_max}")
    if not isinstance(importances, Mapping) or set(importances) != set(shapes):
        missing = set(shapes) ^ set(importances) if isinstance(importances, Mapping) else set(shapes)
        raise ValueError(f"importances must have the same keys as shapes; these differ: {sorted(missing)}")
    values: dict[str, float] = {}
    for name in shapes:
        raw = importances[name]
        try:
            if isinstance(raw, (str, bytes, bool)):
                raise TypeError
            values[name] = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise TypeError(f"importances[{name!r}] must be a real number, got {type(raw).__name__} {raw!r}") from None
    for name, v in values.items():
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"importances[{name!r}] must be finite and >= 0, got {v}")
    total = math.fsum(values.values())
    if total <= 0:
        raise ValueError("importances are all zero: no gradient signal to allocate ranks from")

    def allocate(scale: float) -> dict[str, int]:
        out = {}
        for name, (m, n) in shapes.items():
            raw = round(scale * budget * values[name] / total) // (m + n)
            out[name] = int(max(min(raw, r_max, m, n), min(r_min, m, n)))
        return out

    ranks = allocate(1.0)
    if renormalize:
        lo, hi = 0.0, 1.0
        while realised_budget(shapes, allocate(hi)) <= budget and hi < 2.0**20:
            lo, hi = hi, 2.0 * hi
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if realised_budget(shapes, allocate(mid)) <= budget else (lo, mid)
        ranks = allocate(lo)
    return ranks
