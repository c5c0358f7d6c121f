"""The generator's ground truth is exact: intersection, swap invariance, ranges, determinism, control task."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_commono import Example, SceneGenerator, control_example
from nips25_commono.scene import GRID


def test_ground_truth_is_the_intersection_restricted_to_options(examples: list[Example]) -> None:
    for ex in examples:
        a, b = map(set, ex.meta["scene_objects"])
        opts = ex.meta["option_objects"]
        expected = {i for i, o in enumerate(opts) if o in a & b} or {opts.index(-1)}
        assert ex.answer == expected
        assert set(ex.meta["common"]) == a & b
        assert {o for o in opts if o >= 0} >= a & b  # every common object is an option


def test_placements_match_scene_objects(examples: list[Example]) -> None:
    for ex in examples:
        for k in (0, 1):
            placed = [p[0] for p in ex.meta["placements"][k]]
            assert placed == ex.meta["scene_objects"][k]
            for _, x, y, size in ex.meta["placements"][k]:
                assert x >= 0 and y >= 0 and x + size <= 100 and y + size <= 100


def test_ground_truth_invariant_to_swapping_the_scenes(examples: list[Example]) -> None:
    for ex in examples:
        swapped = Example(images=ex.images[::-1], options=ex.options, answer=ex.answer, meta=ex.meta)
        a, b = ex.meta["scene_objects"]
        opts = ex.meta["option_objects"]
        gt_swapped = {i for i, o in enumerate(opts) if o in set(b) & set(a)} or {opts.index(-1)}
        assert swapped.answer == gt_swapped == ex.answer


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(3, 7), (8, 16)]))
def test_object_counts_and_options_in_range(library, index: int, n_objects: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    gen = SceneGenerator(library, n_objects=n_objects, canvas=100, seed=1)
    sets = gen.object_sets(index)
    assert len(sets["a"]) == len(sets["b"])
    assert n_objects[0] <= len(sets["a"]) <= n_objects[1] <= GRID * GRID
    assert len(set(sets["a"])) == len(sets["a"]) and len(set(sets["b"])) == len(sets["b"])
    assert len(sets["option_objects"]) <= 26 and sets["option_objects"].count(-1) == 1


def test_same_seed_same_scenes(library) -> None:  # type: ignore[no-untyped-def]
    a = SceneGenerator(library, n_objects=(3, 5), canvas=100, seed=7).example(3)
    b = SceneGenerator(library, n_objects=(3, 5), canvas=100, seed=7).example(3)
    c = SceneGenerator(library, n_objects=(3, 5), canvas=100, seed=8).example(3)
    assert a.images[0].tobytes() == b.images[0].tobytes() and a.options == b.options and a.answer == b.answer
    assert a.images[0].tobytes() != c.images[0].tobytes()


def test_control_example_answers_the_single_image(examples: list[Example]) -> None:
    for ex in examples[:10]:
        for which in (0, 1):
            ctl = control_example(ex, which=which)
            scene = set(ex.meta["scene_objects"][which])
            expected = {i for i, o in enumerate(ex.meta["option_objects"]) if o in scene} or {ctl.none_index}
            assert ctl.task == "control" and len(ctl.images) == 1 and ctl.answer == expected
            assert ctl.images[0] is ex.images[which]


def test_similar_distractor_rate_controls_similar_presence(library) -> None:  # type: ignore[no-untyped-def]
    never = SceneGenerator(library, n_objects=(3, 4), canvas=100, similar_distractor_rate=0.0, seed=2)
    always = SceneGenerator(library, n_objects=(3, 4), canvas=100, similar_distractor_rate=1.0, seed=2)
    assert not any(never.object_sets(i)["similar_added"] for i in range(30))
    flags = [always.example(i).meta["similar_present"] for i in range(30)]
    assert np.mean(flags) > 0.9
    with pytest.raises(ValueError, match="similar_distractor_rate"):
        SceneGenerator(library, similar_distractor_rate=1.5)
