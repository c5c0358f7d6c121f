"""The released Common-O files from a local path (parquet, explicit column mapping) and JSONL exports.

The benchmark is published as parquet (Hugging Face ``facebook/Common-O``, MIT, about 383 MB) with a ``main`` and a
``challenge`` (Complex) split. :class:`ColumnMap` names the columns explicitly; its defaults are the released
files' column names (read from the dataset card's ``dataset_info``), while the encoding of the ``choices`` and
``answer`` strings was not seen, so both a JSON / Python list string and a list are read. :func:`write_common_o`
writes that layout. Nothing is downloaded.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from nips25_commono.example import _NONE_TEXTS, NONE_OPTION, Example
from nips25_commono.prompt import format_prompt, parse_answer

__all__ = [
    "ColumnMap",
    "load_common_o",
    "load_predictions",
    "normalize_option_text",
    "save_predictions",
    "write_common_o",
]

SUBSETS = {"main": ("main", "common-o", "commono"), "complex": ("challenge", "complex")}


@dataclass(frozen=True)
class ColumnMap:
    """Which parquet column holds which field of a question.

    Attributes:
        image_1, image_2: the two scenes; HF image structs ``{"bytes", "path"}`` or raw encoded bytes.
        options: option texts: a list, or a string holding a JSON / Python list (the released files store
            ``choices`` as a string).
        answer: the ground truth: a list of option texts, a list of letters, or a string such as ``"A, C"``.
        uid: a question identifier (optional: row number when absent from the file).
        n_objects: objects per scene (optional, used by the breakdowns; the released files count each scene
            separately, the default reads scene 1's count).

    The defaults are the column names of the released ``facebook/Common-O`` parquet files (``image_1``,
    ``image_2``, ``choices``, ``answer``, ``num_objects_image_1``; the dataset card's ``dataset_info``); the
    files have no id column, so ``uid`` falls back to ``<file>-<row>``.
    """

    image_1: str = "image_1"
    image_2: str = "image_2"
    options: str = "choices"
    answer: str = "answer"
    uid: str | None = "id"
    n_objects: str | None = "num_objects_image_1"

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"ColumnMap.{name} must be a non-empty column name, got {value!r}")


def _decode_image(value: Any, where: str) -> Image.Image:
    data = value.get("bytes") if isinstance(value, dict) else value
    if isinstance(value, dict) and data is None and value.get("path"):
        data = Path(value["path"]).read_bytes()
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"{where}: expected encoded image bytes or an image struct, got {type(value).__name__}")
    try:
        return Image.open(io.BytesIO(data)).convert("RGB")
    except OSError as err:
        raise ValueError(f"{where}: cannot decode the image ({err})") from err


def _option_list(value: Any, where: str) -> list[str]:
    """Option texts from a list or from a string holding a JSON / Python list literal."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        parsed: Any = None
        try:
            parsed = json.loads(text)
        except ValueError:
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                parsed = None
        if not isinstance(parsed, (list, tuple)):
            raise ValueError(f"{where}: options string {value[:80]!r} is not a JSON or Python list of option texts")
        value = parsed
    if not isinstance(value, Iterable):
        raise ValueError(f"{where}: options must be a list of texts, got {type(value).__name__}")
    return [str(o) for o in value]


def normalize_option_text(text: str) -> str:
    """The form in which an answer text is compared with the option texts.

    Unicode NFKC, case folded, surrounding white space, quotes and one trailing period removed, inner white space
    collapsed to one space: ``"  Red  Apple." -> "red apple"``. Nothing else (no stemming, no synonym matching).

    Example:
        >>> normalize_option_text('  "Red  Apple." ')
        'red apple'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = re.sub(r"\s+", " ", folded).strip().strip("\"'").strip()
    return folded[:-1].rstrip() if folded.endswith(".") else folded


_LETTER = re.compile(r"^\(?([A-Za-z])\)?$")


def _match_option(text: str, options: Sequence[str], where: str) -> int:
    text = text.strip()
    key = normalize_option_text(text)
    hits = [i for i, o in enumerate(options) if normalize_option_text(o) == key]
    if len(hits) > 1:
        raise ValueError(f"{where}: answer text {text!r} matches more than one option ({hits})")
    if not hits:
        raise ValueError(f"{where}: answer text {text!r} matches no option (options: {list(options)})")
    return hits[0]


def _letters(items: Sequence[str], options: Sequence[str], where: str) -> frozenset[int] | None:
    """Option indices when every item is a lone option letter (``A``, ``(b)``), else ``None``."""
    matches = [_LETTER.match(item.strip()) for item in items]
    if not items or any(m is None for m in matches):
        return None
    texts = {normalize_option_text(o) for o in options}
    out = set()
    for item, m in zip(items, matches):
        assert m is not None
        if normalize_option_text(item) in texts:
            raise ValueError(f"{where}: answer item {item!r} is both an option letter and an option text")
        idx = ord(m.group(1).upper()) - ord("A")
        if idx >= len(options):
            raise ValueError(f"{where}: answer letter {item.strip()!r} is beyond the {len(options)} options")
        out.add(idx)
    return frozenset(out)


def _texts_from_string(value: str, options: Sequence[str], where: str) -> frozenset[int]:
    """Option indices of a comma-separated string of option texts (an option text may itself hold commas)."""
    parts = value.split(",")
    found: set[int] = set()
    i = 0
    while i < len(parts):
        for j in range(len(parts), i, -1):  # longest run of parts that is one option text
            candidate = ",".join(parts[i:j])
            try:
                found.add(_match_option(candidate, options, where))
            except ValueError:
                if j == i + 1:
                    raise
                continue
            i = j
            break
    return frozenset(found)


def _answer_indices(value: Any, options: Sequence[str], where: str) -> frozenset[int]:
    """Ground-truth option indices of one row's answer field, read exactly (see :func:`load_common_o`)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            value = _option_list(text, where)
        else:
            text = re.sub(r"^\s*answers?\s*:\s*", "", text, flags=re.I)
            letters = _letters(text.split(","), options, where)
            return letters if letters is not None else _texts_from_string(text, options, where)
    if isinstance(value, Iterable):
        items = [str(item) for item in value]
        if not items:
            raise ValueError(f"{where}: empty answer list")
        letters = _letters(items, options, where)
        return letters if letters is not None else frozenset(_match_option(t, options, where) for t in items)
    raise ValueError(f"{where}: answer must be a string or a list, got {type(value).__name__}")


def load_common_o(
    path: str | Path,
    *,
    subset: str = "main",
    columns: ColumnMap | None = None,
    limit: int | None = None,
) -> list[Example]:
    """Load Common-O questions from a local parquet file or a directory of parquet files.

    A directory is searched recursively for ``*.parquet`` files whose path names the subset (``main`` /
    ``common-o`` for ``"main"``, ``challenge`` / ``complex`` for ``"complex"``); a file is read as given. When the
    options lack a None option, :data:`NONE_OPTION` is appended (and an empty answer means None).

    Args:
        path: a ``.parquet`` file or a directory (e.g. a local clone of the HF dataset).
        subset: ``"main"`` (Common-O) or ``"complex"`` (Common-O Complex, the ``challenge`` files).
        columns: the column mapping; :class:`ColumnMap` defaults when ``None``.
        limit: read at most this many questions.

    Returns:
        The questions, ``meta`` holding ``subset`` and ``n_objects`` when the file has it.

    Raises:
        FileNotFoundError: if ``path`` does not exist or holds no parquet file for the subset.
        ValueError: if ``subset`` or ``limit`` is out of range, a file is not parquet, the files hold no rows, a
            mapped column is missing, or a row is malformed (the message names the file, row and field; an object
            count must be an integer >= 0, never NaN).
    """
    import pyarrow.parquet as pq

    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {sorted(SUBSETS)}, got {subset!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be None or an int >= 1, got {limit!r}")
    cols = columns if columns is not None else ColumnMap()
    if not isinstance(cols, ColumnMap):
        raise TypeError(f"columns must be a ColumnMap, got {type(cols).__name__}")
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"path: {root} does not exist (download the Common-O parquet files yourself)")
    if root.is_file():
        files = [root]
    else:
        files = sorted(
            f for f in root.rglob("*.parquet") if any(k in str(f.relative_to(root)).lower() for k in SUBSETS[subset])
        )
    if not files:
        raise FileNotFoundError(f"path: no parquet file for subset {subset!r} under {root}")
    examples: list[Example] = []
    for file in files:
        try:
            table = pq.read_table(file)
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"path: {file} is not a readable parquet file ({err})") from err
        needed = [cols.image_1, cols.image_2, cols.options, cols.answer]
        missing = [c for c in needed if c not in table.column_names]
        if missing:
            raise ValueError(f"{file.name}: columns {missing} not found (has {table.column_names}); pass a ColumnMap")
        rows = table.to_pylist()
        for r, row in enumerate(rows):
            where = f"{file.name} row {r}"
            options = _option_list(row[cols.options], f"{where} field {cols.options!r}")
            if not options:
                raise ValueError(f"{where}: empty options")
            if not any(o.strip().lower() in _NONE_TEXTS for o in options):
                options.append(NONE_OPTION)
            raw_answer = row[cols.answer]
            if raw_answer is None or (isinstance(raw_answer, (str, list)) and not str(raw_answer).strip("[] ")):
                none = next(i for i, o in enumerate(options) if o.strip().lower() in _NONE_TEXTS)
                answer = frozenset({none})  # an empty answer means nothing in common
            else:
                answer = _answer_indices(raw_answer, options, f"{where} field {cols.answer!r}")
            n_field = f"{where} field {cols.n_objects!r}"
            n_obj = _object_count(row.get(cols.n_objects), n_field) if cols.n_objects else None
            uid = row.get(cols.uid) if cols.uid else None
            examples.append(
                Example(
                    images=(_decode_image(row[cols.image_1], where), _decode_image(row[cols.image_2], where)),
                    options=tuple(options),
                    answer=answer,
                    meta={"subset": subset, "n_objects": n_obj, "file": file.name},
                    uid=str(uid) if uid is not None else f"{file.stem}-{r}",
                )
            )
            if limit is not None and len(examples) >= limit:
                return examples
    if not examples:
        raise ValueError(f"path: {root} holds no questions (its parquet files for subset {subset!r} have 0 rows)")
    return examples


def _object_count(value: Any, where: str) -> int | None:
    """An object count read exactly: ``None`` stays ``None``; an int-valued number or digit string, else raise."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where}: expected an object count (an integer >= 0), got {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value) and float(value).is_integer() and value >= 0:
        return int(value)
    raise ValueError(f"{where}: expected an object count (an integer >= 0), got {value!r}")


def _encode(image: Image.Image) -> dict[str, Any]:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def write_common_o(examples: Sequence[Example], path: str | Path, *, columns: ColumnMap | None = None) -> Path:
    """Write two-scene questions as a parquet file in the layout :func:`load_common_o` reads.

    Images are PNG-encoded HF image structs; the answer is stored as a list of option texts.

    Raises:
        ValueError: if ``examples`` is empty or holds a control (single-image) question.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not examples:
        raise ValueError("examples must not be empty")
    cols = columns if columns is not None else ColumnMap()
    records: dict[str, list[Any]] = {cols.image_1: [], cols.image_2: [], cols.options: [], cols.answer: []}
    if cols.uid:
        records[cols.uid] = []
    if cols.n_objects:
        records[cols.n_objects] = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, Example) or ex.task != "common":
            raise ValueError(f"examples[{i}] must be a two-scene Example")
        records[cols.image_1].append(_encode(ex.images[0]))
        records[cols.image_2].append(_encode(ex.images[1]))
        records[cols.options].append(list(ex.options))
        records[cols.answer].append([ex.options[a] for a in sorted(ex.answer)])
        if cols.uid:
            records[cols.uid].append(ex.uid)
        if cols.n_objects:
            n = ex.meta.get("n_objects")
            records[cols.n_objects].append(None if n is None else int(n))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(records), out)
    return out


def save_predictions(
    path: str | Path, examples: Sequence[Example], replies: Sequence[str], *, include_prompt: bool = False
) -> Path:
    """Write one JSON line per question: ``id``, ``response`` (the raw reply), ``prediction`` (parsed letters),
    ``answer`` (ground-truth letters), ``options`` and optionally the ``prompt`` (lmms-eval style records).

    Raises:
        ValueError: if the lengths differ or are zero.
        TypeError: if a reply is not a string.
    """
    if len(examples) == 0 or len(examples) != len(replies):
        raise ValueError(f"examples ({len(examples)}) and replies ({len(replies)}) must be non-empty and equal")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for ex, reply in zip(examples, replies):
            if not isinstance(reply, str):
                raise TypeError(f"replies must be strings, got {type(reply).__name__}")
            pred = parse_answer(reply, ex.options, out_of_range="ignore")
            record: dict[str, Any] = {
                "id": ex.uid,
                "response": reply,
                "prediction": [ex.letters[i] for i in sorted(pred)],
                "answer": [ex.letters[i] for i in sorted(ex.answer)],
                "options": list(ex.options),
            }
            if include_prompt:
                record["prompt"] = format_prompt(ex)
            fh.write(json.dumps(record) + "\n")
    return out


def load_predictions(path: str | Path) -> dict[str, str]:
    """Read ``{id: response}`` from a JSONL file with ``id`` and ``response`` fields (one object per line).

    Raises:
        FileNotFoundError: if the file does not exist.
        ValueError: if the file is not UTF-8 text, a line is not a JSON object with a string ``response`` and an
            ``id``, or an id repeats.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no predictions file {p}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"path: {p} is not a UTF-8 JSONL file ({err.reason} at byte {err.start})") from err
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{p.name} line {n}: not JSON ({err})") from err
        if not isinstance(rec, dict) or "id" not in rec or not isinstance(rec.get("response"), str):
            raise ValueError(f"{p.name} line {n}: expected an object with 'id' and a string 'response'")
        key = str(rec["id"])
        if key in out:
            raise ValueError(f"{p.name} line {n}: id {key!r} repeats")
        out[key] = rec["response"]
    if not out:
        raise ValueError(f"{p.name}: no predictions")
    return out
