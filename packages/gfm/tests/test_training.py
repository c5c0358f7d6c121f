"""Label feeding, splits, training and zero-shot inference."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_gfm import (
    TSGNN,
    FitConfig,
    accuracy,
    fit,
    from_networkx,
    from_tabular_knn,
    predict,
    preprocess_features,
    sample_fed_labels,
    select_split,
    stratified_split,
    zero_shot_accuracy,
)

from nips25_shared import seed_everything


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1000), ratio=st.floats(0.05, 0.95))
def test_sampler_feeds_exactly_k_training_nodes_per_class(seed, ratio) -> None:
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), 20)
    train = np.zeros(60, dtype=bool)
    train[rng.permutation(60)[:30]] = True
    train[[0, 20, 40]] = True  # every class labelled somewhere
    train[np.arange(60) >= 55] = True  # training nodes not at ids 0..|train|-1 (the official bug's case)
    fed, loss = sample_fed_labels(y, train, lp_ratio=ratio, rng=rng)
    k = max(1, int(train.sum() * ratio / 3))
    assert not (fed & ~train).any() and not (loss & ~train).any()
    assert not (fed & loss).any() and np.array_equal(fed | loss, train)
    for c in range(3):
        assert fed[y == c].sum() == min(k, (train & (y == c)).sum())


def test_multi_split_uses_every_split() -> None:
    masks = np.zeros((10, 3), dtype=bool)
    for j in range(3):
        masks[j, j] = True
    picked = {int(np.flatnonzero(select_split(masks, seed))[0]) for seed in range(6)}
    assert picked == {0, 1, 2}
    with pytest.raises(ValueError, match="mask"):
        select_split(np.zeros((10, 0), dtype=bool), 0)


def test_stratified_split_on_karate() -> None:
    task = from_networkx(nx.karate_club_graph(), label="club", name="karate")
    assert task.num_nodes == 34 and task.num_classes == 2
    assert not (task.train_mask & task.test_mask).any()
    assert np.all(task.train_mask | task.val_mask | task.test_mask)
    for c in range(2):
        assert 1 <= task.train_mask[task.y == c].sum() <= 20
    np.testing.assert_allclose(np.linalg.norm(task.x, axis=1), 1.0)
    with pytest.raises(ValueError, match="per_class"):
        stratified_split(task.y, per_class=0)
    with pytest.raises(ValueError, match="label"):
        from_networkx(nx.path_graph(3), label="club")


def test_fit_learns_and_is_deterministic(task) -> None:
    cfg = FitConfig(epochs=15, lr=3e-2)
    seed_everything(3)
    m1 = TSGNN(hidden=4)
    h1 = fit(m1, [task], config=cfg, seed=3)
    seed_everything(3)
    m2 = TSGNN(hidden=4)
    h2 = fit(m2, [task], config=cfg, seed=3, use_accelerate=False)
    assert h1 == h2
    assert np.mean(h1[-5:]) < np.mean(h1[:5])
    acc = zero_shot_accuracy(m1, task)
    assert 0.0 <= acc <= 1.0
    assert acc == accuracy(predict(m2, task), task.y, task.test_mask)


def test_bad_training_input(task) -> None:
    with pytest.raises(ValueError, match="lp_ratio"):
        FitConfig(lp_ratio=1.0)
    with pytest.raises(ValueError, match="epochs"):
        FitConfig(epochs=0)
    with pytest.raises(ValueError, match="tasks"):
        fit(TSGNN(), [])
    with pytest.raises(TypeError, match="model"):
        fit(object(), [task])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="task"):
        predict(TSGNN(), "cora")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labelled"):
        predict(TSGNN(), task, labelled=np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="k"):
        from_tabular_knn(np.ones((5, 2)), [0, 1, 0, 1, 0], k=5)
    with pytest.raises(ValueError, match="x"):
        from_tabular_knn(np.full((5, 2), np.inf), [0, 1, 0, 1, 0], k=2)
    with pytest.raises(ValueError, match="y"):
        sample_fed_labels(np.zeros(4, dtype=int), np.ones(4, dtype=bool), lp_ratio=0.5, rng=np.random.default_rng())
    with pytest.raises(ValueError, match="max_features"):
        preprocess_features(np.ones((3, 3)), max_features=0)
