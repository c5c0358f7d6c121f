"""The RouterBench-schema loader on small tables written here (pickle and CSV)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from nips25_routing import load_routerbench


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample_id": ["a", "b", "c"],
            "prompt": ["2+2?", "capital of France?", "write a haiku"],
            "gpt-4": [1.0, 1.0, 0.8],
            "gpt-4|total_cost": [3e-3, 2e-3, 4e-3],
            "gpt-4|model_response": ["4", "Paris", "..."],
            "mistral-7b": [1.0, 0.0, 0.3],
            "mistral-7b|total_cost": [2e-5, 1e-5, 3e-5],
            "oracle_model_to_route_to": ["mistral-7b", "gpt-4", "gpt-4"],
        }
    )


@pytest.mark.parametrize("suffix", [".pkl", ".csv"])
def test_load_routerbench_reads_models_quality_and_cost(tmp_path, suffix):
    """Models are the columns with a '|total_cost' twin, in column order; values round-trip exactly."""
    path = tmp_path / f"routerbench{suffix}"
    frame = _frame()
    frame.to_pickle(path) if suffix == ".pkl" else frame.to_csv(path, index=False)
    table = load_routerbench(path)
    assert table.models == ["gpt-4", "mistral-7b"]
    np.testing.assert_allclose(table.quality, [[1.0, 1.0], [1.0, 0.0], [0.8, 0.3]])
    np.testing.assert_allclose(table.cost[:, 1], [2e-5, 1e-5, 3e-5])
    hist = table.to_history(np.eye(3)[[0, 2]], rows=[0, 2])
    assert hist.size == 2 and hist.models == ["gpt-4", "mistral-7b"]
    np.testing.assert_allclose(hist.quality, [[1.0, 1.0], [0.8, 0.3]])
