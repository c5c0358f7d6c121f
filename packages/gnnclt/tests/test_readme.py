"""The README's quickstart runs as written and prints the number its comment promises (the keys fix it)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_prints_what_the_readme_says(capsys):
    text = README.read_text()
    section = text[text.index("## Quickstart") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    promised = re.search(r"# prints (\d+\.\d+)", code).group(1)
    exec(compile(code, str(README), "exec"), {"__name__": "quickstart"})
    printed = capsys.readouterr().out
    assert re.search(r"sliced W1 to the limit mixture: (\d+\.\d+)", printed).group(1) == promised
