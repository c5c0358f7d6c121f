"""Test-session setup for nips25-market (tests/ and the src/ doctests both sit below this file).

The package no longer turns on float64 when imported (``nips25_market.precision``); its tests and docstring
examples check float64 numerics, so the test process opts in here, as a user's program would at start-up.
``tests/test_precision.py`` checks the import itself in a fresh interpreter.
"""

import jax

jax.config.update("jax_enable_x64", True)
