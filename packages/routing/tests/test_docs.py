"""Every docstring example in the package runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import nips25_routing
import pytest

MODULES = sorted(m.name for m in pkgutil.iter_modules(nips25_routing.__path__, "nips25_routing."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
