"""The README's quickstart runs exactly as written."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_quickstart_runs() -> None:
    text = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python block"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["actions"].shape == (4,)
