"""Shared fixtures: a small random graph task in float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from nips25_gfm import GraphTask, stratified_split


def make_task(n: int = 40, f: int = 5, c: int = 3, seed: int = 0) -> GraphTask:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    rng.shuffle(y)
    x = rng.normal(size=(n, f)) + 0.5 * np.eye(c, f)[y] if f >= c else rng.normal(size=(n, f))
    a = sp.random(n, n, density=0.15, random_state=seed, data_rvs=np.ones)
    tr, va, te = stratified_split(y, per_class=4, seed=seed)
    return GraphTask(name="random", adjacency=a, x=x, y=y, train_mask=tr, val_mask=va, test_mask=te)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "distributed: runs a script under accelerate launch on 2 CPU processes")


@pytest.fixture
def task() -> GraphTask:
    return make_task()


@pytest.fixture
def task_factory():
    return make_task
