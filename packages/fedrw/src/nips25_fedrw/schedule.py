"""Parallel orchestration of the pairwise protocol: a round-robin tournament over the clients (FedRW, Sec. 4)."""

from __future__ import annotations

__all__ = ["round_robin_schedule"]


def round_robin_schedule(n_clients: int) -> list[list[tuple[int, int]]]:
    r"""Rounds of disjoint client pairs covering every unordered pair exactly once (circle method).

    For even :math:`K` there are :math:`K-1` rounds of :math:`K/2` pairs; for odd :math:`K` a bye is added, giving
    :math:`K` rounds of :math:`(K-1)/2` pairs. Pairs of one round share no client, so they run in parallel.

    Args:
        n_clients: the number of clients :math:`K \ge 2`.

    Returns:
        ``rounds[r] = [(i, j), ...]`` with ``i < j``.

    Raises:
        TypeError: if ``n_clients`` is not an int.
        ValueError: if ``n_clients < 2``.

    References:
        Ye et al., "FedRW", NeurIPS 2025, arXiv:2511.07505 (parallel orchestration; the circle method is our
        reconstruction of the schedule).

    Example:
        >>> round_robin_schedule(4)
        [[(0, 3), (1, 2)], [(0, 2), (1, 3)], [(0, 1), (2, 3)]]
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int):
        raise TypeError(f"n_clients must be an int, got {type(n_clients).__name__}")
    if n_clients < 2:
        raise ValueError(f"n_clients must be >= 2, got {n_clients}")
    players: list[int | None] = list(range(n_clients))
    if n_clients % 2:
        players.append(None)  # the bye
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for a in range(m // 2):
            i, j = players[a], players[m - 1 - a]
            if i is not None and j is not None:
                pairs.append((min(i, j), max(i, j)))
        rounds.append(sorted(pairs))
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first
    return rounds
