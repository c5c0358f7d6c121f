"""The docstring examples and the README quickstart really run."""

import doctest
import re
import warnings
from pathlib import Path

import nips25_tmex.ate
import nips25_tmex.gcm
import nips25_tmex.measurement
import nips25_tmex.metrics
import nips25_tmex.pcm
import pytest
from nips25_tmex import DegenerateResidualWarning


@pytest.mark.parametrize(
    "module", [nips25_tmex.ate, nips25_tmex.gcm, nips25_tmex.measurement, nips25_tmex.metrics, nips25_tmex.pcm]
)
def test_docstring_examples(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateResidualWarning)
        result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_readme_quickstart_runs(capsys):
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"## Quickstart\s+```python\n(.*?)```", readme, re.S)
    assert code is not None
    exec(compile(code.group(1), "README-quickstart", "exec"), {})
    out = capsys.readouterr().out.split("\n")
    assert out[0].split()[0].isdigit()
