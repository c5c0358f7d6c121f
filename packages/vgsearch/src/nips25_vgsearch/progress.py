"""Progress bars that honour ``-q`` (through :func:`nips25_shared.progress`) and the ``TQDM_DISABLE`` variable."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from nips25_shared import progress as _shared_progress

__all__ = ["progress", "progress_disabled"]

T = TypeVar("T")


def progress_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``TQDM_DISABLE`` asks for no bars (any value but empty, ``0``, ``false``, ``no``, ``off``).

    Args:
        environ: the variables to read; ``None`` reads :data:`os.environ`.

    Example:
        >>> progress_disabled({"TQDM_DISABLE": "1"}), progress_disabled({"TQDM_DISABLE": "0"}), progress_disabled({})
        (True, False, False)
    """
    value = (os.environ if environ is None else environ).get("TQDM_DISABLE", "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def progress(iterable: Iterable[T], *, desc: str = "", show: bool = True) -> Iterator[T]:
    """``iterable`` with a progress bar on standard error, unless ``-q``, ``$TQDM_DISABLE`` or ``show=False``.

    :func:`nips25_shared.progress` passes tqdm an explicit ``disable`` (from ``-q``), which overrides tqdm's own
    reading of ``TQDM_DISABLE``; this wrapper reads the variable itself.

    Args:
        iterable: what to iterate over.
        desc: the bar's label.
        show: ``False`` for no bar (e.g. on processes other than the main one).
    """
    if not show or progress_disabled():
        return iter(iterable)
    return _shared_progress(iterable, desc=desc)
