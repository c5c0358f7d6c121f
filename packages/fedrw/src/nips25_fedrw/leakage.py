"""What one client can infer from its PPMPR view: the holders of each of its items and bounds on their counts.

Pairwise PSI reveals every intersection :math:`D_i \\cap D_j` to both sides, so client ``i`` knows the set
:math:`H_i(x)` of partners holding each of its distinct items ``x``. The secure sum then gives it
:math:`S_i(x) = \\sum_{j \\in H_i(x)} c_j(x)`. Since every holder holds at least one copy, each holder's count lies in
:math:`[1, S_i(x) - |H_i(x)| + 1]` when two or more partners hold ``x``, and it is exactly :math:`S_i(x)` when one
partner alone holds it. With count-encoded PSI (cap ``T``) the client learns :math:`\\min(c_j(x), T)` of every
partner: exact below ``T``, a lower bound ``T`` at the cap.

These are the inferences of a semi-honest client from its own outputs; set sizes (public in every PSI run) are not
counted here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nips25_fedrw.ppmpr import PPMPRResult
from nips25_fedrw.samples import Client

__all__ = ["ItemInference", "client_inferences"]


@dataclass(frozen=True)
class ItemInference:
    """What client ``i`` knows about the other clients' copies of one of its distinct items.

    Attributes:
        item: the canonical item ``x``.
        own_count: :math:`c_i(x)`.
        holders: sorted ids of the partners known to hold ``x`` (from the PSI outputs).
        others_total: :math:`\\sum_{j \\ne i} c_j(x)` as the client learned it (capped per partner with count
            encoding).
        bounds: ``{j: (low, high)}`` for every holder ``j``: :math:`low \\le c_j(x) \\le high`, ``high`` ``None``
            where unbounded (a count at the cap of count-encoded PSI).
    """

    item: bytes
    own_count: int
    holders: tuple[int, ...]
    others_total: int
    bounds: dict[int, tuple[int, int | None]]

    @property
    def exact_counts(self) -> dict[int, int]:
        """``{j: c_j(x)}`` for the partners whose count the client can deduce exactly."""
        return {j: lo for j, (lo, hi) in self.bounds.items() if lo == hi}


def client_inferences(client: Client, result: PPMPRResult) -> list[ItemInference]:
    r"""Client ``i``'s inferences about the other clients, from its own samples and its PPMPR view.

    Secure-sum mode: :math:`S = F_i(x) - c_i(x)`, holders :math:`H` from the PSI outputs; a single holder's count is
    :math:`S` exactly, and with :math:`|H| \ge 2` each holder's count lies in :math:`[1, S - |H| + 1]`.
    Count-encoded mode (``result.count_cap`` ``T``):
    partner ``j``'s count is :math:`\hat c_j(x)` exactly when :math:`\hat c_j(x) < T`, and at least ``T`` otherwise.

    Args:
        client: the client whose view is read (its samples must be the ones ``result`` was computed on).
        result: the output of :func:`nips25_fedrw.ppmpr.ppmpr_in_process`.

    Returns:
        One :class:`ItemInference` per distinct item of ``client``, in byte order of the items.

    Raises:
        TypeError: if ``client`` is not a :class:`Client` or ``result`` not a :class:`PPMPRResult`.
        ValueError: if ``result`` holds no view of ``client.id`` or its sizes do not match ``client``'s samples.

    Example:
        >>> from nips25_fedrw.ppmpr import ppmpr_in_process
        >>> cs = [Client(0, ("x", "y")), Client(1, ("x",) * 4), Client(2, ("z", "y", "y"))]
        >>> [(i.item, i.exact_counts) for i in client_inferences(cs[0], ppmpr_in_process(cs, seed=0))]
        [(b'x', {1: 4}), (b'y', {2: 2})]
    """
    if not isinstance(client, Client):
        raise TypeError(f"client must be a Client, got {type(client).__name__}")
    if not isinstance(result, PPMPRResult):
        raise TypeError(f"result must be a PPMPRResult, got {type(result).__name__}")
    if client.id not in result.views or client.id not in result.freq:
        raise ValueError(f"result holds no view of client {client.id}")
    view, freq = result.views[client.id], np.asarray(result.freq[client.id])
    items, counts, inverse = client.distinct()
    if freq.shape != (len(client.samples),):
        raise ValueError(f"result.freq[{client.id}] has shape {freq.shape}, client holds {len(client.samples)} samples")
    f_items = np.zeros(len(items), dtype=np.int64)
    f_items[inverse] = freq
    holders: list[list[int]] = [[] for _ in items]
    for j in sorted(view.shared_with):
        idx = np.asarray(view.shared_with[j], dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(items)):
            raise ValueError(f"result.views[{client.id}].shared_with[{j}] does not index client {client.id}'s items")
        for a in idx.tolist():
            holders[a].append(j)
    cap = result.count_cap
    out = []
    for a, x in enumerate(items):
        total = int(f_items[a] - counts[a])
        bounds: dict[int, tuple[int, int | None]] = {}
        for j in holders[a]:
            if cap is None:  # every holder has >= 1 copy; a single holder's count is the whole total
                h = len(holders[a])
                bounds[j] = (total, total) if h == 1 else (1, total - h + 1)
            else:
                c = int(view.partner_counts[j][a])
                bounds[j] = (c, c if c < cap else None)
        out.append(ItemInference(x, int(counts[a]), tuple(holders[a]), total, bounds))
    return out
