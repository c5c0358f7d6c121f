import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nips25_shared import seed_everything
from nips25_shared.seeds import jax_key


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_same_seed_same_numbers(seed):
    """The returned generator and the global states replay exactly for the same seed."""
    a = seed_everything(seed)
    xs = (a.normal(size=4), np.random.rand(3), random.random())
    b = seed_everything(seed)
    ys = (b.normal(size=4), np.random.rand(3), random.random())
    np.testing.assert_array_equal(xs[0], ys[0])
    np.testing.assert_array_equal(xs[1], ys[1])
    assert xs[2] == ys[2]


def test_generator_matches_default_rng():
    """seed_everything(s) returns exactly numpy.random.default_rng(s)'s stream."""
    np.testing.assert_array_equal(
        seed_everything(7).integers(0, 1000, 10), np.random.default_rng(7).integers(0, 1000, 10)
    )


def test_different_seeds_differ():
    assert not np.array_equal(seed_everything(1).normal(size=8), seed_everything(2).normal(size=8))


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "3", True, None])
def test_bad_seed_is_rejected(bad):
    with pytest.raises((TypeError, ValueError), match="seed"):
        seed_everything(bad)


def test_jax_key_without_or_with_jax():
    pytest.importorskip("jax")
    import jax

    assert jax.random.key_data(jax_key(3)).tolist() == jax.random.key_data(jax.random.key(3)).tolist()
