"""Issue 42: under a distributed launch only the main rank writes the reproduce figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from nips25_tmex.reproduce import ORDER, _figure

DEMO = {"k=2": {kind: {"tmex": 1.0} for kind in ORDER}}
FIVE = {"rows": {"A": {"tmex": [0.0, 1.0], "bias": [0.1, 0.2]}}}
RUNTIME = {"n=100": {"gcm_s": 0.01}, "n=1000": {"gcm_s": 0.1}}


@pytest.mark.parametrize(("rank", "written"), [("0", True), ("1", False)])
def test_only_the_main_rank_writes_the_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: str,
                                              written: bool) -> None:  # fmt: skip
    monkeypatch.setenv("RANK", rank)
    _figure(DEMO, FIVE, RUNTIME, tmp_path / "fig.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["fig.png"] if written else [])
