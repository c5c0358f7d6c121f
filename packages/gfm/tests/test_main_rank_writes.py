"""Issue 42: under a distributed launch only the main rank writes the reproduce figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from nips25_gfm.reproduce import _figure

CURVES = {"real graphs": ([0.5, 0.6], [0.05, 0.04])}
PER_GRAPH = {"karate": {"ts_mean": 0.7, "ls_ensemble": 0.6, "gcn_own_labels": 0.8, "constant": 0.5}}


@pytest.mark.parametrize(("rank", "written"), [("0", True), ("1", False)])
def test_only_the_main_rank_writes_the_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: str,
                                              written: bool) -> None:  # fmt: skip
    monkeypatch.setenv("RANK", rank)
    name = _figure(tmp_path, (1, 2), CURVES, PER_GRAPH)
    assert (tmp_path / name).exists() is written
    assert [p.name for p in tmp_path.iterdir()] == ([name] if written else [])
