"""Known-answer and property tests of the rank allocation (GoRA, Sec. 3.2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_gora import allocate_ranks, lora_budget, realised_budget

SHAPES = {"a": (4, 4), "b": (4, 4), "c": (8, 8)}


def test_hand_case():
    """B = 2 (8 + 8 + 16) = 64; a = (1, 3, 4)/8; floor(round(B a_i)/(m+n)) = (8//8, 24//8, 32//16) = (1, 3, 2)."""
    imp = {"a": 1.0, "b": 3.0, "c": 4.0}
    assert lora_budget(SHAPES, r_ref=2) == 64
    ranks = allocate_ranks(SHAPES, imp, r_ref=2, r_min=1, r_max=99)
    assert ranks == {"a": 1, "b": 3, "c": 2}
    clipped = allocate_ranks(SHAPES, imp, r_ref=2, r_min=2, r_max=99)
    assert clipped == {"a": 2, "b": 3, "c": 2}
    assert realised_budget(SHAPES, clipped) == 72  # no renormalisation after clipping (official code)


def test_equal_importances_and_shapes_give_r_ref():
    shapes = {f"l{i}": (32, 32) for i in range(6)}
    assert set(allocate_ranks(shapes, dict.fromkeys(shapes, 0.3), r_ref=8, r_min=1, r_max=32).values()) == {8}


def test_r_min_equal_r_max_equal_r_ref_is_plain_lora():
    shapes = {"x": (16, 32), "y": (32, 16), "z": (24, 24)}
    ranks = allocate_ranks(shapes, {"x": 1.0, "y": 100.0, "z": 0.0}, r_ref=4, r_min=4, r_max=4)
    assert ranks == dict.fromkeys(shapes, 4)
    assert realised_budget(shapes, ranks) == lora_budget(shapes, r_ref=4)


def test_renormalize_keeps_budget_and_bounds():
    imp = {"a": 1.0, "b": 3.0, "c": 4.0}
    ranks = allocate_ranks(SHAPES, imp, r_ref=2, r_min=2, r_max=99, renormalize=True)
    assert realised_budget(SHAPES, ranks) <= lora_budget(SHAPES, r_ref=2)
    assert all(2 <= r <= 4 for r in ranks.values())


importances = st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=2, max_size=6)


@settings(max_examples=40, deadline=None)
@given(values=importances, power=st.integers(-20, 20), seed=st.integers(0, 10))
def test_invariant_to_scaling_and_equivariant_to_permutation(values, power, seed):
    """r(cI) = r(I) for c = 2^k (exact in floating point), and permuting layers permutes ranks."""
    import random

    shapes = {f"l{i}": (16 + 8 * (i % 3), 24) for i in range(len(values))}
    imp = dict(zip(shapes, values))
    ranks = allocate_ranks(shapes, imp, r_ref=4, r_min=1, r_max=16)
    scaled = allocate_ranks(shapes, {k: v * 2.0**power for k, v in imp.items()}, r_ref=4, r_min=1, r_max=16)
    assert scaled == ranks
    keys = list(shapes)
    random.Random(seed).shuffle(keys)
    permuted = allocate_ranks({k: shapes[k] for k in keys}, {k: imp[k] for k in keys}, r_ref=4, r_min=1, r_max=16)
    assert permuted == ranks
    assert all(1 <= r <= 16 for r in ranks.values())


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"r_min": 5, "r_max": 4}, "r_min"),
        ({"r_min": 0}, "r_min"),
        ({"r_ref": 0}, "r_ref"),
        ({"importances": {"a": 1.0, "b": 1.0}}, "importances"),
        ({"importances": {"a": 1.0, "b": -1.0, "c": 1.0}}, "importances"),
        ({"importances": {"a": 1.0, "b": float("nan"), "c": 1.0}}, "importances"),
        ({"importances": {"a": 0.0, "b": 0.0, "c": 0.0}}, "importances"),
        ({"shapes": {}}, "shapes"),
        ({"shapes": {"a": (4, 0), "b": (4, 4), "c": (8, 8)}}, "shapes"),
    ],
)
def test_allocate_ranks_rejects_bad_input(kwargs, word):
    args = {"shapes": SHAPES, "importances": {"a": 1.0, "b": 3.0, "c": 4.0}, "r_ref": 2, "r_min": 1, "r_max": 9}
    args.update(kwargs)
    shapes, imp = args.pop("shapes"), args.pop("importances")
    with pytest.raises(ValueError, match=word):
        allocate_ranks(shapes, imp, **args)


def test_allocate_ranks_names_a_non_numeric_importance():
    with pytest.raises(TypeError, match=r"importances\['b'\]"):
        allocate_ranks(SHAPES, {"a": 1.0, "b": "3", "c": 4.0}, r_ref=2, r_min=1, r_max=9)
