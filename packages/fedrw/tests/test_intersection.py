"""PSI primitive: known answers against Python sets, transcripts without plaintext, bad inputs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_fedrw import OpenMinedPSI, PlainOracle, canonicalize


def test_openmined_psi_equals_python_set_intersection_with_unicode_empty_and_disjoint():
    """The querier's PSI output is exactly {i : q[i] in a}, including non-ASCII items, empty and disjoint sets."""
    psi = OpenMinedPSI()
    q = [canonicalize(s) for s in ["Shall I compare thee", "to a summer’s day?", "naïve café", "x1", "日本語"]]
    a = [canonicalize(s) for s in ["日本語", "naïve café", "other", "Shall I compare thee"]]
    expected = sorted(i for i, x in enumerate(q) if x in set(a))
    assert psi.intersect(q, a).indices.tolist() == expected == [0, 2, 4]
    assert psi.intersect(q, [b"zz", b"yy"]).indices.tolist() == []
    assert psi.intersect([b"only"], []).indices.tolist() == []


@settings(max_examples=12, deadline=None)
@given(
    st.sets(st.text(min_size=1, max_size=8), max_size=12),
    st.sets(st.text(min_size=1, max_size=8), max_size=12),
)
def test_psi_agrees_with_plain_oracle(qs, as_):
    """OpenMined PSI and the plaintext oracle give the same indices on random Unicode sets."""
    q, a = [s.encode() for s in sorted(qs)], [s.encode() for s in sorted(as_)]
    assert OpenMinedPSI().intersect(q, a).indices.tolist() == PlainOracle().intersect(q, a).indices.tolist()


def test_psi_transcript_contains_no_plaintext_sample_bytes():
    """Serialised setup, request and response hold encrypted points only: no sample appears in them."""
    q = [f"querier secret line number {i}".encode() for i in range(30)]
    a = [f"answerer secret line number {i}".encode() for i in range(30)] + q[:5]
    run = OpenMinedPSI().intersect(q, a)
    blob = b"".join(run.messages)
    assert len(run.messages) == 3 and run.bytes_sent == len(blob) > 0
    assert not any(x in blob for x in q + a)
    assert run.indices.tolist() == [0, 1, 2, 3, 4]


def test_psi_rejects_bad_items_and_parameters():
    psi = OpenMinedPSI()
    with pytest.raises(TypeError, match="querier_items"):
        psi.intersect(["text"], [b"a"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="answerer_items"):
        psi.intersect([b"a"], [b"b", b"b"])
    with pytest.raises(TypeError, match="querier_items"):
        psi.intersect(b"abc", [b"a"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fpr"):
        OpenMinedPSI(fpr=0.0)
    with pytest.raises(ValueError, match="data_structure"):
        OpenMinedPSI(data_structure="tree")
    with pytest.raises(TypeError, match="text"):
        canonicalize(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="form"):
        canonicalize("x", form="NFX")
