"""Issue 42: under a distributed launch only the main rank writes the reproduce figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from nips25_vgsearch.reproduce import _plot
from nips25_vgsearch.sweep import SweepPoint


def _point(method: str, n: int, accuracy: float) -> SweepPoint:
    return SweepPoint(method=method, n=n, accuracy=accuracy, se=0.01, flops=1e12 * n, gen_tokens=10.0 * n,
                      verifier_calls=float(n))  # fmt: skip


CURVES = {"sim": {"bon": [_point("bon", 4, 0.5), _point("bon", 8, 0.6)], "g=1": [_point("g=1", 4, 0.55)]}}


@pytest.mark.parametrize(("rank", "written"), [("0", True), ("1", False)])
def test_only_the_main_rank_writes_the_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: str,
                                              written: bool) -> None:  # fmt: skip
    monkeypatch.setenv("RANK", rank)
    name = _plot(CURVES, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([name] if written else [])
