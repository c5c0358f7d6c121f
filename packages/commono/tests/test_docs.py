"""The README quickstart runs exactly as written."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_quickstart_runs(capsys) -> None:  # type: ignore[no-untyped-def]
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"## Quickstart\n\n```python\n(.*?)```", readme, re.S)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "TemplateMatcher" in out and "NoisyOracle" in out and "A. " in out
