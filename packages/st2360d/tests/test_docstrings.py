"""The examples in the public docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = ["alignment", "geometry", "groundtruth", "merge", "metrics", "models", "scenes", "video_windows", "views"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"nips25_st2360d.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0
