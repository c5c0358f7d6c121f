"""The prompt a model sees, the answer format ``Answer: A, C``, and a robust parser of free-form answers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from nips25_commono.example import _NONE_TEXTS, MAX_OPTIONS, Example

__all__ = ["CONTROL_TEMPLATE", "DEFAULT_TEMPLATE", "format_answer", "format_prompt", "parse_answer"]

DEFAULT_TEMPLATE = (
    "You are shown two images of two different scenes.\n"
    "Which of the following objects appear in both scenes?\n"
    "{options}\n"
    "Select every option that applies; if no object appears in both scenes, select only the option "
    '"{none}".\n'
    'Reply in the form "Answer: A, C".'
)
CONTROL_TEMPLATE = (
    "You are shown an image of a scene.\n"
    "Which of the following objects appear in the image?\n"
    "{options}\n"
    'Select every option that applies; if none of them appears, select only the option "{none}".\n'
    'Reply in the form "Answer: A, C".'
)
_ANSWER_TAG = re.compile(r"answers?\s*(?:is|are)?\s*[:：]", re.IGNORECASE)
_LETTER_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-Za-z])[).:]?(?![A-Za-z0-9'’])")
_UPPER_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-Z])[).:]?(?![A-Za-z0-9'’])")
_PROSE_WORD = re.compile(r"\s+(?!(?:and|or|as|is|are)\b)[a-z]")
_NONE_WORDS = re.compile(r"\b(none|no objects?|nothing)\b", re.IGNORECASE)


def format_prompt(example: Example, *, template: str | None = None) -> str:
    """The text prompt of ``example``: the question and the lettered options, one per line.

    Args:
        example: the question.
        template: a format string with the fields ``{options}`` (the lettered list) and ``{none}`` (the None
            option's text); defaults to :data:`DEFAULT_TEMPLATE` (two scenes) or :data:`CONTROL_TEMPLATE` (control).

    Returns:
        The prompt, e.g. ``"... \\nA. red apple\\nB. No objects are in common\\n..."``.

    Raises:
        TypeError: if ``example`` is not an :class:`Example`.
        ValueError: if ``template`` lacks the ``{options}`` field or has other fields.

    References:
        Ross et al., NeurIPS 2025, Sec. 3: alphabetised options and the answer form ``Answer: A, C``. The paper's
        exact wording was not available to us; this template is ours.
    """
    if not isinstance(example, Example):
        raise TypeError(f"example must be an Example, got {type(example).__name__}")
    if template is None:
        template = DEFAULT_TEMPLATE if example.task == "common" else CONTROL_TEMPLATE
    if not isinstance(template, str) or "{options}" not in template:
        raise ValueError("template must be a string holding the field {options}")
    listing = "\n".join(f"{letter}. {text}" for letter, text in zip(example.letters, example.options))
    try:
        return template.format(options=listing, none=example.options[example.none_index])
    except (KeyError, IndexError) as err:
        raise ValueError(f"template may only use the fields {{options}} and {{none}}: {err}") from err


def format_answer(indices: Iterable[int]) -> str:
    """``Answer: A, C`` for the option indices ``{0, 2}`` (sorted, de-duplicated).

    Raises:
        ValueError: if ``indices`` is empty or holds an index outside ``[0, 26)``.
    """
    idx = sorted({int(i) for i in indices})
    if not idx:
        raise ValueError("indices must not be empty")
    if idx[0] < 0 or idx[-1] >= MAX_OPTIONS:
        raise ValueError(f"indices must lie in [0, {MAX_OPTIONS}), got {idx}")
    return "Answer: " + ", ".join(chr(ord("A") + i) for i in idx)


def parse_answer(
    text: str,
    options: int | Sequence[str],
    *,
    out_of_range: Literal["raise", "ignore"] = "raise",
) -> frozenset[int]:
    """Parse a model's free-form answer into a set of option indices.

    Rules, in order:

    1. If the text holds ``Answer:`` (any case; also ``answers are:``), only what follows the last such tag is read,
       and single letters count in either case (``"Answer: a, C ,c"`` gives ``{0, 2}``). Without a tag, only
       upper-case single letters count (so the article "a" in prose is not read as option A), or letters in
       parentheses like ``(b)``.
    2. Letters are separated by anything that is not a letter or digit: commas, ``and``, ``&``, spaces, new lines.
    3. A letter followed by a lower-case word ("A red apple", "I think") is prose, not an option (with or
       without a tag). Without a tag, other letters beyond the options are ignored; after a tag they are an
       error of the reply (``out_of_range``).
    4. If no letter is found and the option texts are given, option texts found in the answer are used, longest
       first, case-insensitive, on word boundaries; ``"none"``, ``"no objects"`` or ``"nothing"`` alone select the
       None option.

    Args:
        text: the model's reply.
        options: the number of options, or the option texts (enables rule 3).
        out_of_range: what to do with a letter beyond the options: ``"raise"`` a ``ValueError`` or ``"ignore"`` it.

    Returns:
        The selected option indices; empty when nothing could be read (scored as wrong).

    Raises:
        TypeError: if ``text`` is not a string or ``options`` is neither an int nor a sequence of strings.
        ValueError: if the number of options is outside ``[1, 26]``, or a letter is out of range and
            ``out_of_range="raise"``.

    Example:
        >>> sorted(parse_answer("Answer: a, C ,c", 4))
        [0, 2]
        >>> sorted(parse_answer("I see A and C.", 4))
        [0, 2]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if isinstance(options, bool) or not isinstance(options, (int, Sequence)) or isinstance(options, str):
        raise TypeError("options must be the number of options or a sequence of option texts")
    if out_of_range not in ("raise", "ignore"):
        raise ValueError(f"out_of_range must be 'raise' or 'ignore', got {out_of_range!r}")
    texts: Sequence[str] | None = None
    if isinstance(options, int):
        n = options
    else:
        texts = list(options)
        if any(not isinstance(t, str) for t in texts):
            raise TypeError("options must be the number of options or a sequence of option texts")
        n = len(texts)
    if not 1 <= n <= MAX_OPTIONS:
        raise ValueError(f"options must number between 1 and {MAX_OPTIONS}, got {n}")
    cleaned = text.replace("*", " ").replace("`", " ").replace("_", " ")
    tags = list(_ANSWER_TAG.finditer(cleaned))
    segment = cleaned[tags[-1].end() :] if tags else cleaned
    pattern = _LETTER_TOKEN if tags else _UPPER_TOKEN
    found: set[int] = set()
    for match in pattern.finditer(segment):
        idx = ord(match.group(1).upper()) - ord("A")
        if _PROSE_WORD.match(segment, match.end()):
            continue  # "A red apple", "I think": an article or pronoun, not an option
        if idx >= n:
            if out_of_range == "raise" and tags:
                raise ValueError(f"text selects option {match.group(1).upper()!r}, beyond the {n} options")
            continue
        found.add(idx)
    if not tags:
        for match in re.finditer(r"\(([a-z])\)", segment):
            idx = ord(match.group(1).upper()) - ord("A")
            if idx < n:
                found.add(idx)
    if found or texts is None:
        return frozenset(found)
    return _parse_option_texts(segment, texts)


def _parse_option_texts(segment: str, texts: Sequence[str]) -> frozenset[int]:
    lowered = " " + re.sub(r"\s+", " ", segment.lower()) + " "
    none_idx = [i for i, t in enumerate(texts) if t.strip().lower() in _NONE_TEXTS]
    found: set[int] = set()
    for i in sorted(range(len(texts)), key=lambda j: -len(texts[j])):
        needle = re.escape(texts[i].strip().lower())
        match = re.search(rf"(?<![a-z0-9]){needle}(?![a-z0-9])", lowered)
        if match:
            found.add(i)
            lowered = lowered[: match.start()] + " " * (match.end() - match.start()) + lowered[match.end() :]
    if not found and none_idx and _NONE_WORDS.search(lowered):
        found.add(none_idx[0])
    return frozenset(found)
