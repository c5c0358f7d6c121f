"""The user's own inputs: a Python set function, a submodularity spot-check, an edge-list file and the CLI on it."""

from __future__ import annotations

import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_submodular import (
    CallableSetFunction,
    GraphCut,
    PersistentNoisyOracle,
    Uniform,
    check_submodular,
    greedy,
    noisy_meta,
    read_edgelist,
)
from nips25_submodular.cli import main

W = jnp.arange(1.0, 9.0)


def concave_of_modular(mask):
    """sqrt(sum_{i in S} w_i): monotone submodular."""
    return jnp.sqrt(jnp.sum(jnp.where(mask, W, 0.0)))


def test_callable_set_function_values_gains_and_algorithms():
    """A wrapped callable gives the callable's values and exact difference gains, greedy on it takes the top
    weights (as it must on sqrt(modular)), and a persistent oracle wraps it (noisy_meta only sees SetFunctions)."""
    f = CallableSetFunction(concave_of_modular, 8)
    mask = jnp.array([True, False, True, False, False, False, False, True])
    assert float(f(mask)) == pytest.approx(math.sqrt(1 + 3 + 8))
    gains = np.asarray(f.gains(mask))
    expect = [0.0 if mask[i] else math.sqrt(12 + float(W[i])) - math.sqrt(12) for i in range(8)]
    np.testing.assert_allclose(gains, expect, rtol=1e-5, atol=1e-6)
    assert sorted(np.asarray(greedy(f, Uniform(8, 3)).order).tolist()) == [5, 6, 7]
    oracle = PersistentNoisyOracle(f, sigma=0.1, key=jax.random.key(0))
    assert float(oracle(mask)) == float(oracle(mask)) != float(f(mask))


@pytest.mark.parametrize(
    ("fn", "n", "error", "match"),
    [
        (3.0, 4, TypeError, "fn must be callable"),
        (concave_of_modular, 0, ValueError, "n must be >= 1"),
        (lambda m: m * 1.0, 4, ValueError, "fn must return a scalar"),
        (lambda m: jnp.nan * jnp.sum(m), 4, ValueError, "fn must return finite values"),
        (lambda m: float(np.asarray(m).sum()), 4, TypeError, "fn could not be traced"),
    ],
)
def test_callable_set_function_rejects_bad_callables(fn, n, error, match):
    with pytest.raises(error, match=match):
        CallableSetFunction(fn, n)


def test_non_set_function_error_says_how_to_wrap():
    with pytest.raises(TypeError, match=r"f must be a SetFunction, got function; wrap .*CallableSetFunction"):
        greedy(concave_of_modular, Uniform(8, 2))
    with pytest.raises(TypeError, match="oracle must be a SetFunction"):
        noisy_meta(concave_of_modular, Uniform(8, 2), "greedy", key=jax.random.key(0), monotone=True)


def test_check_submodular_passes_submodular_and_gives_counterexamples():
    """Submodular functions pass; a supermodular one and a non-monotone one (when monotone is asked) fail with a
    counterexample naming f, and the counterexample really violates the inequality."""
    check_submodular(CallableSetFunction(concave_of_modular, 8), key=jax.random.key(0), monotone=True)
    square = CallableSetFunction(lambda m: jnp.sum(m).astype(float) ** 2, 8)
    with pytest.raises(ValueError, match=r"f is not submodular: f\(A\+i\)-f\(A\) = .* < f\(B\+i\)-f\(B\)") as info:
        check_submodular(square, key=jax.random.key(0))
    msg = str(info.value)
    a, b = (len(re.findall(r"\d+", re.search(rf"{s}=\[([^\]]*)\]", msg).group(1))) for s in ("A", "B"))
    assert (a + 1) ** 2 - a**2 < (b + 1) ** 2 - b**2
    with pytest.raises(ValueError, match="f is not monotone"):  # the cut passes the submodular half first
        check_submodular(GraphCut(np.ones((6, 6))), key=jax.random.key(0), monotone=True)


def test_read_edgelist_and_its_errors(tmp_path):
    """The edge-list reader keeps names in order of appearance, default weight 1, skips comments and self-loops, and
    names the file and line for every malformed line."""
    good = tmp_path / "g.txt"
    good.write_text("# my graph\na b 2\nb,c\n\nc d 1.5\nd d 7\nd a\n")
    inst = read_edgelist(good, exact_opt=True)
    assert inst.nodes == ("a", "b", "c", "d") and inst.total_weight == 5.5
    assert float(inst.f(jnp.array([True, False, True, False]))) == 5.5 == inst.opt  # the 4-cycle is bipartite
    assert read_edgelist(good).opt is None
    cases = {
        "a b x\n": "line 1: weight must be a number",
        "a b 1\nb c -1\n": "line 2: weight must be finite and non-negative",
        "a b nan\n": "line 1: weight must be finite",
        "a b\nb a\n": "line 2: edge b a is repeated",
        "a b c d\n": "line 1: expected 'u v' or 'u v weight'",
        "# nothing\n": "no edges",
    }
    for k, (text, match) in enumerate(cases.items()):
        path = tmp_path / f"bad{k}.txt"
        path.write_text(text)
        with pytest.raises(ValueError, match=f"bad{k}.txt.*{match}"):
            read_edgelist(path)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_edgelist(tmp_path / "missing.txt")


def test_cli_run_on_own_edgelist(tmp_path, capsys):
    """`run --edgelist PATH` runs on the user's graph and reports its size and exact optimum; errors exit 2."""
    path = tmp_path / "ring.txt"
    path.write_text("".join(f"v{i} v{(i + 1) % 6}\n" for i in range(6)))
    assert main(["run", "--edgelist", str(path), "--method", "naive", "--seeds", "2", "--exact-opt", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 6 and out["opt"] == 6.0 and 0 < out["mean_cut"]["naive"] <= 6.0
    for argv in (
        ["--edgelist", str(tmp_path / "missing.txt")],
        ["--edgelist", str(path), "--method", "meta"],  # 6 nodes <= h = 8
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", *argv, "-q"])
        assert exit_info.value.code == 2
