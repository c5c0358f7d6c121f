"""After TSLayer's convolutions stopped re-checking their inputs, NaN/inf still stop at the public entry points."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from nips25_gfm import TSGNN, load_dataset, predict, prepare, zero_shot_accuracy


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_dataset("karate"))


@pytest.mark.parametrize("field", ["x", "onehot"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_prepared_graph_with_non_finite_values_is_rejected(prepared, field, bad) -> None:
    torch.manual_seed(0)
    model = TSGNN()
    values = getattr(prepared, field).clone().contiguous()
    values.view(-1)[3] = bad
    broken = dataclasses.replace(prepared, **{field: values})
    for entry in (predict, zero_shot_accuracy):
        with pytest.raises(ValueError, match="NaN or inf"):
            entry(model, broken)
    assert torch.isfinite(predict(model, prepared)).all()
