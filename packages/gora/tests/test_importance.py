"""Importance scores against independent numpy computations (GoRA, Sec. 3.1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_gora import importance


def test_union_mean_hand_value():
    """mean |W * G| of [[1, -2]] and [[3, 1]] = (3 + 2)/2 = 2.5."""
    assert importance(torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])) == 2.5


@pytest.mark.parametrize(
    ("kind", "reference"),
    [
        ("union_mean", lambda w, g: np.abs(w * g).mean()),
        ("union_frobenius", lambda w, g: np.linalg.norm(w * g)),
        ("union_nuclear", lambda w, g: np.linalg.norm(w * g, ord="nuc")),
        ("grad_mean", lambda w, g: np.abs(g).mean()),
        ("grad_frobenius", lambda w, g: np.linalg.norm(g)),
        ("grad_nuclear", lambda w, g: np.linalg.norm(g, ord="nuc")),
    ],
)
def test_kinds_agree_with_numpy(kind, reference):
    rng = np.random.default_rng(0)
    w, g = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    got = importance(torch.from_numpy(w).float(), torch.from_numpy(g).float(), kind=kind)
    assert got == pytest.approx(reference(w.astype(np.float32), g.astype(np.float32)), rel=1e-6)


def test_importance_rejects_bad_input():
    w = torch.ones(3, 4)
    with pytest.raises(ValueError, match="grad"):
        importance(w, torch.ones(4, 3))
    with pytest.raises(ValueError, match="grad"):
        importance(w, torch.full((3, 4), float("inf")))
    with pytest.raises(ValueError, match="kind"):
        importance(w, w, kind="bogus")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="weight"):
        importance(w.long(), w)
