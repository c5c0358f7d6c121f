"""Every public entry point rejects bad input with an error that names the argument."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_commono import (
    NONE_OPTION,
    ColumnMap,
    Example,
    NoisyOracle,
    ObjectLibrary,
    RandomGuess,
    SceneConfig,
    SceneGenerator,
    TemplateMatcher,
    as_image,
    bootstrap_difference,
    control_example,
    crop_boxes,
    evaluate,
    format_answer,
    load_common_o,
    normalized_cross_correlation,
    parse_answer,
    save_predictions,
    score,
)
from nips25_commono.reproduce import ReproduceConfig, reproduce
from PIL import Image

IM = Image.new("RGB", (8, 8))


def test_example_rejects_malformed_questions() -> None:
    ok = {"images": (IM, IM), "options": ("a", NONE_OPTION), "answer": frozenset({0})}
    cases = [
        ({"images": (IM,)}, "images"),
        ({"options": ()}, "options"),
        ({"options": (*(f"o{i}" for i in range(26)), NONE_OPTION)}, "at most 26"),
        ({"options": ("a", "b")}, "None option"),
        ({"options": ("a", "A", NONE_OPTION)}, "unique"),
        ({"answer": frozenset({5})}, "answer"),
        ({"answer": frozenset()}, "answer"),
        ({"answer": frozenset({0, 1})}, "mix"),
        ({"task": "other"}, "task"),
    ]
    for change, match in cases:
        with pytest.raises(ValueError, match=match):
            Example(**{**ok, **change})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="images"):
        Example(**{**ok, "images": ("x", IM)})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="permutation"):
        Example(**ok).with_options_permuted([0, 0])  # type: ignore[arg-type]


def test_as_image_rejects_bad_arrays() -> None:
    with pytest.raises(ValueError, match="NaN"):
        as_image(np.full((4, 4, 3), np.nan))
    with pytest.raises(ValueError, match="shape"):
        as_image(np.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        as_image(np.full((4, 4, 3), 2.0))
    with pytest.raises(TypeError, match="image"):
        as_image([1, 2, 3])
    assert as_image(np.zeros((4, 5), dtype=np.uint8)).size == (5, 4)


@settings(max_examples=20, deadline=None)
@given(st.text(max_size=60), st.integers(1, 26))
def test_parse_answer_never_crashes_when_ignoring(text: str, n: int) -> None:
    got = parse_answer(text, n, out_of_range="ignore")
    assert all(0 <= i < n for i in got)


def test_prompt_functions_reject_bad_input() -> None:
    with pytest.raises(TypeError, match="text"):
        parse_answer(3, 4)  # type: ignore[arg-type]
    for n in (0, 27):
        with pytest.raises(ValueError, match="options"):
            parse_answer("A", n)
    with pytest.raises(TypeError, match="options"):
        parse_answer("A", "abc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="out_of_range"):
        parse_answer("A", 4, out_of_range="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="indices"):
        format_answer([])
    with pytest.raises(ValueError, match="indices"):
        format_answer([26])


def test_scoring_rejects_bad_input(examples) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="empty"):
        score([], [])
    with pytest.raises(ValueError, match="entries"):
        score(["A"], examples[:2])
    with pytest.raises(TypeError, match="predictions"):
        score("A", examples[:1])
    with pytest.raises(TypeError, match=r"predictions\[0\]"):
        score([3.5], examples[:1])
    with pytest.raises(ValueError, match=r"predictions\[0\]"):
        score([{99}], examples[:1])
    with pytest.raises(TypeError, match=r"examples\[0\]"):
        score(["A"], ["not an example"])
    with pytest.raises(TypeError, match="answer"):
        evaluate(object(), examples[:1])

    class Bad:
        def answer(self, example):  # type: ignore[no-untyped-def]
            return 1

    with pytest.raises(TypeError, match="string"):
        evaluate(Bad(), examples[:1])
    with pytest.raises(ValueError, match="examples"):
        evaluate(Bad(), [])
    with pytest.raises(ValueError, match="a must"):
        bootstrap_difference(np.array([]), np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_difference(np.array([np.nan]), np.ones(3))
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_difference(np.ones(3), np.ones(3), n_boot=5)
    with pytest.raises(ValueError, match="level"):
        bootstrap_difference(np.ones(3), np.ones(3), level=1.0)


def test_generator_rejects_bad_configuration(library) -> None:  # type: ignore[no-untyped-def]
    for kwargs, match in [
        ({"n_objects": (5, 3)}, "n_objects"),
        ({"n_objects": (3, 30)}, "n_objects"),
        ({"n_common": (4, None), "n_objects": (3, 7)}, "n_common"),
        ({"n_distractors": -1}, "n_distractors"),
        ({"canvas": 10}, "canvas"),
        ({"object_size": (0.9, 0.5)}, "object_size"),
        ({"background": "sky"}, "background"),
        ({"brightness": 0.7}, "brightness"),
    ]:
        with pytest.raises(ValueError, match=match):
            SceneConfig(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="library"):
        SceneGenerator("emoji")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown"):
        SceneGenerator(library, colour="red")
    glyphs = np.full((5, 8, 8, 4), 255, dtype=np.uint8)
    glyphs[:, 0, 0, :3] = np.arange(5)[:, None]
    small = ObjectLibrary([f"o{i}" for i in range(5)], glyphs, n_similar=1)
    with pytest.raises(ValueError, match="library has 5 objects"):
        SceneGenerator(small, n_objects=(3, 7))
    gen = SceneGenerator(library, canvas=100)
    with pytest.raises(ValueError, match="n must"):
        gen.examples(0)
    with pytest.raises(ValueError, match="index"):
        gen.object_sets(-1)
    with pytest.raises(ValueError, match="seed"):
        SceneGenerator(library, seed=-1)
    with pytest.raises(ValueError, match="objects"):
        gen.render([1, 1], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="which"):
        control_example(gen.example(0), which=2)
    with pytest.raises(ValueError, match="meta"):
        control_example(Example(images=(IM, IM), options=("a", NONE_OPTION), answer=frozenset({0})))


def test_models_and_matcher_reject_bad_hyper_parameters(library) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="p_miss"):
        NoisyOracle(p_miss=1.5)
    with pytest.raises(ValueError, match="p_false"):
        NoisyOracle(p_false=float("nan"))
    with pytest.raises(ValueError, match="p must"):
        RandomGuess(p=-0.1)
    with pytest.raises(TypeError, match="example"):
        NoisyOracle().answer("question")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sizes"):
        TemplateMatcher(library, sizes=(2,))
    with pytest.raises(ValueError, match="threshold"):
        TemplateMatcher(library, threshold=2.0)
    with pytest.raises(ValueError, match="downsample"):
        TemplateMatcher(library, downsample=0)
    with pytest.raises(TypeError, match="library"):
        TemplateMatcher(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="examples"):
        TemplateMatcher(library).calibrate([])
    with pytest.raises(ValueError, match="fit"):
        normalized_cross_correlation(np.zeros((4, 4, 3)), np.zeros((1, 5, 5, 3)))
    with pytest.raises(ValueError, match="finite"):
        normalized_cross_correlation(np.full((6, 6, 3), np.nan), np.zeros((1, 2, 2, 3)))
    with pytest.raises(ValueError, match="channels"):
        normalized_cross_correlation(np.zeros((6, 6, 3)), np.zeros((1, 2, 2, 1)))
    with pytest.raises(ValueError, match="overlap"):
        crop_boxes(10, 10, overlap=1.0)


def test_dataset_and_reproduce_reject_bad_input(tmp_path, examples) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="ColumnMap.options"):
        ColumnMap(options="")
    with pytest.raises(FileNotFoundError, match="path"):
        load_common_o(tmp_path / "missing")
    with pytest.raises(ValueError, match="subset"):
        load_common_o(tmp_path, subset="train")
    with pytest.raises(ValueError, match="limit"):
        load_common_o(tmp_path, limit=0)
    with pytest.raises(ValueError, match="replies"):
        save_predictions(tmp_path / "p.jsonl", examples[:2], ["A"])
    with pytest.raises(ValueError, match="n_main"):
        ReproduceConfig(n_main=1)
    with pytest.raises(ValueError, match="library"):
        ReproduceConfig(library="photos")
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)
