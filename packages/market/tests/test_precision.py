"""Importing nips25_market leaves JAX's global float64 flag alone; float64 is opt-in and scoped."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


def test_import_keeps_x64_flag_in_fresh_interpreter() -> None:
    out = _run(
        """
        import warnings
        import jax
        before = jax.config.jax_enable_x64
        import nips25_market
        from nips25_market import LMSR, SmoothQuadratic, float64
        after_import = jax.config.jax_enable_x64
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p32 = LMSR(3, b=1.0).price([1.0, 0.0, 0.0])
        with float64():
            in_block = jax.config.jax_enable_x64
            mm = LMSR(3, b=1.0)
            p64 = mm.price([1.0, 0.0, 0.0])
            q64 = SmoothQuadratic(mm).quote([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
        after_block = jax.config.jax_enable_x64
        print(before, after_import, in_block, after_block, p32.dtype, p64.dtype, q64.dtype, len(caught),
              "float32" in str(caught[0].message) if caught else None)
        """
    )
    assert out == "False False True False float32 float64 float64 1 True", out


def test_import_keeps_x64_on_when_user_turned_it_on() -> None:
    out = _run(
        """
        import jax
        jax.config.update("jax_enable_x64", True)
        import nips25_market
        from nips25_market import float64
        with float64():
            pass
        print(jax.config.jax_enable_x64)
        """
    )
    assert out == "True"


LAYERS = ["_checks", "precision", "trace", "cost_functions", "smooth_quadratic", "traders", "simulation"]


@pytest.mark.parametrize("module", LAYERS)
def test_layers_import_downward_only(module: str) -> None:
    """No module of the market/trader/simulation stack imports (even lazily) a module above it: no cycle."""
    import nips25_market

    tree = ast.parse(Path(nips25_market.__file__).with_name(f"{module}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nips25_market."):
            imported.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            imported |= {a.name.split(".")[1] for a in node.names if a.name.startswith("nips25_market.")}
    above = set(LAYERS[LAYERS.index(module) :])
    assert not (imported & above), f"{module} imports {sorted(imported & above)} (same level or above it)"
    if module == "simulation":
        assert {"cost_functions", "traders", "trace"} <= imported  # the simulation sits on top of both
