"""Known answers for the closed-form conversion maps."""

from __future__ import annotations

import numpy as np
import pytest
from nips25_gfm import DATASETS, ridge_lstsq, ridge_lstsq_cv, xy_conversions
from nips25_gfm.least_squares import DEFAULT_LAMBDAS
from sklearn.model_selection import KFold


def test_ridge_equals_normal_equations() -> None:
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(30, 4)), rng.normal(size=(30, 3))
    lam = 0.3
    w, b = ridge_lstsq(u, v, lam)
    ut = np.hstack([u, np.ones((30, 1))])
    ref = np.linalg.solve(ut.T @ ut + lam**2 * np.eye(5), ut.T @ v)
    np.testing.assert_allclose(np.vstack([w, b]), ref, atol=1e-10)


def test_ridge_at_zero_penalty_equals_pinv() -> None:
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    w, b = ridge_lstsq(u, v, 1e-15)
    ut = np.hstack([u, np.ones((20, 1))])
    np.testing.assert_allclose(np.vstack([w, b]), np.linalg.pinv(ut) @ v, atol=1e-8)


def test_cv_choice_equals_brute_force() -> None:
    rng = np.random.default_rng(2)
    u = rng.normal(size=(25, 6))
    v = u @ rng.normal(size=(6, 2)) + 0.5 * rng.normal(size=(25, 2))
    lambdas = (1e-6, 1e-2, 1.0, 10.0)
    _, _, chosen = ridge_lstsq_cv(u, v, lambdas=lambdas, k_folds=5, seed=42)
    folds = list(KFold(5, shuffle=True, random_state=42).split(u))
    errs = []
    for lam in lambdas:
        e = []
        for tr, te in folds:
            ut = np.hstack([u[tr], np.ones((len(tr), 1))])
            sol = np.linalg.solve(ut.T @ ut + lam**2 * np.eye(7), ut.T @ v[tr])
            e.append(np.mean((np.hstack([u[te], np.ones((len(te), 1))]) @ sol - v[te]) ** 2))
        errs.append(np.mean(e))
    assert chosen == lambdas[int(np.argmin(errs))]


def test_maps_transform_under_permutations(task) -> None:
    rng = np.random.default_rng(3)
    pf, pc = rng.permutation(task.num_features), rng.permutation(task.num_classes)
    y = task.labels_onehot()
    conv = xy_conversions(task.adjacency, task.x, y, task.train_mask, n_hops=1)
    perm = xy_conversions(task.adjacency, task.x[:, pf], y[:, pc], task.train_mask, n_hops=1)
    np.testing.assert_allclose(perm.ls2y[1].weight, conv.ls2y[1].weight[pf][:, pc], atol=1e-8)
    np.testing.assert_allclose(perm.het2x[0].weight, conv.het2x[0].weight[pc][:, pf], atol=1e-8)
    np.testing.assert_allclose(perm.pool2y.bias, conv.pool2y.bias[pc], atol=1e-10)
    assert len(conv.to_y) == len(conv.to_x) == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"u": np.ones((3, 2)), "v": np.ones((4, 1))}, "v"),
        ({"u": np.full((3, 2), np.nan), "v": np.ones((3, 1))}, "u"),
        ({"u": np.ones((0, 2)), "v": np.ones((0, 1))}, "u"),
        ({"u": np.ones((3, 2)), "v": np.ones((3, 1)), "lambdas": ()}, "lambdas"),
        ({"u": np.ones((3, 2)), "v": np.ones((3, 1)), "lambdas": (-1.0,)}, "lambdas"),
        ({"u": np.ones((3, 2)), "v": np.ones((3, 1)), "k_folds": 1}, "k_folds"),
    ],
)
def test_ridge_cv_rejects_bad_input(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        ridge_lstsq_cv(**kwargs)


def test_conversions_reject_bad_input(task) -> None:
    y = task.labels_onehot()
    with pytest.raises(ValueError, match="train_mask"):
        xy_conversions(task.adjacency, task.x, y, np.zeros(task.num_nodes, dtype=bool))
    with pytest.raises(ValueError, match="n_hops"):
        xy_conversions(task.adjacency, task.x, y, task.train_mask, n_hops=-2)
    with pytest.raises(ValueError, match="y_onehot"):
        xy_conversions(task.adjacency, task.x, y[:-1], task.train_mask)
    with pytest.raises(ValueError, match="lam"):
        ridge_lstsq(task.x, y, -1.0)
    assert len(DEFAULT_LAMBDAS) == 5 and "karate" in DATASETS
