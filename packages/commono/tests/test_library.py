"""Object libraries: similarity relation and the real emoji pictures (skipped without the Debian font)."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_commono import DEFAULT_EMOJI_FONT, EmojiLibrary, ObjectLibrary

needs_font = pytest.mark.skipif(not DEFAULT_EMOJI_FONT.is_file(), reason="fonts-noto-color-emoji not installed")


def test_similarity_is_symmetric_nearest_neighbours(library) -> None:  # type: ignore[no-untyped-def]
    sim = library.similarity
    assert (sim == sim.T).all() and not sim.diagonal().any()
    f = library.features
    for i in range(0, len(library), 17):
        d = ((f - f[i]) ** 2).sum(1)
        d[i] = np.inf
        assert int(np.argmin(d)) in library.similar(i)  # the nearest neighbour always counts as similar
    assert all(len(library.similar(i)) >= library.n_similar for i in range(len(library)))


@needs_font
def test_emoji_red_apple_looks_like_tomato_not_banana() -> None:
    """The paper's example group: a red apple's nearest picture among these is the tomato."""
    names = ["red apple", "green apple", "tomato", "banana", "hammer", "rocket", "snowflake", "books"]
    lib = EmojiLibrary(include=names, n_similar=1)
    assert sorted(lib.names) == sorted(names)
    similar = {lib.names[j] for j in lib.similar(lib.index("red apple"))}
    assert "tomato" in similar and "banana" not in similar
    assert lib.glyphs.dtype == np.uint8 and lib.glyphs.shape[1:] == (64, 64, 4)


def test_library_rejects_bad_input() -> None:
    glyphs = np.zeros((2, 8, 8, 4), dtype=np.uint8)
    glyphs[..., 3] = 255
    with pytest.raises(ValueError, match="unique"):
        ObjectLibrary(["a", "a"], glyphs, n_similar=1)
    with pytest.raises(ValueError, match="shape"):
        ObjectLibrary(["a", "b"], glyphs[..., :3], n_similar=1)
    with pytest.raises(ValueError, match="uint8"):
        ObjectLibrary(["a", "b"], glyphs.astype(float), n_similar=1)
    with pytest.raises(ValueError, match="n_similar"):
        ObjectLibrary(["a", "b"], glyphs, n_similar=2)
    empty = glyphs.copy()
    empty[1, ..., 3] = 0
    with pytest.raises(ValueError, match="alpha"):
        ObjectLibrary(["a", "b"], empty, n_similar=1)
    with pytest.raises(FileNotFoundError, match="fonts-noto-color-emoji"):
        EmojiLibrary("/nonexistent/font.ttf")
