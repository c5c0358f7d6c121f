"""The README quickstart runs exactly as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs(capsys):
    text = README.read_text()
    block = re.search(r"## Quickstart\s+```python\n(.*?)```", text, re.S)
    assert block is not None, "README has no python quickstart block"
    exec(compile(block.group(1), "README-quickstart", "exec"), {})
    assert capsys.readouterr().out.strip()
