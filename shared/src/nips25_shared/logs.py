"""One log format for every package, verbosity from ``-v/-q`` or ``NIPS25_LOG_LEVEL``, and quiet progress bars."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

__all__ = ["configure_logging", "get_logger", "is_main_rank", "is_quiet", "progress"]

ROOT = "nips25"
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING, "ERROR": logging.ERROR}
T = TypeVar("T")


def _root() -> logging.Logger:
    root = logging.getLogger(ROOT)
    if not any(getattr(h, "_nips25", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT, datefmt="%H:%M:%S"))
        handler._nips25 = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        root.propagate = False
        root.setLevel(_env_level())
    return root


def _env_level() -> int:
    name = os.environ.get("NIPS25_LOG_LEVEL", "INFO").upper()
    if name not in _LEVELS:
        raise ValueError(f"NIPS25_LOG_LEVEL must be one of {sorted(_LEVELS)}, got {name!r}")
    return _LEVELS[name]


def get_logger(name: str) -> logging.Logger:
    """Return the logger ``nips25.<name>`` (``name`` is kept as is when it already starts with ``nips25``).

    Every nips25 logger writes to standard error with one format; the level comes from
    :func:`configure_logging` or, before that is called, from ``NIPS25_LOG_LEVEL`` (default ``INFO``).

    Raises:
        ValueError: if ``name`` is empty.
    """
    if not name:
        raise ValueError("name must be a non-empty string")
    _root()
    full = name if name == ROOT or name.startswith((ROOT + ".", ROOT + "_")) else f"{ROOT}.{name}"
    if full.startswith(ROOT + "_"):  # a package's module name, e.g. nips25_routing.reproduce
        full = f"{ROOT}.{full}"
    return logging.getLogger(full)


def configure_logging(verbosity: int = 0) -> int:
    """Set the level of every nips25 logger from a ``-v`` count minus a ``-q`` count.

    ``verbosity``: ``>= 1`` DEBUG, ``0`` the environment's ``NIPS25_LOG_LEVEL`` (default INFO), ``-1`` WARNING,
    ``<= -2`` ERROR. Progress bars are shown only at INFO or below.

    Returns:
        The logging level set.
    """
    if isinstance(verbosity, bool) or not isinstance(verbosity, int):
        raise TypeError(f"verbosity must be an int, got {type(verbosity).__name__}")
    if verbosity >= 1:
        level = logging.DEBUG
    elif verbosity == 0:
        level = _env_level()
    elif verbosity == -1:
        level = logging.WARNING
    else:
        level = logging.ERROR
    _root().setLevel(level)
    return level


def is_quiet() -> bool:
    """True when nips25 logging is above INFO (``-q`` or ``NIPS25_LOG_LEVEL=WARNING``)."""
    return _root().getEffectiveLevel() > logging.INFO


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str = "") -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm progress bar on standard error.

    Silent when :func:`is_quiet`, when ``TQDM_DISABLE`` is set to a true value (``1``, ``true``, ``yes``; tqdm's
    own switch, which an explicit ``disable=`` would otherwise override), and on every process but the first of a
    distributed run (``RANK`` / ``LOCAL_RANK`` set and not 0), so that ``accelerate launch`` prints one bar.

    Args:
        iterable: what to iterate over.
        total: number of items, when ``len(iterable)`` is not available.
        desc: label shown before the bar.
    """
    disabled = is_quiet() or _env_true("TQDM_DISABLE") or not is_main_rank()
    return iter(tqdm(iterable, total=total, desc=desc, disable=disabled, file=sys.stderr, leave=False))


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def is_main_rank() -> bool:
    """False on the non-first processes of a distributed launch (``RANK``, else ``LOCAL_RANK``, set and not 0).

    ``accelerate launch`` and ``torchrun`` set both; a plain process has neither and is the main rank.

    Example:
        >>> is_main_rank()
        True
    """
    rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0"))
    return rank.strip() in {"", "0"}
