"""Test setup: helpers importable (pytest runs with ``--import-mode=importlib``); fast XLA compiles.

The suite is dominated by XLA compile time of many small programs; ``jax_disable_most_optimizations`` cuts it
three- to four-fold and changes no result beyond float rounding.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).parent))
jax.config.update("jax_disable_most_optimizations", True)
