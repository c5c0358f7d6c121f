"""Parquet round trip in the assumed Common-O layout, explicit column mapping, JSONL predictions."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nips25_commono import (
    ColumnMap,
    Oracle,
    load_common_o,
    load_predictions,
    save_predictions,
    score,
    write_common_o,
)


def test_parquet_round_trip(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_common_o(examples[:5], tmp_path / "data" / "main-00000.parquet")
    back = load_common_o(tmp_path / "data", subset="main")
    assert len(back) == 5
    for a, b in zip(examples[:5], back):
        assert a.options == b.options and a.answer == b.answer and a.uid == b.uid
        assert a.images[0].tobytes() == b.images[0].tobytes()  # PNG is lossless
        assert b.meta["n_objects"] == a.meta["n_objects"]
    with pytest.raises(FileNotFoundError, match="complex"):
        load_common_o(tmp_path / "data", subset="complex")
    assert len(load_common_o(path, limit=2)) == 2


def test_column_map_and_letter_answers(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ex = examples[1]
    cols = ColumnMap(image_1="img_a", image_2="img_b", options="choices", answer="label", uid=None, n_objects=None)
    write_common_o([ex], tmp_path / "x.parquet", columns=cols)
    table = pq.read_table(tmp_path / "x.parquet").to_pylist()
    none_text = ex.options[ex.none_index]
    choices = [o for o in ex.options if o != none_text]  # a file without a None option
    truth = [ex.options[i] for i in sorted(ex.common)]
    table[0]["choices"] = choices
    table[0]["label"] = ", ".join(chr(ord("A") + choices.index(t)) for t in truth)  # letters, or "" for None
    pq.write_table(pa.Table.from_pylist(table), tmp_path / "y.parquet")
    (back,) = load_common_o(tmp_path / "y.parquet", columns=cols)
    assert back.options == (*choices, "No objects are in common")
    assert {back.options[i] for i in back.answer} == (set(truth) or {"No objects are in common"})
    with pytest.raises(ValueError, match="ColumnMap"):
        load_common_o(tmp_path / "x.parquet")


def test_predictions_jsonl_round_trip(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    replies = [Oracle().answer(ex) for ex in examples[:4]]
    path = save_predictions(tmp_path / "p.jsonl", examples[:4], replies, include_prompt=True)
    rec = json.loads(path.read_text().splitlines()[0])
    assert rec["prediction"] == rec["answer"] and "prompt" in rec
    back = load_predictions(path)
    assert score([back[ex.uid] for ex in examples[:4]], examples[:4]).accuracy == 1.0
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(ValueError, match="response"):
        load_predictions(tmp_path / "bad.jsonl")


def test_released_layout_string_choices(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The released files' layout: default column names, ``choices`` as a string-encoded list, text answers.

    Before the fix a string in the options column was iterated character by character (silently wrong options).
    """
    ex = examples[2]
    write_common_o([ex], tmp_path / "x.parquet")
    table = pq.read_table(tmp_path / "x.parquet").to_pylist()
    assert {"image_1", "image_2", "choices", "answer", "num_objects_image_1"} <= set(table[0])
    truth = [ex.options[i] for i in sorted(ex.answer)]
    table[0]["choices"] = json.dumps(list(ex.options))
    table[0]["answer"] = ", ".join(truth)
    pq.write_table(pa.Table.from_pylist(table), tmp_path / "json.parquet")
    table[0]["choices"] = repr(list(ex.options))  # a Python list literal
    pq.write_table(pa.Table.from_pylist(table), tmp_path / "repr.parquet")
    for name in ("json.parquet", "repr.parquet"):
        (back,) = load_common_o(tmp_path / name)
        assert back.options == ex.options and back.answer == ex.answer
    table[0]["choices"] = "apple, pear"
    pq.write_table(pa.Table.from_pylist(table), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="options string"):
        load_common_o(tmp_path / "bad.parquet")


def _released_row(image: dict, choices: list[str], answer: str) -> dict:  # type: ignore[type-arg]
    """One row in the released files' schema (dataset card): HF image structs, ``choices`` as a string-encoded
    list, ``answer`` as a string, object counts per scene."""
    return {
        "image_1": image,
        "image_2": image,
        "choices": json.dumps(choices),
        "answer": answer,
        "num_objects_image_1": 3,
        "num_objects_image_2": 3,
    }


CHOICES = ["a red apple", "vitamin C bottle", "key", "mug", "salt, pepper shaker", "No objects are in common"]


@pytest.mark.parametrize(
    ("answer", "truth"),
    [
        ("a red apple", {"a red apple"}),  # a lone "a": before the fix read as option A ("key" in the review's file)
        ("vitamin C bottle", {"vitamin C bottle"}),  # a lone "C": before the fix read as option C
        ("a red apple, vitamin C bottle", {"a red apple", "vitamin C bottle"}),
        ("Vitamin  C Bottle.", {"vitamin C bottle"}),  # normalisation: case, white space, a trailing period
        ("salt, pepper shaker, mug", {"salt, pepper shaker", "mug"}),  # an option text holding a comma
        ('["key", "mug"]', {"key", "mug"}),  # a string-encoded list of texts
        ("B, D", {"vitamin C bottle", "mug"}),  # a letter list
        ("Answer: b", {"vitamin C bottle"}),
        ("No objects are in common", {"No objects are in common"}),
    ],
)
def test_released_text_answers_load_exactly(examples, tmp_path, answer, truth) -> None:  # type: ignore[no-untyped-def]
    write_common_o([examples[0]], tmp_path / "seed.parquet")
    image = pq.read_table(tmp_path / "seed.parquet").to_pylist()[0]["image_1"]
    pq.write_table(pa.Table.from_pylist([_released_row(image, CHOICES, answer)]), tmp_path / "main.parquet")
    (back,) = load_common_o(tmp_path / "main.parquet")
    assert back.options == tuple(CHOICES)
    assert {back.options[i] for i in back.answer} == truth


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ("a green apple", "matches no option"),
        ("key, spoon", "'spoon' matches no option"),
        ("A, H", "letter 'H' is beyond the 6 options"),
        ('["key", "B"]', "matches no option"),  # letters only when every item is a letter
    ],
)
def test_unreadable_answers_raise_naming_row_and_field(examples, tmp_path, answer, match) -> None:  # type: ignore[no-untyped-def]
    write_common_o([examples[0]], tmp_path / "seed.parquet")
    image = pq.read_table(tmp_path / "seed.parquet").to_pylist()[0]["image_1"]
    rows = [_released_row(image, CHOICES, "key"), _released_row(image, CHOICES, answer)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "main.parquet")
    with pytest.raises(ValueError, match=match) as err:
        load_common_o(tmp_path / "main.parquet")
    assert "main.parquet row 1 field 'answer'" in str(err.value)


def test_an_answer_matching_two_options_raises(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    write_common_o([examples[0]], tmp_path / "seed.parquet")
    image = pq.read_table(tmp_path / "seed.parquet").to_pylist()[0]["image_1"]
    row = _released_row(image, ["Key", "key ", "mug"], "key")
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "main.parquet")
    with pytest.raises(ValueError, match="more than one option"):
        load_common_o(tmp_path / "main.parquet")


def _write_rows(examples, tmp_path, name, **override):  # type: ignore[no-untyped-def]
    """The generated fixture in the released layout, with some fields of every row replaced."""
    path = write_common_o(examples[:3], tmp_path / "src.parquet")
    rows = [dict(r, **override) for r in pq.read_table(path).to_pylist()]
    out = tmp_path / name
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out


@pytest.mark.parametrize(
    ("count", "match"),
    [
        ("many", r"row 0 field 'num_objects_image_1'.*'many'"),
        (float("nan"), r"row 0 field 'num_objects_image_1'.*nan"),
        (-1, r"row 0 field 'num_objects_image_1'.*-1"),
        (2.5, r"row 0 field 'num_objects_image_1'.*2.5"),
    ],
)
def test_bad_object_count_raises_naming_row_and_field(examples, tmp_path, count, match) -> None:  # type: ignore[no-untyped-def]
    path = _write_rows(examples, tmp_path, "bad.parquet", num_objects_image_1=count)
    with pytest.raises(ValueError, match=match):
        load_common_o(path)


def test_object_count_as_digit_string_or_integral_float_reads(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for count in ("5", 5.0):
        back = load_common_o(_write_rows(examples, tmp_path, "ok.parquet", num_objects_image_1=count))
        assert [ex.meta["n_objects"] for ex in back] == [5, 5, 5]


@pytest.mark.parametrize(
    ("content", "match"),
    [(b"", "not a readable parquet file"), (b"a,b\n1,2\n", "not a readable parquet file")],
)
def test_a_file_that_is_not_parquet_raises_naming_it(tmp_path, content, match) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "main.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"path: .*main\.csv is {match}"):
        load_common_o(path)


def test_a_parquet_file_with_no_rows_raises(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_common_o(examples[:2], tmp_path / "main.parquet")
    pq.write_table(pq.read_table(path).slice(0, 0), path)
    with pytest.raises(ValueError, match="holds no questions"):
        load_common_o(path)


def test_binary_predictions_file_raises_naming_it(examples, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_common_o(examples[:2], tmp_path / "main.parquet")
    with pytest.raises(ValueError, match=r"main.parquet is not a UTF-8 JSONL file"):
        load_predictions(path)
